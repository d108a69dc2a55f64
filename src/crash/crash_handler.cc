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

#include "core/module_map.h"
#include "crash/report_writer.h"
#include "crash/snapshot_writer.h"
#include "crash/thread_capture.h"
#include "format/frame_layout.h"
#include "stackwalk/stackwalk.h"
#include "symbolize/safe_symbolizer.h"

namespace stackwalk {
namespace {

using internal::ReportWriter;

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
constexpr size_t kAltStackSize = 128 * 1024;

struct State {
  int fd = 2;
  int owned_fd = -1;
  int max_frames = 64;
  int method = STACKWALK_AUTO;
  bool installed = false;
  size_t snapshot_stack_bytes = kDefaultSnapshotStackBytes;
  char snapshot_path[kMaxSnapshotPath] = {};  // "" when no snapshot is asked for
  int thread_signal = 0;  // the other threads' capture signal; 0: the crashing thread alone
  size_t thread_stack_bytes = 0;
  size_t threads_total_stack_bytes = 0;
  int thread_wait_ms = 0;
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

// The objects the frames touched, each once, for the report's module list.
struct ModuleList {
  struct Entry {
    uint64_t object_start;
    uint64_t load_bias;
    const char* path;
    uint8_t build_id[internal::ElfImage::kMaxBuildIdSize];
    int build_id_size;
    bool build_id_known;
  };
  Entry entries[kMaxCrashFrames];
  int count = 0;

  void Add(const internal::SafeFrame& f) {
    for (int i = 0; i < count; ++i) {
      if (entries[i].object_start == f.object_start) return;
    }
    if (count == kMaxCrashFrames) return;
    Entry& e = entries[count++];
    e.object_start = f.object_start;
    e.load_bias = f.load_bias;
    e.path = f.module;
    std::memcpy(e.build_id, f.build_id, sizeof(e.build_id));
    e.build_id_size = f.build_id_size;
    e.build_id_known = f.build_id_known;
  }
};

ModuleList g_modules;  // too big for the alternate stack; one report per process at a time

// What the frame lines hold, and the command that adds file:line (crash_handler.h).
constexpr const char* kFramesLegend =
    "*** frames: #N, pc (the interrupted PC) or ra (a return address), the address, the function\n"
    "***   from the symbol tables + offset, (MODULE+OFFSET) (the object's path and link-time address).\n"
    "***   For ra, both offsets are of the call (ra - 1). No file:line here; they come from:\n"
    "***   grep -oE '[^ (]+\\+0x[0-9a-f]+\\)$' REPORT | tr -d ')' | xargs stackwalk-symbolize --inlines\n";

void WriteFrame(ReportWriter& w, int index, uint64_t pc, bool is_return_address,
                const internal::SafeFrame& frame) {
  internal::FrameLine line;
  line.index = index;
  line.kind = is_return_address ? "ra" : "pc";
  line.pc = pc;
  line.function = frame.function;
  line.has_function_offset = true;
  line.function_offset = frame.function_offset;
  line.module = frame.has_module ? frame.module : "";
  line.module_offset = frame.module_offset;
  internal::WriteFrameLine(w, line);
  w.Text("\n").Flush();
}

void WriteModules(ReportWriter& w, const ModuleList& modules) {
  w.Text("*** modules: path, build-id (hex; \"none\" if it has none, \"?\" if unreadable), load bias\n");
  for (int i = 0; i < modules.count; ++i) {
    const ModuleList::Entry& e = modules.entries[i];
    w.Text("*** module ").Text(e.path).Text(" build-id ");
    if (!e.build_id_known) {
      w.Text("?");
    } else if (e.build_id_size == 0) {
      w.Text("none");
    } else {
      w.Bytes(e.build_id, e.build_id_size);
    }
    w.Text(" bias ").Hex(e.load_bias).Text("\n").Flush();
  }
}

// The snapshot, if one was asked for, and a report line saying where it went or why it did not.
// After the frames: a snapshot that fails costs the report nothing.
void WriteSnapshot(ReportWriter& w, int sig, siginfo_t* info, void* ucontext) {
  if (g_state.snapshot_path[0] == '\0') return;
  int fd = open(g_state.snapshot_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    w.Text("*** snapshot not written: open ").Text(g_state.snapshot_path).Text(": errno ")
        .Dec(errno).Text("\n").Flush();
    return;
  }
  // The other threads are held in their handlers while the snapshot is written, then let go.
  internal::ThreadCaptureResult capture;
  internal::SnapshotOtherThreads others;
  if (g_state.thread_signal > 0) {
    capture = internal::CaptureOtherThreads(g_state.thread_wait_ms);
    others.capture = &capture;
    others.stack_bytes = g_state.thread_stack_bytes;
    others.total_stack_bytes = g_state.threads_total_stack_bytes;
  }
  internal::SnapshotWritten s =
      internal::WriteCrashSnapshot(fd, sig, info, ucontext, g_state.snapshot_stack_bytes, others);
  if (others.capture != nullptr) internal::ReleaseThreads();
  close(fd);
  if (s.error != 0) {
    w.Text("*** snapshot cut short: write ").Text(g_state.snapshot_path).Text(": errno ")
        .Dec(s.error).Text("\n").Flush();
    return;
  }
  w.Text("*** snapshot ").Text(g_state.snapshot_path).Text(": ").Dec(static_cast<long long>(s.bytes))
      .Text(" bytes, ").Dec(static_cast<long long>(s.stack_bytes)).Text(" of stack, ")
      .Dec(s.modules).Text(" modules");
  if (others.capture != nullptr) {
    w.Text(", ").Dec(s.threads_captured).Text(" of ").Dec(s.threads_listed)
        .Text(" other threads captured (").Dec(static_cast<long long>(s.thread_stack_bytes))
        .Text(" bytes of their stacks)");
  }
  w.Text("\n").Flush();
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

  void* pcs[kMaxCrashFrames];
  int n = stackwalk_backtrace_from_context(ucontext, pcs, g_state.max_frames,
                                           static_cast<stackwalk_method>(g_state.method));
  if (n < 0) {
    w.Text("*** unwinding failed: ").Text(stackwalk_strerror(n)).Text("\n").Flush();
    WriteSnapshot(w, sig, info, ucontext);
    w.Text("*** end of report\n").Flush();
    return;
  }
  w.Text(kFramesLegend).Flush();
  // Keeps the snapshot the module paths point into alive while another thread rebuilds it.
  internal::ModuleMap::Reader hold(internal::ModuleMap::Global());
  internal::SafeSymbolizer& symbolizer = internal::SafeSymbolizer::Global();
  ModuleList& modules = g_modules;
  modules.count = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
    const bool is_return_address = i != 0;
    internal::SafeFrame frame;
    symbolizer.Describe(pc, is_return_address, &frame);
    WriteFrame(w, i, pc, is_return_address, frame);
    if (frame.has_module) modules.Add(frame);
  }
  if (n == g_state.max_frames) w.Text("*** (more frames not shown)\n").Flush();
  WriteModules(w, modules);
  WriteSnapshot(w, sig, info, ucontext);
  w.Text("*** end of report\n").Flush();
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
    // Another thread is reporting and will end the process; give it up to 5 seconds. Its
    // snapshot takes this thread's registers at its own fault, not in this wait.
    const int noted = internal::NoteCrashedThread(static_cast<int>(self), sig, ucontext);
    timespec pause{0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && g_reporting_tid.load() != 0; ++i) nanosleep(&pause, nullptr);
    internal::ForgetCrashedThread(noted);
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

namespace {

// 0 if the options can work, else the negative errno InstallCrashHandler returns.
int CheckOptions(const CrashHandlerOptions& options) {
  if (options.max_frames < 1 || options.max_frames > kMaxCrashFrames) return -EINVAL;
  if (stackwalk_method_available(static_cast<stackwalk_method>(options.method)) != 1) return -EINVAL;
  if (options.path == nullptr) {
    if (options.fd < 0) return -EBADF;
    int flags = fcntl(options.fd, F_GETFL);
    if (flags < 0) return -errno;  // EBADF: not open
    if ((flags & O_ACCMODE) == O_RDONLY) return -EBADF;
  }
  if (options.snapshot_stack_bytes > kMaxSnapshotStackBytes ||
      options.snapshot_thread_stack_bytes > kMaxSnapshotStackBytes ||
      options.snapshot_threads_total_stack_bytes > kMaxSnapshotThreadsStackBytes ||
      options.snapshot_thread_wait_ms < 1 || options.snapshot_thread_wait_ms > kMaxSnapshotThreadWaitMs ||
      (options.snapshot_thread_signal > 0 &&
       (options.snapshot_thread_signal < SIGRTMIN || options.snapshot_thread_signal > SIGRTMAX))) {
    return -EINVAL;
  }
  if (options.snapshot_path != nullptr) {
    if (options.snapshot_path[0] == '\0') return -EINVAL;
    if (std::strlen(options.snapshot_path) >= kMaxSnapshotPath) return -ENAMETOOLONG;
  }
  return 0;
}

// The signal that captures the other threads for a snapshot, or 0 for none.
int ThreadSignal(const CrashHandlerOptions& options) {
  if (options.snapshot_path == nullptr || options.snapshot_thread_signal < 0) return 0;
  return options.snapshot_thread_signal == 0 ? SIGRTMIN + 6 : options.snapshot_thread_signal;
}

// The snapshot's options (CheckOptions bounded the path). A crash in another thread during a
// reinstall may see a mix of the old path and the new: the report names the one it used.
void SetSnapshotOptions(const CrashHandlerOptions& options) {
  g_state.snapshot_stack_bytes = options.snapshot_stack_bytes;
  g_state.thread_stack_bytes = options.snapshot_thread_stack_bytes;
  g_state.threads_total_stack_bytes = options.snapshot_threads_total_stack_bytes;
  g_state.thread_wait_ms = options.snapshot_thread_wait_ms;
  if (options.snapshot_path != nullptr) {
    std::memcpy(g_state.snapshot_path, options.snapshot_path, std::strlen(options.snapshot_path) + 1);
  } else {
    g_state.snapshot_path[0] = '\0';
  }
}

}  // namespace

int InstallCrashHandler(const CrashHandlerOptions& options) {
  int err = CheckOptions(options);
  if (err != 0) return err;
  // A capture signal that is the program's refuses the install before anything changed.
  const int thread_signal = ThreadSignal(options);
  if (thread_signal != 0) {
    err = internal::CheckThreadCaptureSignal(thread_signal);
    if (err != 0) return err;
  }
  int fd = options.fd;
  if (options.path != nullptr) {
    fd = open(options.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
  }
  if (options.alternate_stack) {
    err = PrepareThreadForCrashes();
    if (err != 0) {
      if (options.path != nullptr) close(fd);
      return err;
    }
  }
  const int method = static_cast<int>(options.method);

  // Warm what the handler will need: this thread's stack bounds and the module map.
  void* warm[4];
  stackwalk_backtrace(warm, 4, static_cast<stackwalk_method>(method));
  stackwalk_refresh_modules();
  // Its first use constructs it and registers its destructor (a lock, maybe calloc): not in a handler.
  internal::SafeSymbolizer::Global();
  if (!g_state.installed) {
    struct sigaction previous[sizeof(kSignals) / sizeof(kSignals[0])];
    struct sigaction sa {};
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    // The options first: a signal may arrive as soon as the first handler is in place.
    const int old_fd = g_state.fd, old_max = g_state.max_frames, old_method = g_state.method;
    g_state.fd = fd;
    g_state.max_frames = options.max_frames;
    g_state.method = method;
    SetSnapshotOptions(options);
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
      if (sigaction(kSignals[i], &sa, &previous[i]) != 0) {
        err = -errno;
        while (i-- > 0) sigaction(kSignals[i], &previous[i], nullptr);  // nothing stays installed
        g_state.fd = old_fd;
        g_state.max_frames = old_max;
        g_state.method = old_method;
        g_state.snapshot_path[0] = '\0';  // nothing was installed: no handler reads it
        if (options.path != nullptr) close(fd);
        return err;
      }
    }
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
      g_state.previous[kSignals[i]] = previous[i];
    }
    g_state.installed = true;
  } else {
    g_state.fd = fd;
    g_state.max_frames = options.max_frames;
    g_state.method = method;
    SetSnapshotOptions(options);
  }
  // Last, as nothing can fail any more (CheckThreadCaptureSignal found the signal free); a crash
  // meanwhile captures no thread rather than send a signal whose handler is not in place.
  g_state.thread_signal = 0;
  if (thread_signal == 0) {
    internal::UninstallThreadCaptureHandler();
  } else if (internal::InstallThreadCaptureHandler(thread_signal) == 0) {
    g_state.thread_signal = thread_signal;
  }
  if (g_state.owned_fd >= 0 && g_state.owned_fd != fd) close(g_state.owned_fd);
  g_state.owned_fd = options.path != nullptr ? fd : -1;
  return 0;
}

void UninstallCrashHandler() {
  if (!g_state.installed) return;
  for (int sig : kSignals) sigaction(sig, &g_state.previous[sig], nullptr);
  g_state.thread_signal = 0;
  internal::UninstallThreadCaptureHandler();
  g_state.installed = false;
}

}  // namespace stackwalk

extern "C" int stackwalk_install_crash_handler(int fd) {
  stackwalk::CrashHandlerOptions options;
  options.fd = fd;
  return stackwalk::InstallCrashHandler(options);
}

extern "C" int stackwalk_install_crash_handler_with_snapshot(int fd, const char* snapshot_path,
                                                            size_t stack_bytes) {
  stackwalk::CrashHandlerOptions options;
  options.fd = fd;
  options.snapshot_path = snapshot_path;
  options.snapshot_stack_bytes = stack_bytes;
  return stackwalk::InstallCrashHandler(options);
}

extern "C" int stackwalk_prepare_thread_for_crashes(void) {
  return stackwalk::PrepareThreadForCrashes();
}

extern "C" void stackwalk_uninstall_crash_handler(void) { stackwalk::UninstallCrashHandler(); }
