// crash_handler.h — print a symbolized backtrace when the process crashes.
//
// Example, early in main():
//
//   stackwalk::CrashHandlerOptions options;
//   options.path = "/var/log/myapp-crash.txt";  // or options.fd (default: stderr)
//   stackwalk::InstallCrashHandler(options);
//
// On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT or SIGTRAP the handler, on an alternate stack,
// writes the signal, its code and fault address, the thread id and name, and the frames
// unwound from the signal's ucontext_t, named from the symbol tables:
//
//   *** stackwalk: SIGSEGV (Segmentation fault), code 1 (SEGV_MAPERR), fault address 0x10
//   *** pid 4242, thread 4242 (demo)
//   #0 0x000055d0c0a01480 in geo::ReadCell()+0x10 (/usr/bin/demo+0x1480)
//   ...
//
// Then it hands the signal to the handler installed before it, or re-raises it with the
// default action, so exit status and core dumps stay as they were. A crash in several threads
// at once gets one report; a crash inside the handler itself goes straight to the default
// action.
#ifndef STACKWALK_CRASH_HANDLER_H_
#define STACKWALK_CRASH_HANDLER_H_

#include "stackwalk/capture.h"

namespace stackwalk {

struct CrashHandlerOptions {
  int fd = 2;                    // where the report goes (ignored when path is set)
  const char* path = nullptr;    // a file opened (append, create) at install time
  int max_frames = 64;           // at most 256
  Method method = Method::kAuto;
  bool alternate_stack = true;   // give the installing thread an alternate signal stack
};

// InstallCrashHandler()
//
// Installs the handlers. Returns 0, or -errno if the file could not be opened or a handler
// could not be installed. Calling it again replaces the options.
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

extern "C" {
// C entry point: InstallCrashHandler with the report written to `fd`. Returns 0 or -errno.
int stackwalk_install_crash_handler(int fd);
}

#endif  // STACKWALK_CRASH_HANDLER_H_
