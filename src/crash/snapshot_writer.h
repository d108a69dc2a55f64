// WriteCrashSnapshot(): the crash snapshot (core/snapshot_format.h, docs/snapshot-format.md) of
// the crashing thread, written from the signal handler: no allocation, no stdio, no locks.
#ifndef STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_
#define STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_

#include <signal.h>

#include <cstddef>
#include <cstdint>

namespace stackwalk::internal {

struct SnapshotWritten {
  int error = 0;        // 0, or the errno of the write that failed
  uint64_t bytes = 0;   // written to the file
  uint64_t stack_bytes = 0;  // of them, the stack's
  int modules = 0;
};

// Writes the snapshot of the thread interrupted in `ucontext` to `fd`: its registers, up to
// `stack_bytes` of its stack from SP (fewer where the stack's readable pages end), and the
// objects of the module map. Signal safety: async-signal-safe.
SnapshotWritten WriteCrashSnapshot(int fd, int sig, const siginfo_t* info, void* ucontext,
                                   size_t stack_bytes);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CRASH_SNAPSHOT_WRITER_H_
