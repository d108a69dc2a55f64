// crash_handler.h — write a backtrace that can be symbolized later when the process crashes.
//
// Example, early in main():
//
//   stackwalk::CrashHandlerOptions options;
//   options.path = "/var/log/myapp-crash.txt";  // or options.fd (default: stderr)
//   if (int err = stackwalk::InstallCrashHandler(options); err != 0) { /* -err is an errno */ }
//
// From C, crash_handler_c.h: stackwalk_install_crash_handler(fd).
//
// On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT or SIGTRAP the handler writes a report (lines
// starting "***" say what the others are). It runs on the thread's alternate signal stack when
// the thread has one (the installing thread gets one; others through PrepareThreadForCrashes()),
// so a stack overflow is reported only on such a thread:
//
//   *** stackwalk: SIGSEGV (Segmentation fault), code 1 (SEGV_MAPERR), fault address 0x0
//   *** pid 4242, thread 4242 (demo)
//   *** frames: #N, pc (the interrupted PC) or ra (a return address), the address, the function
//   ***   from the symbol tables + offset, (MODULE+OFFSET) (the object's path and link-time address).
//   ***   For ra, both offsets are of the call (ra - 1). No file:line here; they come from:
//   ***   grep -oE '[^ (]+\+0x[0-9a-f]+\)$' REPORT | tr -d ')' | xargs stackwalk-symbolize --inlines
//   #0 pc 0x000055d0c0a01480 in geo::ReadCell()+0x10 (/usr/bin/demo+0x1480)
//   #1 ra 0x000055d0c0a01573 in main+0x22 (/usr/bin/demo+0x1572)
//   #2 ra 0x00007f1e8a229d90 in __libc_start_call_main+0x7f (/usr/lib/x86_64-linux-gnu/libc.so.6+0x29d8f)
//   ...
//   *** modules: path, build-id (hex; "none" if it has none, "?" if unreadable), load bias
//   *** module /usr/bin/demo build-id 5f0c6a0c3e1d2b9f... bias 0x55d0c0a00000
//   *** module /usr/lib/x86_64-linux-gnu/libc.so.6 build-id 8b1b... bias 0x7f1e8a200000
//   *** end of report
//
// Functions are named from the ELF symbol tables (and separate debug files found by build-id),
// demangled where abseil's demangler was built in; file:line and inline frames need DWARF, which
// the handler does not read (not signal-safe): the MODULE+OFFSET tokens are exactly what
// `stackwalk-symbolize MODULE+OFFSET...` takes, on this machine or on one with the same files
// (compare the build-ids). The frame lines have the layout of every frame line of the library
// (format.h's FormatFrame, with pc/ra and the function's offset added); a frame outside any
// known object ends in "(in no known object)". When the trace fills max_frames a line
// "*** (more frames not shown)" follows it; if unwinding fails, "*** unwinding failed: <reason>"
// replaces the frames. Paths
// containing spaces break the one-line command above (not the report).
//
// Then the handler hands the signal to the handler installed before it, or re-raises it with the
// default action, so exit status and core dumps stay as they were. A crash in several threads
// at once gets one report (the others wait up to 5 seconds for it, then are handed on the same
// way). A crash inside the handler itself writes no second report: a fault raising the signal
// being handled (blocked while the handler runs) kills the process with the default action;
// any other fatal signal is handed on as above.
#ifndef STACKWALK_CRASH_HANDLER_H_
#define STACKWALK_CRASH_HANDLER_H_

#include "stackwalk/capture.h"
#include "stackwalk/crash_handler_c.h"

namespace stackwalk {

struct CrashHandlerOptions {
  int fd = 2;                    // where the report goes (ignored when path is set)
  const char* path = nullptr;    // a file opened (append, create) at install time
  int max_frames = 64;           // 1 to kMaxCrashFrames
  Method method = Method::kAuto; // one stackwalk_method_available() says this build has
  bool alternate_stack = true;   // give the installing thread an alternate signal stack
  // A crash snapshot (docs/snapshot-format.md) written to this file (created or truncated at
  // the crash) after the report's frames, for `stackwalk-dump --snapshot FILE` to unwind and
  // name later, on another machine too: the registers, up to snapshot_stack_bytes of the stack
  // from SP, the loaded objects. The report says where it went, or why it did not ("***
  // snapshot ..."); a snapshot that fails takes nothing from the report.
  const char* snapshot_path = nullptr;  // copied at install time
  size_t snapshot_stack_bytes = STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES;  // up to 16 MiB
  // The snapshot's other threads: each is sent snapshot_thread_signal (a real-time signal this
  // installs a handler for; 0: SIGRTMIN + 6, which the leak checker's stop-the-world, at
  // SIGRTMIN + 5, does not use; negative: the snapshot holds the crashing thread alone), parks
  // in that handler with its registers saved while the snapshot copies up to
  // snapshot_thread_stack_bytes of its stack from SP, snapshot_threads_total_stack_bytes over
  // all threads; a thread that does not answer within snapshot_thread_wait_ms (it blocks the
  // signal, or sits in an uninterruptible wait) is listed as not captured, with the reason.
  int snapshot_thread_signal = 0;
  size_t snapshot_thread_stack_bytes = size_t{16} << 10;        // up to 16 MiB
  size_t snapshot_threads_total_stack_bytes = size_t{4} << 20;  // up to 32 MiB
  int snapshot_thread_wait_ms = 1000;                           // 1 to 60000
};

inline constexpr int kMaxCrashFrames = 256;
inline constexpr size_t kDefaultSnapshotStackBytes = STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES;
inline constexpr size_t kMaxSnapshotStackBytes = size_t{16} << 20;
inline constexpr size_t kMaxSnapshotPath = 4096;  // bytes, with the NUL
inline constexpr size_t kMaxSnapshotThreadsStackBytes = size_t{32} << 20;
inline constexpr int kMaxSnapshotThreadWaitMs = 60000;

// InstallCrashHandler()
//
// Checks the options, then installs the handlers. Returns 0, or a negative errno and installs
// nothing (a handler installed before keeps its options):
//   -EINVAL  max_frames outside 1..kMaxCrashFrames, or a method this build or architecture
//            lacks (stackwalk_method_available() == 0: kExidx off 32-bit ARM, a value that is
//            no Method), snapshot_stack_bytes or snapshot_thread_stack_bytes above
//            kMaxSnapshotStackBytes, snapshot_threads_total_stack_bytes above
//            kMaxSnapshotThreadsStackBytes, snapshot_thread_wait_ms outside
//            1..kMaxSnapshotThreadWaitMs, a snapshot_thread_signal that is not a real-time
//            signal (SIGRTMIN..SIGRTMAX), an empty snapshot_path;
//   -EBUSY   snapshot_path set and snapshot_thread_signal (or SIGRTMIN + 6) already has a
//            handler: it is the program's; choose another one, or a negative one;
//   -ENAMETOOLONG  snapshot_path of kMaxSnapshotPath bytes or more;
//   -EBADF   no path, and fd is negative, not open, or open read-only;
//   other    -errno of open(path), sigaltstack/mmap, or sigaction.
// Calling it again replaces the options.
//
// Signal safety: NOT async-signal-safe (installs handlers, maps the alternate stack).
int InstallCrashHandler(const CrashHandlerOptions& options = CrashHandlerOptions());

// PrepareThreadForCrashes()
//
// Gives the calling thread an alternate signal stack, so that a stack overflow in it can be
// reported too (the installing thread gets one from InstallCrashHandler). Returns 0 or -errno.
//
// Signal safety: NOT async-signal-safe.
int PrepareThreadForCrashes();

// UninstallCrashHandler()
//
// Restores the handlers that were installed before. Signal safety: NOT async-signal-safe.
void UninstallCrashHandler();

}  // namespace stackwalk

#endif  // STACKWALK_CRASH_HANDLER_H_
