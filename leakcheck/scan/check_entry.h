// CheckEntry: where the program's part of the checking thread's stack ends. A check run while one
// is alive on its thread reads that thread's stack from the program's frame that called the entry
// point up, and the program's registers as they were at that call; not the checker's frames in
// between (the entry point's own included, and its callers in a checker library, known by file
// name: the in-process library's CheckLeaks over the preloaded C API, the preloaded _exit over
// the exit report), laid over the program's dead frames: their unwritten slots hold the
// program's stale words, and stale copies of block addresses from earlier checks (a leak would
// pass for reachable). Declare one first thing at every entry point of the checker that leads to
// RunCheck: the public API's functions, the exit report, the checker's own threads' mains.
// Without one, RunCheck's own frame is the limit. Not copyable; nests (the outermost counts).
#ifndef STACKWALK_LEAKCHECK_SCAN_CHECK_ENTRY_H_
#define STACKWALK_LEAKCHECK_SCAN_CHECK_ENTRY_H_

#include <ucontext.h>

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

// DWARF register numbers up to it cover every target's (x86_64 17, aarch64 33, arm 16).
constexpr size_t kCallerRegisterWords = 40;

class CheckEntry {
 public:
  CheckEntry();
  ~CheckEntry();
  CheckEntry(const CheckEntry&) = delete;
  CheckEntry& operator=(const CheckEntry&) = delete;

  // The registers at the entry point (those of the program's it has not changed yet).
  const ucontext_t& context() const { return context_; }
  // The program's registers at its call of the entry point, unwound (0 where unknown): what the
  // entry point saved of the program's lies in its frame, below stack_limit().
  const uintptr_t* program_registers() const { return program_registers_; }
  // The program's SP at its call of the entry point; this object's address if it could not be
  // unwound to.
  uintptr_t stack_limit() const { return limit_; }

  // The outermost entry alive on this thread, or nullptr. Async-signal-safe.
  static const CheckEntry* Outermost();

 private:
  ucontext_t context_;
  uintptr_t program_registers_[kCallerRegisterWords];
  uintptr_t limit_;
  bool outermost_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_CHECK_ENTRY_H_
