#include "leakcheck_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <set>
#include <string>
#include <new>
#include <vector>

#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_encode.h"
#include "leakcheck/dump/dump_format.h"
#include "leakcheck/dump/dump_report.h"
#include "leakcheck/dump/record_read.h"
#include "leakcheck/exitcode.h"
#include "leakcheck/record_format.h"
#include "leakcheck_children.h"

namespace stackwalk::leakcheck {
namespace {

// The signals a user sends the launcher that are meant for the program (the report signal is
// added to them).
constexpr int kForwarded[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};

volatile sig_atomic_t g_child = 0;
int g_child_ended_pipe[2] = {-1, -1};  // SIGCHLD's wake-up of the poll loop

// A signal sent to the launcher goes to the program. One the terminal sends (Ctrl-C, SI_KERNEL)
// reached the program's process group already, and is not sent twice.
void Forward(int signo, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), signo);
  errno = saved;
}

void NoteChildEnded(int) {
  const int saved = errno;
  const char byte = 0;
  if (write(g_child_ended_pipe[1], &byte, 1) < 0) {
    // Full: a wake-up is pending already.
  }
  errno = saved;
}

void WriteAll(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t wrote = write(fd, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    done += static_cast<size_t>(wrote);
  }
}

std::string WithPid(const std::string& pattern, int pid) {
  std::string out = pattern;
  for (size_t at = 0; (at = out.find("%p", at)) != std::string::npos;) {
    out.replace(at, 2, std::to_string(pid));
    at += std::to_string(pid).size();
  }
  return out;
}

// Names and renders the dumps as they come through the pipe, in the order they were written.
class DumpRenderer {
 public:
  DumpRenderer(const SupervisorSettings& settings, pid_t program)
      : settings_(settings), program_(program) {}

  void Add(const char* bytes, size_t n) {
    pending_.append(bytes, n);
    RenderWholeDumps();
  }

  // After the last byte: what is left is a cut dump (a process killed while writing it) or no dump.
  void Finish() {
    if (pending_.empty()) return;
    const dump::DecodedDumps decoded =
        dump::DecodeDumps(reinterpret_cast<const uint8_t*>(pending_.data()), pending_.size(),
                          dump::DecodeScope::kLeakReport);
    for (const auto& d : decoded.dumps) Render(d);
    std::fprintf(stderr, "stackwalk-leakcheck: the program's last dump is unreadable: %s%s\n",
                 decoded.error.empty() ? "trailing bytes" : decoded.error.c_str(),
                 decoded.dumps.empty() ? "" : " (what could be read is reported)");
    pending_.clear();
  }

  // A dump begun and not yet whole (not bytes that are no dump, which nothing will complete).
  bool has_partial_dump() const {
    return !pending_.empty() &&
           std::memcmp(pending_.data(), dump::kMagic,
                       std::min(pending_.size(), sizeof(dump::kMagic))) == 0;
  }
  // A dump the launcher made itself (from the record region): rendered, and kept with --dump.
  void RenderMade(const dump::DumpContents& d) {
    if (settings_.options.dump[0] != '\0') Keep(d, dump::EncodeDump(d));
    Render(d);
  }
  bool program_reported_at_exit() const { return program_reported_at_exit_; }
  // What the program's report at exit found (the --exitcode decision's figures).
  uint64_t program_leaked() const { return program_leaked_; }
  const UntrackedCounts& program_untracked() const { return program_untracked_; }

 private:
  static constexpr uint64_t kMostReserved = uint64_t{1} << 30;

  // Each dump says its length in its header (dump_format.h): rendered once it is all here.
  void RenderWholeDumps() {
    while (pending_.size() >= dump::kHeaderBytes) {
      if (std::memcmp(pending_.data(), dump::kMagic, sizeof(dump::kMagic)) != 0) return;
      uint64_t length = 0;
      for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<uint8_t>(pending_[16 + i]);
      if (length < dump::kHeaderBytes) return;  // corrupt: Finish says so
      if (pending_.size() < length) {
        // Room for the whole dump at once (clang's at exit is ~21 MB), not doubled as it comes;
        // a length past what a dump can be is not trusted with memory.
        if (length <= kMostReserved) {
          try {
            pending_.reserve(length);
          } catch (const std::bad_alloc&) {  // grown as the bytes come, as without
          }
        }
        return;
      }
      std::string one;
      if (pending_.size() == length) {
        one.swap(pending_);  // the usual case: nothing after it yet, nothing copied
      } else {
        one = pending_.substr(0, length);
        pending_.erase(0, length);
      }
      // The launcher renders leak reports only: the profile's stacks and figures stay in the
      // raw dump (kept with --dump), which is let go before the frames are named.
      dump::DecodedDumps decoded =
          dump::DecodeDumps(reinterpret_cast<const uint8_t*>(one.data()), one.size(),
                            dump::DecodeScope::kLeakReport);
      for (const auto& d : decoded.dumps) Keep(d, one);
      std::string().swap(one);
      for (const auto& d : decoded.dumps) Render(d);
      if (!decoded.error.empty()) {
        std::fprintf(stderr, "stackwalk-leakcheck: a dump of the program is unreadable: %s\n",
                     decoded.error.c_str());
      }
    }
  }

  // The first write to a file starts it, later ones append (the program's own rule, per process).
  void Deliver(const std::string& path, const std::string& bytes, const char* what) {
    // The program's own reports (naming in the program) start the file; the launcher's follow.
    const bool first = started_.insert(path).second && !WrittenSinceLaunch(path);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (first ? O_TRUNC : O_APPEND),
                        0644);
    if (fd < 0) {
      std::fprintf(stderr, "stackwalk-leakcheck: cannot write %s %s: %s%s\n", what, path.c_str(),
                   std::strerror(errno), bytes.empty() ? "" : "");
      if (std::strcmp(what, "the report") == 0) WriteAll(2, bytes);
      return;
    }
    WriteAll(fd, bytes);
    close(fd);
  }

  static timespec LaunchTime() {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    return now;
  }

  // With --dump, the raw dump `d` was read from goes to its process's dump file.
  void Keep(const dump::DumpContents& d, const std::string& raw) {
    if (settings_.options.dump[0] != '\0' && !raw.empty()) {
      Deliver(WithPid(settings_.options.dump, d.process.pid), raw, "the dump");
    }
  }

  void Render(const dump::DumpContents& d) {
    // A snapshot is no leak report: kept in the dump file only, never rendered to the user.
    if (d.process.snapshot) {
      if (settings_.options.dump[0] == '\0' && !snapshot_dropped_) {
        snapshot_dropped_ = true;
        std::fprintf(stderr, "stackwalk-leakcheck: the program took a snapshot, which is kept "
                             "only with --dump FILE: dropped (and any later ones)\n");
      }
      return;
    }
    if (!settings_.render()) return;
    uint64_t leaked = 0;
    const std::string text = dump::RenderDumpReport(d, {}, {}, &leaked);
    if (settings_.options.output[0] == '\0') {
      WriteAll(2, text);
    } else {
      Deliver(WithPid(settings_.options.output, d.process.pid), text, "the report");
    }
    if (d.process.pid == program_ && d.process.at_exit) {
      program_reported_at_exit_ = true;
      program_leaked_ = leaked;
      program_untracked_ = d.summary.untracked;
    }
  }

  bool WrittenSinceLaunch(const std::string& path) const {
    struct stat st;
    if (settings_.name_in_launcher || stat(path.c_str(), &st) != 0) return false;
    return st.st_mtim.tv_sec > launched_.tv_sec ||
           (st.st_mtim.tv_sec == launched_.tv_sec && st.st_mtim.tv_nsec >= launched_.tv_nsec);
  }

  const SupervisorSettings& settings_;
  const pid_t program_;
  timespec launched_ = LaunchTime();
  std::string pending_;
  std::set<std::string> started_;
  bool program_reported_at_exit_ = false;
  uint64_t program_leaked_ = 0;
  UntrackedCounts program_untracked_;
  bool snapshot_dropped_ = false;
};

// Ends the launcher as the program ended: the same signal, the program's core (the kernel's, as
// without the checker) not followed by one of the launcher's.
[[noreturn]] void DieLike(int signo) {
  const rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(signo, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);
  raise(signo);
  _exit(128 + signo);  // a signal whose default is to be ignored or to stop
}

// "SIGKILL" for 9, as the report names how the program ended.
std::string SignalName(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

// After process `pid` (the program, or a forked child) ended without its report: what its record
// region held at its end, reported (unclassified: no memory is left to scan) as `whose` and said
// so on stderr. Returns what became of it, for the line that says how the process ended.
std::string ReportRecord(int record_fd, const std::string& occasion, pid_t pid,
                         const std::string& whose, const SupervisorSettings& settings,
                         DumpRenderer* renderer) {
  const std::string none = "no report could be written at its end";
  struct stat st;
  if (record_fd < 0 || fstat(record_fd, &st) != 0 || st.st_size <= 0) return none;
  const size_t size = static_cast<size_t>(st.st_size);
  void* region = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, record_fd, 0);
  if (region == MAP_FAILED) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot read the program's record: %s\n",
                 std::strerror(errno));
    return none;
  }
  dump::RecordReading reading =
      dump::ReadRecord(static_cast<const uint8_t*>(region), size, occasion);
  munmap(region, size);
  // The record holds the sampled blocks only: the report gives their estimates and says so.
  const Options& options = settings.options;
  reading.dump.sample_bytes = options.sample_bytes;
  dump::DumpRendering& rendering = reading.dump.rendering;
  rendering.json = options.json;
  rendering.show_reachable = options.show_reachable;
  rendering.libraries = options.libraries;
  rendering.ignore_libraries = options.ignore_libraries;
  rendering.suppressions = options.suppressions;
  if (reading.begun && reading.executed) {
    // The image that recorded is gone; the one that died never attached (static, set-ID).
    return "its record ended when it exec'd a program the checker does not reach (statically "
           "linked, set-ID): " + none;
  }
  if (!reading.begun || reading.dump.process.pid != pid || reading.exit_reported) return none;
  std::fprintf(stderr,
               "stackwalk-leakcheck: the report below is %s: every block it held, unclassified "
               "(no memory was left to scan)\n",
               whose.c_str());
  for (const std::string& problem : reading.problems) {
    std::fprintf(stderr, "stackwalk-leakcheck: the record is incomplete: %s\n", problem.c_str());
  }
  renderer->RenderMade(reading.dump);
  return "its record at its death is reported (unclassified)";
}

// A forked child ended (children.h): if it left no report at exit, its record is reported, with
// how it ended where the kernel told the launcher (not its parent) that.
void ReportForkedChild(const ForkedChildren::Ended& end, const SupervisorSettings& settings,
                       DumpRenderer* renderer) {
  const bool killed = end.status_known && WIFSIGNALED(end.status);
  if (end.status_known && !killed) return;  // exited: its report at exit was written, or not asked for
  const int signo = killed ? WTERMSIG(end.status) : 0;
  const std::string occasion =
      killed ? "killed by " + SignalName(signo) : "an end the launcher could not see";
  const std::string whose = "the record of process " + std::to_string(end.pid) +
                            " (a forked child of the program) at its end";
  const std::string record = ReportRecord(end.region, occasion, end.pid, whose, settings, renderer);
  if (record.find("is reported") == std::string::npos) return;  // it reported at exit, or exec'd
  if (killed) {
    std::fprintf(stderr, "stackwalk-leakcheck: process %d (a forked child) was killed by signal %d "
                 "(%s); %s\n", static_cast<int>(end.pid), signo, strsignal(signo), record.c_str());
  } else {
    std::fprintf(stderr, "stackwalk-leakcheck: process %d (a forked child) ended without its "
                 "report at exit (killed by a signal, most likely; the launcher, not its parent, "
                 "cannot know); %s\n", static_cast<int>(end.pid), record.c_str());
  }
}

}  // namespace

int SuperviseProgram(char** argv, const SupervisorSettings& settings) {
  int dump_pipe[2] = {-1, -1};
  if ((settings.name_in_launcher && pipe2(dump_pipe, O_CLOEXEC) != 0) ||
      pipe2(g_child_ended_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot make a pipe: %s\n", std::strerror(errno));
    return 2;
  }
  // A dump is megabytes (clang's at exit 21 MB): through the default 64 KiB pipe each piece woke
  // the launcher and blocked the program, ~330 times (~0.04 s of the program's CPU in the
  // wakeups). The encoder's piece, 1 MiB, is Linux's default most for an unprivileged pipe; a
  // smaller one still works.
  if (settings.name_in_launcher) {
    fcntl(dump_pipe[1], F_SETPIPE_SZ, static_cast<int>(dump::kDumpPieceBytes));
  }
  // The record region (record_format.h): the program's tables, readable after its death. Without
  // one (no memfd), the program runs as before and a death by signal leaves no report.
  const int record_fd = memfd_create("stackwalk-leakcheck-record", MFD_CLOEXEC);
  // Each forked child's own region comes through it (record_handover.h).
  ForkedChildren children;
  const bool children_open = children.Open();
  // The signals wait, blocked, until the child's pid is known and the handlers are in place.
  sigset_t handled, before;
  sigemptyset(&handled);
  for (int signo : kForwarded) sigaddset(&handled, signo);
  if (settings.options.report_signal != 0) sigaddset(&handled, settings.options.report_signal);
  if (settings.options.snapshot_signal != 0) {
    sigaddset(&handled, settings.options.snapshot_signal);
  }
  sigaddset(&handled, SIGCHLD);
  sigprocmask(SIG_BLOCK, &handled, &before);

  std::fflush(nullptr);
  const pid_t launcher = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot fork: %s\n", std::strerror(errno));
    return 2;
  }
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    // The program is what the user ran: killing the launcher kills it, as when it was exec'd (in
    // both modes: with --name-in=launcher it would otherwise run on with no one to report it).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    if (settings.name_in_launcher) {
      // The pipe at a high descriptor that survives this exec; the preload closes it on the next.
      if (dup2(dump_pipe[1], kDumpDescriptor) < 0) _exit(127);
      setenv(kDumpDescriptorVariable, std::to_string(kDumpDescriptor).c_str(), 1);
    }
    if (record_fd >= 0 && dup2(record_fd, record::kDescriptor) == record::kDescriptor) {
      setenv(record::kDescriptorVariable, std::to_string(record::kDescriptor).c_str(), 1);
    }
    if (children_open) children.HandToProgram();
    // The checker checks this process (it keeps its pid through the program's own execs).
    setenv("STACKWALK_LEAKCHECK_PID", std::to_string(getpid()).c_str(), 1);
    execvp(argv[0], argv);
    std::fprintf(stderr, "stackwalk-leakcheck: cannot run %s: %s\n", argv[0],
                 std::strerror(errno));
    _exit(127);
  }
  if (dump_pipe[1] >= 0) close(dump_pipe[1]);
  children.AfterFork();
  g_child = child;
  struct sigaction forward = {};
  forward.sa_sigaction = Forward;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (int signo : kForwarded) sigaction(signo, &forward, nullptr);
  if (settings.options.report_signal != 0) {
    sigaction(settings.options.report_signal, &forward, nullptr);
  }
  if (settings.options.snapshot_signal != 0) {
    sigaction(settings.options.snapshot_signal, &forward, nullptr);
  }
  struct sigaction ended = {};
  ended.sa_handler = NoteChildEnded;
  ended.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &ended, nullptr);
  sigprocmask(SIG_SETMASK, &before, nullptr);

  DumpRenderer renderer(settings, child);
  // As much as the dump pipe holds (F_SETPIPE_SZ above): one read a wakeup.
  std::vector<char> read_buffer(dump::kDumpPieceBytes);
  char* const buf = read_buffer.data();
  const size_t buf_size = read_buffer.size();
  int status = 0;
  bool pipe_open = settings.name_in_launcher, reaped = false;
  const auto report_child = [&](const ForkedChildren::Ended& end) {
    ReportForkedChild(end, settings, &renderer);
  };
  std::vector<pollfd> fds;
  while (!reaped) {
    fds = {{g_child_ended_pipe[0], POLLIN, 0}, {pipe_open ? dump_pipe[0] : -1, POLLIN, 0}};
    children.AddPollFds(&fds);
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) break;
    // A child's handover, or a child's end (its dump, if any, came through the pipe before).
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents != 0) {
        children.Collect(report_child);
        break;
      }
    }
    if (pipe_open && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      const ssize_t n = read(dump_pipe[0], buf, buf_size);
      if (n > 0) renderer.Add(buf, static_cast<size_t>(n));
      if (n == 0) pipe_open = false;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      while (read(g_child_ended_pipe[0], buf, buf_size) > 0) {
      }
      const pid_t got = waitpid(child, &status, WNOHANG);
      reaped = got == child;
    }
  }
  if (!reaped) waitpid(child, &status, 0);
  g_child = 0;  // reaped: its pid may be another process's by now
  if (settings.wait_children) {
    // The program's descendants that outlive it, to the end of the last (SupervisorSettings::wait_children). A user's
    // signal now ends the launcher (the program it was for is gone).
    for (int signo : kForwarded) signal(signo, SIG_DFL);
    // A wait of a second or two is said once, so that a program that left a daemon does not
    // look like a hung launcher. The wakeups every 200 ms look for children that exec'd a program
    // the checker does not check (ForgetExecuted), whose end nothing waits for.
    bool said_waiting = false;
    timespec since;
    clock_gettime(CLOCK_MONOTONIC, &since);
    while (pipe_open || children.Waiting()) {
      fds = {{pipe_open ? dump_pipe[0] : -1, POLLIN, 0}};
      children.AddPollFds(&fds);
      if (poll(fds.data(), fds.size(), 200) < 0 && errno != EINTR) break;
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (!said_waiting && now.tv_sec - since.tv_sec >= 2) {
        said_waiting = true;
        std::fprintf(stderr,
                     "stackwalk-leakcheck: %s (pid %d) ended; waiting for the checked processes it "
                     "left running, whose reports come at their ends (--wait-children=0 does not "
                     "wait)\n",
                     argv[0], static_cast<int>(child));
      }
      if (pipe_open && (fds[0].revents & (POLLIN | POLLHUP)) != 0) {
        const ssize_t n = read(dump_pipe[0], buf, buf_size);
        if (n > 0) renderer.Add(buf, static_cast<size_t>(n));
        if (n == 0) pipe_open = false;
      }
      children.Collect(report_child);
      if (!settings.options.follow_exec) children.ForgetExecuted();
    }
  }
  // What is in the pipe is rendered, and a dump begun (a forked child's, written whole under its
  // lock) is read to its end; without waiting, a child that has not begun one is not waited for.
  fcntl(dump_pipe[0], F_SETFL, O_NONBLOCK);
  while (pipe_open) {
    const ssize_t n = read(dump_pipe[0], buf, buf_size);
    if (n > 0) {
      renderer.Add(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN && renderer.has_partial_dump()) {
      pollfd more = {dump_pipe[0], POLLIN, 0};
      poll(&more, 1, -1);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  renderer.Finish();
  // The children that ended by now (without waiting, a child still running is not waited for).
  children.Collect(report_child);

  if (WIFSIGNALED(status)) {
    const int signo = WTERMSIG(status);
    if (!renderer.program_reported_at_exit()) {
      const std::string record = ReportRecord(record_fd, "killed by " + SignalName(signo), child,
                                              "the program's record at its death", settings,
                                              &renderer);
      std::fprintf(stderr, "stackwalk-leakcheck: %s (pid %d) was killed by signal %d (%s)%s; %s\n",
                   argv[0], static_cast<int>(child), signo, strsignal(signo),
                   WCOREDUMP(status) ? ", core dumped" : "", record.c_str());
    }
    DieLike(signo);
  }
  const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  const ExitcodeDecision exitcode = DecideExitcode(
      settings.exitcode(), renderer.program_leaked(), renderer.program_untracked());
  if (!exitcode.note.empty()) WriteAll(2, exitcode.note);
  if (exitcode.applies) return settings.exitcode();
  return exit_status;
}

}  // namespace stackwalk::leakcheck
