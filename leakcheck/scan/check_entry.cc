#include "leakcheck/scan/check_entry.h"

#include <string.h>

#include "core/dl_find_object.h"
#include "stackwalk/cursor.h"

namespace stackwalk::leakcheck {
namespace {

// The outermost CheckEntry alive on this thread (initial-exec: reading it never allocates).
__attribute__((tls_model("initial-exec"))) thread_local const CheckEntry* t_entry = nullptr;

// How far above the entry object the program's SP may lie: an entry point's frame is small, a
// farther SP means the unwind skipped a frame.
constexpr uintptr_t kMaxEntryFrame = 64 * 1024;

// Whether the first step reached the checker's entry point (return address `pc`, its call at
// pc - 1, in the object holding this code): not so if the entry point was inlined into the
// program or the unwind skipped a frame, and the next step's SP could then lie above a live
// frame of the program, whose references would go unscanned. Where glibc cannot say, the
// distance bound alone.
bool InTheCheckersObject(uint64_t pc) {
  if (!internal::kHaveDlFindObject) return true;
  internal::GlibcObject here, there;
  return internal::FindObjectByGlibc(reinterpret_cast<uintptr_t>(&InTheCheckersObject), &here) &&
         internal::FindObjectByGlibc(pc - 1, &there) && here.map_start == there.map_start;
}

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
  if (cursor.ok() && cursor.Step() && InTheCheckersObject(cursor.pc()) && cursor.Step() &&
      cursor.sp() > limit_ && cursor.sp() - limit_ <= kMaxEntryFrame) {
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
