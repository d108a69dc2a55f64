// Recording: what every hook does around the real allocator call. An allocation is recorded
// with its stack (hash-consed) and its thread; a free forgets it. A per-thread guard keeps the
// checker's own allocations, and allocations nested inside a hooked call, out of the records.
#ifndef STACKWALK_LEAKCHECK_RECORDING_H_
#define STACKWALK_LEAKCHECK_RECORDING_H_

#include <cstddef>
#include <cstdint>

#include "api/call_site_capture.h"
#include "leakcheck/recorded_filter.h"
#include "leakcheck/sampler.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

// Whether the calling thread is inside the checker (ReentryGuard); static TLS, never allocates.
extern __thread bool t_inside_checker __attribute__((tls_model("initial-exec")));

// Marks the calling thread as inside the checker for its lifetime; nests. Inside, every
// allocation takes the full hook (which records none): the fast path's licence (sampler.h) is
// put away for the guard's life and given back after. Inline: operator new and delete take one
// on their fast path too.
class ReentryGuard {
 public:
  // Inside first, then the licence away: a signal handler allocating in between must not find
  // this thread outside the checker and license it again for the guard's life.
  ReentryGuard() : was_inside_(t_inside_checker) {
    t_inside_checker = true;
    licence_ = RevokeUnsampled();
  }
  ~ReentryGuard() {
    t_inside_checker = was_inside_;
    RestoreUnsampled(licence_);
  }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

 private:
  bool was_inside_;
  uint64_t licence_;  // the fast path's (sampler.h), given back at the end
};

// The state, with options read from STACKWALK_LEAKCHECK on first use unless already set.
State& ConfiguredState();

// Records `p` (null is ignored) as `size` bytes allocated by the stack of `site`: the program's
// call of the hook, STACKWALK_CALL_SITE() in the function that serves it (where that is not
// available, the stack from Record's own frame; a report drops the checker's frames either way).
void Record(void* p, size_t size, const ::stackwalk::internal::CallSite& site);
// Forgets `p`; blocks never recorded pass unnoticed.
void Unrecord(void* p);
// The whole hook of a free of a block never recorded, inlined into the exported functions: true
// if `p` certainly has no record (the filter, recorded_filter.h), on a thread the fast path
// is licensed on (sampler.h: else the full hook must see the free, e.g. to count it while the
// world is stopped); false if Unrecord must look. Async-signal-safe.
inline bool SkipUnrecordedFree(const void* p) {
  return LicensedUnsampled() && !g_recorded_blocks.MayHold(reinterpret_cast<uintptr_t>(p));
}
// Takes `p`'s record out (for realloc); false if it was not tracked.
bool TakeRecord(void* p, Allocation* removed);
// Puts back a record taken by TakeRecord (a failed realloc keeps its block).
void RestoreRecord(const Allocation& a);

// The calling thread's serial in the thread registry (registering it on first use).
uint32_t ThreadSerial();
// The calling thread's serial if it has one (0 if it never allocated), without registering it.
uint32_t KnownThreadSerial();
// Between fork()'s prepare and after handlers the forking thread holds every table lock: its
// allocations then (other libraries' fork handlers) go unrecorded instead of spinning on them.
void SetForking(bool forking);
// While a leak check has the world stopped, its thread holds every table lock and must not call
// the allocator (a stopped thread may hold its lock): a hook that runs on it then is counted and
// records nothing. The count is what tests assert stays 0.
void SetWorldStopped(bool stopped);
uint64_t HooksWhileWorldStopped();
// After fork(), in the child: its one thread is a new thread.
void ForgetThreadAfterFork();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_RECORDING_H_
