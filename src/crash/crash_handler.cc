#include "stackwalk/crash_handler.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "crash/report_writer.h"
#include "stackwalk/stackwalk.h"
#include "symbolize/safe_symbolizer.h"

namespace stackwalk {
namespace {

using internal::ReportWriter;

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
constexpr int kMaxFrames = 256;
constexpr size_t kAltStackSize = 128 * 1024;

struct State {
  int fd = 2;
  int owned_fd = -1;
  int max_frames = 64;
  int method = STACKWALK_AUTO;
  bool installed = false;
  struct sigaction previous[65];
};
State g_state;
std::atomic<long> g_reporting_tid{0};

long ThreadId() { return syscall(SYS_gettid); }

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (Segmentation fault)";
    case SIGBUS: return "SIGBUS (Bus error)";
    case SIGILL: return "SIGILL (Illegal instruction)";
    case SIGFPE: return "SIGFPE (Floating-point exception)";
    case SIGABRT: return "SIGABRT (Aborted)";
    case SIGTRAP: return "SIGTRAP (Trace/breakpoint trap)";
    default: return "signal";
  }
}

const char* CodeName(int sig, int code) {
  if (code == SI_USER) return "SI_USER";
  if (code == SI_TKILL) return "SI_TKILL";
  if (code == SI_QUEUE) return "SI_QUEUE";
  switch (sig) {
    case SIGSEGV:
      return code == SEGV_MAPERR ? "SEGV_MAPERR" : code == SEGV_ACCERR ? "SEGV_ACCERR" : "";
    case SIGBUS:
      return code == BUS_ADRALN ? "BUS_ADRALN" : code == BUS_ADRERR ? "BUS_ADRERR" :
             code == BUS_OBJERR ? "BUS_OBJERR" : "";
    case SIGILL:
      return code == ILL_ILLOPC ? "ILL_ILLOPC" : code == ILL_ILLOPN ? "ILL_ILLOPN" :
             code == ILL_PRVOPC ? "ILL_PRVOPC" : "";
    case SIGFPE:
      return code == FPE_INTDIV ? "FPE_INTDIV" : code == FPE_INTOVF ? "FPE_INTOVF" :
             code == FPE_FLTDIV ? "FPE_FLTDIV" : "";
    case SIGTRAP:
      return code == TRAP_BRKPT ? "TRAP_BRKPT" : code == TRAP_TRACE ? "TRAP_TRACE" : "";
    default:
      return "";
  }
}

void WriteReport(int sig, siginfo_t* info, void* ucontext) {
  ReportWriter w(g_state.fd);
  w.Text("*** stackwalk: ").Text(SignalName(sig)).Text(", code ").Dec(info->si_code);
  const char* code = CodeName(sig, info->si_code);
  if (code[0] != '\0') w.Text(" (").Text(code).Text(")");
  if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
    w.Text(", fault address ").Hex(reinterpret_cast<uintptr_t>(info->si_addr));
  }
  w.Text("\n*** pid ").Dec(getpid()).Text(", thread ").Dec(ThreadId());
  char name[17] = {};
  if (prctl(PR_GET_NAME, name) == 0 && name[0] != '\0') w.Text(" (").Text(name).Text(")");
  w.Text("\n").Flush();

  void* pcs[kMaxFrames];
  int n = stackwalk_backtrace_from_context(ucontext, pcs, g_state.max_frames,
                                           static_cast<stackwalk_method>(g_state.method));
  if (n < 0) {
    w.Text("*** unwinding failed: ").Text(stackwalk_strerror(n)).Text("\n").Flush();
    return;
  }
  internal::SafeSymbolizer& symbolizer = internal::SafeSymbolizer::Global();
  for (int i = 0; i < n; ++i) {
    uint64_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
    internal::SafeFrame frame;
    symbolizer.Describe(pc, i != 0, &frame);
    w.Text("#").Dec(i).Text(" ").HexPadded(pc);
    if (frame.function[0] != '\0') {
      w.Text(" in ").Text(frame.function).Text("+").Hex(frame.function_offset);
    }
    if (frame.has_module) {
      const char* base = std::strrchr(frame.module, '/');
      w.Text(" (").Text(base != nullptr ? base + 1 : frame.module).Text("+").Hex(frame.module_offset)
          .Text(")");
    }
    w.Text("\n").Flush();
  }
  if (n == g_state.max_frames) w.Text("*** (more frames not shown)\n").Flush();
}

// Hands the signal on: to the handler installed before us, or to the default action.
void Chain(int sig, siginfo_t* info, void* ucontext) {
  const struct sigaction& previous = g_state.previous[sig];
  sigaction(sig, &previous, nullptr);
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(sig, info, ucontext);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  // Default action: the signal is blocked while this handler runs, so it is delivered, and
  // kills the process as the original would have, the moment the handler returns (a fault
  // that the kernel raised would also recur when the instruction is retried).
  signal(sig, SIG_DFL);
  syscall(SYS_tgkill, getpid(), ThreadId(), sig);
}

void OnFatalSignal(int sig, siginfo_t* info, void* ucontext) {
  int saved_errno = errno;
  const long self = ThreadId();
  long expected = 0;
  if (g_reporting_tid.load() == self) {
    // A crash inside the report itself: no second report.
  } else if (g_reporting_tid.compare_exchange_strong(expected, self)) {
    WriteReport(sig, info, ucontext);
  } else {
    // Another thread is reporting and will end the process; give it up to 5 seconds.
    timespec pause{0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && g_reporting_tid.load() != 0; ++i) nanosleep(&pause, nullptr);
  }
  Chain(sig, info, ucontext);
  errno = saved_errno;
}

}  // namespace

int PrepareThreadForCrashes() {
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return 0;
  void* mem = mmap(nullptr, kAltStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) return -errno;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = kAltStackSize;
  if (sigaltstack(&ss, nullptr) != 0) {
    int err = errno;
    munmap(mem, kAltStackSize);
    return -err;
  }
  return 0;
}

int InstallCrashHandler(const CrashHandlerOptions& options) {
  if (options.path != nullptr) {
    int fd = open(options.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    if (g_state.owned_fd >= 0) close(g_state.owned_fd);
    g_state.owned_fd = fd;
    g_state.fd = fd;
  } else {
    g_state.fd = options.fd;
  }
  g_state.max_frames = options.max_frames < 1 ? 1
                       : options.max_frames > kMaxFrames ? kMaxFrames
                                                         : options.max_frames;
  g_state.method = static_cast<int>(options.method);
  if (options.alternate_stack) {
    int err = PrepareThreadForCrashes();
    if (err != 0) return err;
  }
  // Warm what the handler will need: this thread's stack bounds and the module map.
  void* warm[4];
  stackwalk_backtrace(warm, 4, static_cast<stackwalk_method>(g_state.method));
  stackwalk_refresh_modules();
  // Its first use constructs it and registers its destructor (a lock, maybe calloc): not in a handler.
  internal::SafeSymbolizer::Global();
  if (g_state.installed) return 0;
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &g_state.previous[sig]) != 0) return -errno;
  }
  g_state.installed = true;
  return 0;
}

void UninstallCrashHandler() {
  if (!g_state.installed) return;
  for (int sig : kSignals) sigaction(sig, &g_state.previous[sig], nullptr);
  g_state.installed = false;
}

}  // namespace stackwalk

extern "C" int stackwalk_install_crash_handler(int fd) {
  stackwalk::CrashHandlerOptions options;
  options.fd = fd;
  return stackwalk::InstallCrashHandler(options);
}
