// Helpers shared by scan/stop_world*.cc: raw-syscall task listing, clock and text, usable in the
// tracer task and while threads are stopped (no libc, no malloc).
#ifndef STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_INTERNAL_H_
#define STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_INTERNAL_H_

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck::stop_internal {

uint64_t MonotonicNs();
void SleepNs(long ns);

// Calls visit(tid, context) for each task of /proc/<pid>/task (pid 0: /proc/self/task). False if
// the directory could not be read (then nothing or part of it was visited).
bool ForEachTask(int pid, void (*visit)(int tid, void* context), void* context);

// Appends text to buf (size bytes, NUL-terminated, truncating); returns buf.
char* Append(char* buf, size_t size, const char* text);
char* AppendInt(char* buf, size_t size, long value);
// "EPERM", "ESRCH", ... for a positive errno; "errno N" text otherwise (static or buf).
const char* ErrnoName(int err);

// Blocks every signal but the synchronous fatal ones in the calling thread; old mask to *old.
void BlockAsyncSignals(uint64_t old[2]);
void RestoreSignals(const uint64_t old[2]);

inline bool Contains(const int32_t* tids, size_t count, int tid) {
  for (size_t i = 0; i < count; ++i) {
    if (tids[i] == tid) return true;
  }
  return false;
}

}  // namespace stackwalk::leakcheck::stop_internal

#endif  // STACKWALK_LEAKCHECK_SCAN_STOP_WORLD_INTERNAL_H_
