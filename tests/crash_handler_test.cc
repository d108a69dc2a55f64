// The crash handler on real crashes in forked children: the report names the right first
// frames with full paths, link-time offsets (of the call, for return addresses) and build-ids,
// the child dies by the original signal (or the previous handler runs), several threads
// crashing at once give one report, and nothing hangs; options that cannot work are refused at
// install; a report's MODULE+OFFSET tokens name the crash with file:line through
// stackwalk-symbolize.
#include "stackwalk/crash_handler.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/chain_lib.h"

extern "C" {

volatile int* volatile g_null = nullptr;

__attribute__((noinline)) int crash_leaf(volatile int* p) { return *p; }  // no frame at all

__attribute__((noinline)) int crash_caller() {
  int r = crash_leaf(g_null);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int crash_through_libstdcxx() {
  std::vector<int> v(3);
  int r = v.at(static_cast<size_t>(rand() % 2 + 7));  // throws; nothing catches: abort()
  __asm__ volatile("" ::: "memory");
  return r;
}

__attribute__((noinline)) int crash_recurse(int depth) {
  volatile char pad[512];
  pad[0] = static_cast<char>(depth);
  int r = crash_recurse(depth + 1) + pad[0];
  __asm__ volatile("" ::: "memory");
  return r;
}

}  // extern "C"

namespace crash_names {
struct Grid {
  __attribute__((noinline)) static int CellAt(volatile int* cells, int i) { return cells[i]; }
};
}  // namespace crash_names

namespace {

struct Outcome {
  std::string report;
  int status = 0;
};

// An exception escaping `body` calls std::terminate here, as in a program without a handler
// (the test framework would otherwise catch it).
void RunNoexcept(const std::function<void()>& body) noexcept { body(); }

// The report pipe's write end, in the child: for bodies that re-install the handler.
int g_report_fd = -1;

// Runs `body` in a child with the crash handler writing to a pipe; returns its report and
// wait status. Fails the test if the child takes more than 20 s.
Outcome RunCrashingChild(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    stackwalk::CrashHandlerOptions options;
    options.fd = fds[1];
    g_report_fd = fds[1];
    if (stackwalk::InstallCrashHandler(options) != 0) _exit(100);
    RunNoexcept(body);
    _exit(101);  // did not crash
  }
  close(fds[1]);
  Outcome out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.report.append(buf, n);
  close(fds[0]);
  for (int i = 0; i < 2000; ++i) {
    if (waitpid(pid, &out.status, WNOHANG) == pid) return out;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &out.status, 0);
  ADD_FAILURE() << "the crashing child hung\n" << out.report;
  return out;
}

// A report, parsed (crash_handler.h describes its lines).
struct ReportFrame {
  int index = -1;
  bool is_return_address = false;  // "ra" rather than "pc"
  uint64_t pc = 0;
  std::string function;            // "" if the line names none
  uint64_t function_offset = 0;
  std::string module;              // "" for "(in no known object)"
  uint64_t module_offset = 0;
};
struct ReportModule {
  std::string path;
  std::string build_id;
  uint64_t bias = 0;
};
struct Report {
  std::vector<ReportFrame> frames;
  std::vector<ReportModule> modules;
  bool complete = false;  // "*** end of report" seen
};

uint64_t Hex(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

// "NAME+0xOFFSET" into its parts; false if it is not of that form.
bool SplitPlus(const std::string& s, std::string* name, uint64_t* offset) {
  size_t plus = s.rfind("+0x");
  if (plus == std::string::npos || plus == 0) return false;
  *name = s.substr(0, plus);
  *offset = Hex(s.substr(plus + 1));
  return true;
}

Report Parse(const std::string& text) {
  Report r;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line == "*** end of report") r.complete = true;
    if (line.rfind("*** module ", 0) == 0) {
      std::istringstream words(line.substr(11));
      ReportModule m;
      std::string tag, bias_tag, bias;
      words >> m.path >> tag >> m.build_id >> bias_tag >> bias;
      EXPECT_EQ(tag, "build-id") << line;
      EXPECT_EQ(bias_tag, "bias") << line;
      m.bias = Hex(bias);
      r.modules.push_back(m);
      continue;
    }
    if (line.empty() || line[0] != '#') continue;
    ReportFrame f;
    std::istringstream words(line);
    std::string index, kind, pc;
    words >> index >> kind >> pc;
    f.index = std::atoi(index.c_str() + 1);
    EXPECT_TRUE(kind == "pc" || kind == "ra") << line;
    f.is_return_address = kind == "ra";
    EXPECT_EQ(pc.rfind("0x", 0), 0u) << line;
    f.pc = Hex(pc);
    std::string rest;
    std::getline(words, rest);
    if (rest.size() >= 21 && rest.compare(rest.size() - 21, 21, " (in no known object)") == 0) {
      rest.resize(rest.size() - 21);
    } else {
      // " (MODULE+0xOFFSET)" at the end.
      size_t open = rest.rfind(" (");
      EXPECT_TRUE(open != std::string::npos && rest.back() == ')' &&
                  SplitPlus(rest.substr(open + 2, rest.size() - open - 3), &f.module,
                            &f.module_offset))
          << line;
      if (open != std::string::npos) rest.resize(open);
    }
    if (rest.rfind(" in ", 0) == 0) {
      EXPECT_TRUE(SplitPlus(rest.substr(4), &f.function, &f.function_offset)) << line;
    } else {
      EXPECT_EQ(rest, "") << line;
    }
    EXPECT_EQ(f.index, static_cast<int>(r.frames.size())) << line;
    r.frames.push_back(f);
  }
  return r;
}

// The function named on report line "#<index> ...", or "".
std::string FrameFunction(const std::string& report, int index) {
  Report r = Parse(report);
  return index < static_cast<int>(r.frames.size()) ? r.frames[index].function : "";
}

bool DiedBy(int status, int sig) { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

TEST(CrashHandler, NullDereferenceInALeafWithoutFramePointers) {
  Outcome o = RunCrashingChild([] { crash_caller(); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_NE(o.report.find("SIGSEGV (Segmentation fault), code 1 (SEGV_MAPERR), fault address 0x0"),
            std::string::npos)
      << o.report;
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_leaf") << o.report;
  EXPECT_EQ(FrameFunction(o.report, 1), "crash_caller") << o.report;
  EXPECT_NE(o.report.find("*** pid "), std::string::npos);
}

// C++ names are demangled on the signal-safe path by abseil's demangler (which leaves parameter
// types out), on the cross targets too where the build found abseil for them.
TEST(CrashHandler, NamesCxxFunctionsDemangled) {
  Outcome o = RunCrashingChild([] { crash_names::Grid::CellAt(g_null, 3); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
#if defined(STACKWALK_TEST_HAS_DEMANGLER)
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_names::Grid::CellAt()") << o.report;
#else
  EXPECT_EQ(FrameFunction(o.report, 0), "_ZN11crash_names4Grid6CellAtEPVii") << o.report;
#endif
}

TEST(CrashHandler, AbortFromDeepInsideLibstdcxx) {
  Outcome o = RunCrashingChild([] { crash_through_libstdcxx(); });
  EXPECT_TRUE(DiedBy(o.status, SIGABRT)) << o.status;
  EXPECT_NE(o.report.find("SIGABRT (Aborted)"), std::string::npos) << o.report;
  // abort <- std::terminate <- the personality routine <- _Unwind_Resume <- the cleanup of our
  // function (GCC puts it in crash_through_libstdcxx.cold), through libstdc++ and libgcc_s.
  EXPECT_NE(o.report.find(" in abort+"), std::string::npos) << o.report;
#if defined(__arm__)
  // armhf glibc's abort lies before the first .ARM.exidx entry (no unwind table covers it), so
  // no unwinder, libgcc's included, gets past it.
  return;
#endif
  EXPECT_NE(o.report.find(" in __gxx_personality_v0+"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in _Unwind_Resume+"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in crash_through_libstdcxx"), std::string::npos) << o.report;
  EXPECT_NE(o.report.find(" in main+"), std::string::npos) << o.report;
}

TEST(CrashHandler, StackOverflowOnTheAlternateStack) {
  Outcome o = RunCrashingChild([] { crash_recurse(0); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(FrameFunction(o.report, 0), "crash_recurse") << o.report.substr(0, 2000);
  EXPECT_EQ(FrameFunction(o.report, 1), "crash_recurse") << o.report.substr(0, 2000);
  EXPECT_NE(o.report.find("more frames not shown"), std::string::npos);
}

TEST(CrashHandler, CrashInsideALibraryOpenedWithDlopen) {
  Outcome o = RunCrashingChild([] {
    void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(102);
    auto fault = reinterpret_cast<chain_lib_fault_fn>(dlsym(lib, "chain_lib_fault"));
    fault(g_null);
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(FrameFunction(o.report, 0), "chain_lib_fault") << o.report;
  EXPECT_NE(o.report.find("libchain_lib"), std::string::npos) << o.report;
}

// Installs `previous` for SIGSEGV "before" stackwalk's handler (by re-installing stackwalk's on
// top of it), then crashes.
void CrashWithPreviousHandler(void (*previous)(int)) {
  stackwalk::UninstallCrashHandler();
  signal(SIGSEGV, previous);
  stackwalk::CrashHandlerOptions options;
  options.fd = g_report_fd;
  stackwalk::InstallCrashHandler(options);
  crash_caller();
}

size_t CountReports(const std::string& report) {
  size_t reports = 0;
  for (size_t at = 0; (at = report.find("*** stackwalk:", at)) != std::string::npos; ++at) ++reports;
  return reports;
}

TEST(CrashHandler, SeveralThreadsCrashingAtOnceGiveOneReport) {
  Outcome o = RunCrashingChild([] {
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&ready] {
        ready.fetch_add(1);
        while (ready.load() < 4) {
        }
        crash_caller();
      });
    }
    for (auto& t : threads) t.join();
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  EXPECT_EQ(CountReports(o.report), 1u) << o.report;
}

void PreviousHandler(int) {
  const char msg[] = "previous handler ran\n";
  ssize_t ignored = write(2, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(42);
}

TEST(CrashHandler, ChainsToThePreviouslyInstalledHandler) {
  Outcome o = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandler); });
  // stackwalk's report first, then the previous handler.
  EXPECT_NE(o.report.find("*** stackwalk: SIGSEGV"), std::string::npos) << o.report;
  EXPECT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 42) << o.status;
}

// A previous handler that faults itself: it runs inside stackwalk's handler, so its fault is a
// crash inside the handler.
void PreviousHandlerThatFaults(int) { crash_caller(); }        // SIGSEGV again, while blocked
void PreviousHandlerThatTraps(int) { __builtin_trap(); }       // another signal: re-enters

TEST(CrashHandler, ACrashInsideTheHandlerNeitherHangsNorReportsTwice) {
  // The same signal, blocked while the handler runs: the kernel kills the process with it.
  Outcome same = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandlerThatFaults); });
  EXPECT_TRUE(DiedBy(same.status, SIGSEGV)) << same.status << "\n" << same.report;
  EXPECT_EQ(CountReports(same.report), 1u) << same.report;
  // Another signal re-enters the handler on the reporting thread: no second report, and the
  // process dies by that signal.
  Outcome other = RunCrashingChild([] { CrashWithPreviousHandler(PreviousHandlerThatTraps); });
  EXPECT_TRUE(WIFSIGNALED(other.status)) << other.status << "\n" << other.report;
  const int trap_signal = WIFSIGNALED(other.status) ? WTERMSIG(other.status) : 0;
  EXPECT_TRUE(trap_signal == SIGILL || trap_signal == SIGTRAP) << trap_signal;
  EXPECT_EQ(CountReports(other.report), 1u) << other.report;
  EXPECT_NE(other.report.find("*** stackwalk: SIGSEGV"), std::string::npos) << other.report;
}

// What the loader says of each object of this process (a forked child has the same): its
// path as the report prints it (the executable's from /proc/self/exe), load bias and build-id,
// read from its PT_NOTE segments in memory.
struct LoadedObject {
  uint64_t bias = 0;
  std::string build_id;
};

std::string ExecutablePath() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

std::map<std::string, LoadedObject> LoadedObjects() {
  std::map<std::string, LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<std::map<std::string, LoadedObject>*>(data);
        LoadedObject o;
        o.bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const auto* desc = reinterpret_cast<const unsigned char*>(
                name + ((note->n_namesz + 3) & ~3u));
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              char hex[3];
              for (unsigned k = 0; k < note->n_descsz; ++k) {
                std::snprintf(hex, sizeof(hex), "%02x", desc[k]);
                o.build_id += hex;
              }
            }
            p = reinterpret_cast<const char*>(desc) + ((note->n_descsz + 3) & ~3u);
          }
        }
        std::string path = info->dlpi_name[0] != '\0' ? info->dlpi_name : ExecutablePath();
        if (out->empty() && info->dlpi_name[0] == '\0') path = ExecutablePath();
        out->emplace(path, o);
        return 0;
      },
      &objects);
  return objects;
}

// A function's link-time address (without the Thumb bit of an arm32 function pointer).
uint64_t LinkAddress(const void* function, uint64_t bias) {
  uintptr_t address = reinterpret_cast<uintptr_t>(function);
#if defined(__arm__)
  address &= ~uintptr_t{1};
#endif
  return address - bias;
}

// Every frame: its module printed once in the module list; the list holds nothing else.
void ExpectModuleListMatchesFrames(const Report& r) {
  std::set<std::string> in_frames, listed;
  for (const ReportFrame& f : r.frames) {
    if (!f.module.empty()) in_frames.insert(f.module);
  }
  for (const ReportModule& m : r.modules) {
    EXPECT_TRUE(listed.insert(m.path).second) << m.path << " listed twice";
  }
  EXPECT_EQ(in_frames, listed);
}

TEST(CrashHandler, ReportGivesFullPathsLinkTimeOffsetsAndBuildIds) {
  Outcome o = RunCrashingChild([] { crash_caller(); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  ASSERT_GE(r.frames.size(), 3u) << o.report;
  EXPECT_TRUE(r.complete) << o.report;
  const std::string exe = ExecutablePath();
  std::map<std::string, LoadedObject> objects = LoadedObjects();
  ASSERT_EQ(objects.count(exe), 1u);
  const uint64_t bias = objects[exe].bias;

  // The interrupted PC: the faulting instruction's own address.
  const ReportFrame& leaf = r.frames[0];
  EXPECT_FALSE(leaf.is_return_address);
  EXPECT_EQ(leaf.function, "crash_leaf") << o.report;
  EXPECT_EQ(leaf.module, exe) << o.report;
  EXPECT_EQ(leaf.pc - bias, leaf.module_offset) << o.report;
  EXPECT_EQ(leaf.module_offset - leaf.function_offset,
            LinkAddress(reinterpret_cast<const void*>(&crash_leaf), bias))
      << o.report;
  // A return address: both offsets are of the call, one byte before it.
  const ReportFrame& caller = r.frames[1];
  EXPECT_TRUE(caller.is_return_address);
  EXPECT_EQ(caller.function, "crash_caller") << o.report;
  EXPECT_EQ(caller.module, exe) << o.report;
  EXPECT_EQ(caller.pc - 1 - bias, caller.module_offset) << o.report;
  EXPECT_EQ(caller.module_offset - caller.function_offset,
            LinkAddress(reinterpret_cast<const void*>(&crash_caller), bias))
      << o.report;
  for (const ReportFrame& f : r.frames) {
    EXPECT_EQ(f.is_return_address, f.index != 0) << o.report;
    ASSERT_FALSE(f.module.empty()) << o.report;
    ASSERT_EQ(objects.count(f.module), 1u) << f.module << " is no loaded object's path";
    EXPECT_EQ(f.module_offset, f.pc - objects[f.module].bias - (f.is_return_address ? 1 : 0))
        << o.report;
  }
  // The module list: each object once, with the loader's bias and the build-id of its note.
  ExpectModuleListMatchesFrames(r);
  for (const ReportModule& m : r.modules) {
    ASSERT_EQ(objects.count(m.path), 1u) << m.path;
    EXPECT_EQ(m.bias, objects[m.path].bias) << m.path;
    ASSERT_FALSE(objects[m.path].build_id.empty()) << m.path;  // Debian builds all have one
    EXPECT_EQ(m.build_id, objects[m.path].build_id) << m.path;
  }
}

// Each option that can never work is refused at install, and nothing changes: no handler in this
// process, and in a child with a handler, its earlier options keep working.
TEST(CrashHandler, InstallRefusesOptionsThatCannotWork) {
  struct sigaction before[64];
  constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
  for (int sig : kFatal) ASSERT_EQ(sigaction(sig, nullptr, &before[sig]), 0);

  std::vector<std::pair<std::string, stackwalk::CrashHandlerOptions>> bad;
  std::vector<int> expected;
  auto add = [&](const std::string& what, int error,
                 const std::function<void(stackwalk::CrashHandlerOptions&)>& change) {
    stackwalk::CrashHandlerOptions options;
    change(options);
    bad.emplace_back(what, options);
    expected.push_back(error);
  };
  add("max_frames 0", -EINVAL, [](auto& o) { o.max_frames = 0; });
  add("max_frames -5", -EINVAL, [](auto& o) { o.max_frames = -5; });
  add("max_frames above the limit", -EINVAL,
      [](auto& o) { o.max_frames = stackwalk::kMaxCrashFrames + 1; });
  add("no such method", -EINVAL, [](auto& o) { o.method = static_cast<stackwalk::Method>(42); });
  int unavailable = 0;
  for (auto m : {stackwalk::Method::kFramePointer, stackwalk::Method::kEhFrame,
                 stackwalk::Method::kExidx}) {
    if (stackwalk_method_available(static_cast<stackwalk_method>(m)) == 1) continue;
    ++unavailable;
    add("method " + std::to_string(static_cast<int>(m)) + " (not on this architecture)", -EINVAL,
        [m](auto& o) { o.method = m; });
  }
  EXPECT_GE(unavailable, 1);  // kExidx off arm32; kEhFrame on arm32
  add("fd -1", -EBADF, [](auto& o) { o.fd = -1; });
  int closed = open("/dev/null", O_WRONLY | O_CLOEXEC);
  close(closed);
  add("a closed fd", -EBADF, [closed](auto& o) { o.fd = closed; });
  int read_only = open("/dev/null", O_RDONLY | O_CLOEXEC);
  add("a read-only fd", -EBADF, [read_only](auto& o) { o.fd = read_only; });
  add("a path in no directory", -ENOENT,
      [](auto& o) { o.path = "/nonexistent-stackwalk-dir/crash.txt"; });
  add("snapshot_stack_bytes above the limit", -EINVAL,
      [](auto& o) { o.snapshot_stack_bytes = stackwalk::kMaxSnapshotStackBytes + 1; });
  add("an empty snapshot_path", -EINVAL, [](auto& o) { o.snapshot_path = ""; });
  static const std::string long_path(stackwalk::kMaxSnapshotPath, 'x');
  add("a snapshot_path too long", -ENAMETOOLONG,
      [](auto& o) { o.snapshot_path = long_path.c_str(); });

  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_EQ(stackwalk::InstallCrashHandler(bad[i].second), expected[i]) << bad[i].first;
    for (int sig : kFatal) {
      struct sigaction now;
      ASSERT_EQ(sigaction(sig, nullptr, &now), 0);
      EXPECT_EQ(now.sa_handler, before[sig].sa_handler) << bad[i].first << ": signal " << sig;
      EXPECT_EQ(now.sa_flags, before[sig].sa_flags) << bad[i].first << ": signal " << sig;
    }
  }
  // A refused re-install leaves the installed handler and its options as they were.
  Outcome o = RunCrashingChild([&bad] {
    for (auto& [what, options] : bad) {
      if (stackwalk::InstallCrashHandler(options) == 0) _exit(103);
    }
    crash_caller();
  });
  close(read_only);
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  EXPECT_TRUE(r.complete) << o.report;
  ASSERT_GE(r.frames.size(), 3u) << o.report;  // not max_frames 0 or 1
  EXPECT_EQ(r.frames[0].function, "crash_leaf") << o.report;
}

// A snapshot is written after the frames and says where it went; one that cannot be written
// costs the report nothing. (Its contents: snapshot_test, snapshot_dump_test.py.)
TEST(CrashHandler, SnapshotIsWrittenOrItsFailureReportedAfterACompleteReport) {
  char dir[] = "/tmp/crash_snapshot_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/crash.snapshot";
  const std::string nowhere = "/nonexistent-stackwalk-dir/crash.snapshot";
  for (const std::string& target : {path, nowhere}) {
    Outcome o = RunCrashingChild([&target] {
      stackwalk::CrashHandlerOptions options;
      options.fd = g_report_fd;
      options.snapshot_path = target.c_str();
      options.snapshot_stack_bytes = 16 * 1024;
      if (stackwalk::InstallCrashHandler(options) != 0) _exit(102);
      crash_caller();
    });
    EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
    Report r = Parse(o.report);
    EXPECT_TRUE(r.complete) << o.report;
    EXPECT_EQ(FrameFunction(o.report, 0), "crash_leaf") << o.report;
    EXPECT_EQ(FrameFunction(o.report, 1), "crash_caller") << o.report;
    const size_t line = o.report.find("*** snapshot ");
    ASSERT_NE(line, std::string::npos) << o.report;
    EXPECT_LT(line, o.report.find("*** end of report")) << o.report;
    if (target == path) {
      struct stat st;
      ASSERT_EQ(stat(path.c_str(), &st), 0);
      const std::string said = "*** snapshot " + path + ": " + std::to_string(st.st_size) + " bytes, ";
      EXPECT_NE(o.report.find(said), std::string::npos) << said << "\n" << o.report;
      EXPECT_GT(st.st_size, 1024);
      EXPECT_LT(st.st_size, 16 * 1024 + 64 * 1024);  // the stack bounded by snapshot_stack_bytes
    } else {
      EXPECT_NE(o.report.find("*** snapshot not written: open " + nowhere + ": errno " +
                              std::to_string(ENOENT)),
                std::string::npos)
          << o.report;
    }
  }
  unlink(path.c_str());
  rmdir(dir);
}

TEST(CrashHandler, ModuleListNamesALibraryOpenedAfterInstallByItsFile) {
  Outcome o = RunCrashingChild([] {
    void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(102);
    reinterpret_cast<chain_lib_fault_fn>(dlsym(lib, "chain_lib_fault"))(g_null);
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  ASSERT_FALSE(r.frames.empty()) << o.report;
  char real[PATH_MAX];
  ASSERT_NE(realpath(CHAIN_LIB_PATH, real), nullptr);
  EXPECT_EQ(r.frames[0].module, real) << o.report;
  ExpectModuleListMatchesFrames(r);
  // The same library in this process: its build-id from the loader's view of its notes.
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  std::map<std::string, LoadedObject> objects = LoadedObjects();
  dlclose(lib);
  std::string loaded_build_id;
  for (auto& [path, object] : objects) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) != nullptr && std::string(resolved) == real) {
      loaded_build_id = object.build_id;
    }
  }
  ASSERT_FALSE(loaded_build_id.empty());
  bool found = false;
  for (const ReportModule& m : r.modules) {
    if (m.path != real) continue;
    found = true;
    EXPECT_EQ(m.build_id, loaded_build_id) << o.report;
  }
  EXPECT_TRUE(found) << o.report;
}

#if defined(STACKWALK_SYMBOLIZE)
// The crash of the C fixture (-O0 -g), named with file:line by the command its report prints:
// the faulting line for frame #0, and the line of the call (not the next one, where the return
// address is) for frame #1.
TEST(CrashHandler, ReportRoundTripsThroughStackwalkSymbolize) {
  char report_path[] = "/tmp/stackwalk-crash-report-XXXXXX";
  int report_fd = mkstemp(report_path);
  ASSERT_GE(report_fd, 0);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, report_fd, 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  char fixture[] = CRASH_C_FIXTURE;
  char mode[] = "crash";
  char* argv[] = {fixture, mode, nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, fixture, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(report_fd);
  std::string lines;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) lines.append(buf, n);
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(DiedBy(status, SIGSEGV)) << status;
  int fault_line = 0, call_line = 0;
  ASSERT_EQ(std::sscanf(lines.c_str(), "fault-line %d\ncall-line %d", &fault_line, &call_line), 2)
      << lines;

  std::string report;
  {
    FILE* f = std::fopen(report_path, "r");
    ASSERT_NE(f, nullptr);
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) report.append(buf, n);
    std::fclose(f);
  }
  // The command, as the report's legend gives it, with the report's path for REPORT.
  const std::string marker = "***   grep ";
  size_t at = report.find(marker);
  ASSERT_NE(at, std::string::npos) << report;
  std::string command = report.substr(at + 6, report.find('\n', at) - at - 6);
  size_t placeholder = command.find("REPORT");
  ASSERT_NE(placeholder, std::string::npos) << command;
  command.replace(placeholder, 6, report_path);
  std::string dir = STACKWALK_SYMBOLIZE;
  dir.resize(dir.rfind('/'));
  command = "PATH='" + dir + "':\"$PATH\"; " + command;
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<std::string> named;
  for (char line[4096]; std::fgets(line, sizeof(line), pipe) != nullptr;) {
    named.emplace_back(line);
    if (!named.back().empty() && named.back().back() == '\n') named.back().pop_back();
  }
  EXPECT_EQ(pclose(pipe), 0) << command;
  unlink(report_path);

  Report r = Parse(report);
  ASSERT_GE(r.frames.size(), 3u) << report;
  ASSERT_EQ(named.size(), r.frames.size()) << command << "\n" << report;  // no inlines at -O0
  const std::string source = CRASH_C_SOURCE;
  auto expect_named = [&](size_t i, const std::string& function, int line) {
    // "<function> at <file>:<line>:<column> (<module>+0x<offset>)"
    const std::string prefix = function + " at " + source + ":" + std::to_string(line) + ":";
    EXPECT_EQ(named[i].rfind(prefix, 0), 0u) << named[i] << "\nexpected " << prefix;
    const ReportFrame& f = r.frames[i];
    char token[64];
    std::snprintf(token, sizeof(token), "+0x%llx)", static_cast<unsigned long long>(f.module_offset));
    EXPECT_NE(named[i].find(" (" + f.module + token), std::string::npos) << named[i];
  };
  expect_named(0, "crash_c_leaf", fault_line);
  expect_named(1, "crash_c_caller", call_line);
}
#endif

}  // namespace
