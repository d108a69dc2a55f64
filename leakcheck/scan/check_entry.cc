#include "leakcheck/scan/check_entry.h"

#include <string.h>

#include "stackwalk/cursor.h"

namespace stackwalk::leakcheck {
namespace {

// The outermost CheckEntry alive on this thread (initial-exec: reading it never allocates).
__attribute__((tls_model("initial-exec"))) thread_local const CheckEntry* t_entry = nullptr;

}  // namespace

__attribute__((noinline)) CheckEntry::CheckEntry()
    : limit_(reinterpret_cast<uintptr_t>(this)), outermost_(t_entry == nullptr) {
  // Zeroed first: getcontext fills only part of a ucontext_t (8 of uc_sigmask's 128 bytes, for
  // one), and the rest, scanned as a root, would be whatever stale words the stack held there.
  memset(&context_, 0, sizeof context_);
  memset(program_registers_, 0, sizeof program_registers_);
  getcontext(&context_);
  if (!outermost_) return;
  // Two frames up (this constructor, the entry point): the program's. Its SP ends the checker's
  // part of the stack; the entry point's frame, alignment padding and all, lies below it.
  Cursor cursor = Cursor::Here();
  if (cursor.ok() && cursor.Step() && cursor.Step() && cursor.sp() > limit_) {
    for (size_t reg = 0; reg < kCallerRegisterWords; ++reg) {
      uint64_t value = 0;
      if (cursor.GetRegister(static_cast<int>(reg), &value)) {
        program_registers_[reg] = static_cast<uintptr_t>(value);
      }
    }
    limit_ = static_cast<uintptr_t>(cursor.sp());
  }
  t_entry = this;
}

CheckEntry::~CheckEntry() {
  if (outermost_) t_entry = nullptr;
}

const CheckEntry* CheckEntry::Outermost() { return t_entry; }

}  // namespace stackwalk::leakcheck
