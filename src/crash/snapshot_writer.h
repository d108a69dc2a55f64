// WriteCrashSnapshot(): the crash snapshot (core/snapshot_format.h, docs/snapshot-format.md) of
// the crashing thread and of the other threads captured, written from the signal handler: no
// allocation, no stdio, no locks.
#ifndef STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_
#define STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_

#include <signal.h>

#include <cstddef>
#include <cstdint>

#include "crash/thread_capture.h"

namespace stackwalk::internal {

// The other threads a snapshot holds, and the bounds on their stack bytes.
struct SnapshotOtherThreads {
  const ThreadCaptureResult* capture = nullptr;  // nullptr: the crashing thread alone
  size_t stack_bytes = 0;        // from each captured thread's SP at most
  size_t total_stack_bytes = 0;  // over all of them (threads past it get fewer, or none)
};

struct SnapshotWritten {
  int error = 0;        // 0, or the errno of the write that failed
  uint64_t bytes = 0;   // written to the file
  uint64_t stack_bytes = 0;  // of them, the stack's
  int modules = 0;
  int threads_listed = 0;    // other threads listed (captured or not)
  int threads_captured = 0;  // of them, with registers and stack
  uint64_t thread_stack_bytes = 0;  // their stacks' bytes
};

// Writes the snapshot of the thread interrupted in `ucontext` to `fd`: its registers, up to
// `stack_bytes` of its stack from SP (fewer where the stack's readable pages end), and the
// objects of the module map; then every other thread `others` holds: captured ones with their
// registers and stack, the rest with why not. Signal safety: async-signal-safe.
SnapshotWritten WriteCrashSnapshot(int fd, int sig, const siginfo_t* info, void* ucontext,
                                   size_t stack_bytes,
                                   const SnapshotOtherThreads& others = SnapshotOtherThreads());

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_
