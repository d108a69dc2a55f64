// The stacks of exited threads. glibc keeps an exited thread's stack mapped for the next thread
// (up to 40 MiB of them): its words are dead, but as part of an anonymous mapping they would be
// roots, and a stale address there keeps a leak reachable. Each thread the checker knows records
// its own stack as it exits (RecordExitingThreadStack, from the thread-exit hook); a check then
// leaves out the dead part of every recorded stack that is still cached (FindExitedThreadStacks),
// by address range, however the kernel merged its mapping with its neighbours, on every
// architecture. A stack reused by a new thread is live again (that thread's SP or thread pointer
// is in it); one glibc unmapped no longer holds the words recorded at its thread pointer.
// Memory: a fixed table of kMaxExitedStacks entries; no malloc at check time.
#ifndef STACKWALK_LEAKCHECK_SCAN_EXITED_STACKS_H_
#define STACKWALK_LEAKCHECK_SCAN_EXITED_STACKS_H_

#include <cstddef>
#include <cstdint>

#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/memory_reader.h"
#include "leakcheck/scan/stop_world.h"
#include "src/core/address_range.h"

namespace stackwalk::leakcheck {

// The table's size: the most recent exits are kept (an older stack, when the table is full,
// counts as live again: a root, as any anonymous mapping).
constexpr size_t kMaxExitedStacks = 256;

// Records the calling thread's stack, which is about to be left for good (a pthread key's
// destructor at thread exit). Nothing for the main thread (its stack is never reused) nor a
// thread whose stack glibc cannot tell (pthread_getattr_np fails). Not async-signal-safe
// (pthread_getattr_np allocates); never call it while the thread holds its own pthread lock.
void RecordExitingThreadStack();

// With the world stopped: writes to `out` (at most `capacity`) the dead part of each recorded
// stack that is still cached, and returns how many. The dead part is the stack and what lies
// below the thread's descriptor: [stack bottom, thread pointer) where the TCB is at the thread
// pointer (x86_64, whose static TLS is below it), [stack bottom, struct pthread) where the DTV
// is (aarch64, arm). The descriptor stays a root: it still points to the thread's DTV, which
// glibc keeps for the stack's next thread. `threads`: every other thread (StoppedWorld);
// `caller_sp`: the checking thread's stack pointer. A thread that cannot be placed (no SP and
// no thread pointer) may run on any of them: then none is left out.
size_t FindExitedThreadStacks(const StoppedThread* threads, size_t thread_count,
                              uintptr_t caller_sp, const MapsSnapshot& maps, MemoryReader& reader,
                              internal::AddressRange* out, size_t capacity);

// In a fork child: a thread of the parent's may have been writing an entry; it is gone, so the
// writers' lock is released (that entry stays unfinished, never read). Async-signal-safe.
void ExitedStacksAfterForkChild();

// Forgets every recorded stack (tests).
void ForgetExitedThreadStacksForTesting();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_EXITED_STACKS_H_
