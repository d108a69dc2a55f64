#include "leakcheck/scan/check_entry.h"

#include <string.h>

#include <initializer_list>

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

// The checker's libraries, by file name: the preloaded one and the in-process one. Preloaded,
// the in-process library's C++ API (CheckLeaks, Report) calls the preloaded library's C entry
// points, and the preloaded _exit calls the exit report: a caller of the entry point in either
// library is the checker's too, its frame laid over the program's dead ones like the entry
// point's. By name: the two are different objects, each with its own CheckEntry of its own
// build, and only the name says what the other is.
bool InACheckerLibrary(uint64_t pc) {
  internal::GlibcObject object;
  if (!internal::FindObjectByGlibc(pc - 1, &object) || object.path == nullptr) return false;
  const char* slash = strrchr(object.path, '/');
  const char* name = slash != nullptr ? slash + 1 : object.path;
  for (const char* library : {"libstackwalk_leakcheck.so", "libstackwalk_leakcheck_inprocess.so"}) {
    const size_t length = strlen(library);
    // A version suffix (".so.1") is the same library.
    if (strncmp(name, library, length) == 0 && (name[length] == '\0' || name[length] == '.')) {
      return true;
    }
  }
  return false;
}

// The most callers in the checker's libraries stepped over (the C++ API's wrapper, _exit's two).
constexpr int kMaxCheckerCallers = 4;

}  // namespace

__attribute__((noinline)) CheckEntry::CheckEntry()
    : limit_(reinterpret_cast<uintptr_t>(this)), outermost_(t_entry == nullptr) {
  // Zeroed first: getcontext fills only part of a ucontext_t (8 of uc_sigmask's 128 bytes, for
  // one), and the rest, scanned as a root, would be whatever stale words the stack held there.
  memset(&context_, 0, sizeof context_);
  memset(program_registers_, 0, sizeof program_registers_);
  getcontext(&context_);
  if (!outermost_) return;
  // Two frames up (this constructor, the entry point): the program's, unless the entry point's
  // caller is in a checker library too, and then the first caller above that is not. Its SP ends
  // the checker's part of the stack; the entry point's frame (and its callers' in the checker),
  // alignment padding and all, lies below it.
  Cursor cursor = Cursor::Here();
  if (cursor.ok() && cursor.Step() && InTheCheckersObject(cursor.pc()) && cursor.Step() &&
      cursor.sp() > limit_ && cursor.sp() - limit_ <= kMaxEntryFrame) {
    for (int i = 0; i < kMaxCheckerCallers && InACheckerLibrary(cursor.pc()); ++i) {
      Cursor caller = cursor;  // a step that fails leaves the limit where it was: more is read
      if (!caller.Step() || caller.sp() <= cursor.sp() || caller.sp() - limit_ > kMaxEntryFrame) {
        break;
      }
      cursor = caller;
    }
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
