#include "crash_child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "stackwalk/crash_handler.h"

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

namespace crash_test {

// An exception escaping `body` calls std::terminate here, as in a program without a handler
// (the test framework would otherwise catch it).
static void RunNoexcept(const std::function<void()>& body) noexcept { body(); }

int g_report_fd = -1;

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

static uint64_t Hex(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 16); }

// "NAME+0xOFFSET" into its parts; false if it is not of that form.
static bool SplitPlus(const std::string& s, std::string* name, uint64_t* offset) {
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

std::string FrameFunction(const std::string& report, int index) {
  Report r = Parse(report);
  return index < static_cast<int>(r.frames.size()) ? r.frames[index].function : "";
}

bool DiedBy(int status, int sig) { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

}  // namespace crash_test
