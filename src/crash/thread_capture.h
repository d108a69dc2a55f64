// ThreadCapture: the registers of every other thread of the process at a crash, for the
// snapshot (docs/snapshot-format.md, "Other threads"). The crashing thread lists the threads
// (/proc/self/task), sends each a real-time signal of the handler's own with tgkill, and waits,
// bounded, for each handler to store its interrupted registers in its slot; the threads then
// wait in their handlers (so their stacks hold still while the snapshot copies them) until
// ReleaseThreads(). A thread that blocks the signal or never runs in time is given up on, and
// its handler, if it runs later, returns at once. Static storage: no allocation, no locks.
#ifndef STACKWALK_SRC_CRASH_THREAD_CAPTURE_H_
#define STACKWALK_SRC_CRASH_THREAD_CAPTURE_H_

#include <atomic>
#include <cstdint>

#include "core/context.h"
#include "core/snapshot_format.h"

namespace stackwalk::internal {

// The threads one snapshot captures; the rest are listed as not captured (the slots are static).
inline constexpr int kMaxSnapshotThreads = 256;

struct CapturedThread {
  int32_t tid = 0;
  std::atomic<uint32_t> phase{0};  // thread_capture.cc's phases, while a capture runs
  SnapshotThreadState state = kSnapshotThreadNoAnswer;  // once the capture ended
  int32_t detail = 0;     // as SnapshotThread::detail
  char proc_state = 0;    // as SnapshotThread::proc_state
  int32_t crash_signal = 0;  // it crashed of this while another thread reported (NoteCrashedThread)
  uint64_t valid_mask = 0;
  uint64_t values[NativeArch::kNumRegs] = {};  // DWARF numbering, as the snapshot's registers
};

struct ThreadCaptureResult {
  CapturedThread* threads = nullptr;  // the other threads listed, in /proc/self/task order
  int count = 0;
  bool listing_full = false;  // more threads than kMaxSnapshotThreads: the rest are not here
};

// CheckThreadCaptureSignal(): 0 if `sig` is free (its action SIG_DFL) or already ours, else
// -EBUSY (the program's), or -errno of sigaction. Signal safety: not async-signal-safe.
int CheckThreadCaptureSignal(int sig);

// InstallThreadCaptureHandler(): installs the handler for `sig` (a real-time signal); the
// previous action of that signal is kept and restored by UninstallThreadCaptureHandler(); a `sig`
// that arrives while no capture runs (late) is ignored. 0, -EBUSY (CheckThreadCaptureSignal), or
// -errno.
// Signal safety: not async-signal-safe.
int InstallThreadCaptureHandler(int sig);
void UninstallThreadCaptureHandler();

// CaptureOtherThreads(): every other thread's registers, each thread waited for at most
// `wait_ms` (all of them in parallel). Call ReleaseThreads() after using them, always.
// Signal safety: async-signal-safe; one capture at a time (the crash handler's one reporter).
ThreadCaptureResult CaptureOtherThreads(int wait_ms);
void ReleaseThreads();

// NoteCrashedThread(): a thread that crashed while another reports says so before it waits, so
// that the capture keeps its registers at the fault (`ucontext`) rather than in its wait; the
// note's index (or -1: no room, 16 at most), for ForgetCrashedThread() when the wait ends.
// Signal safety: async-signal-safe.
inline constexpr int kMaxCrashedThreadNotes = 16;
int NoteCrashedThread(int tid, int sig, void* ucontext);
void ForgetCrashedThread(int note);

// ForEachOtherThread(): calls fn with the tid of every thread of the process but the caller's,
// as /proc/self/task lists them. Signal safety: async-signal-safe; one caller at a time.
void ForEachOtherThread(void (*fn)(int tid, void* context), void* context);

// ReadThreadName(): /proc/self/task/TID/comm into `name` (NUL-padded), "" if unreadable.
// Signal safety: async-signal-safe.
void ReadThreadName(int tid, char (&name)[16]);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CRASH_THREAD_CAPTURE_H_
