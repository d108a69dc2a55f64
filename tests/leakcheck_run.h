// Running stackwalk-leakcheck from a test: the launcher with arguments, its report in a file of
// its own, and the block of one leak.
#ifndef STACKWALK_TESTS_LEAKCHECK_RUN_H_
#define STACKWALK_TESTS_LEAKCHECK_RUN_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace {

struct LaunchResult {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string report;
};

// Runs the launcher with `args`, the report going to a file of its own.
LaunchResult Leakcheck(const std::string& args) {
  static int serial = 0;
  std::string report = ::testing::TempDir() + "leaks." + std::to_string(getpid()) + "." +
                       std::to_string(serial++) + ".txt";
  std::remove(report.c_str());
  std::string command = std::string(STACKWALK_LEAKCHECK) + " --output " + report + " " + args +
                        " >/dev/null 2>&1";
  int raw = std::system(command.c_str());
  LaunchResult run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  run.report = text.str();
  return run;
}

// The block of the report for the leak "Leak of <what> ...", up to the next blank line.
// `what` as "300 bytes in 3 allocations": the entry whose headline is LeakSanitizer's "Direct
// leak of 300 byte(s) in 3 object(s) allocated from:" (or "Indirect leak of", "Reachable:"),
// from its headline through its thread line.
std::string LeakBlock(const std::string& report, const std::string& what) {
  unsigned long long bytes = 0, count = 0;
  if (std::sscanf(what.c_str(), "%llu %*s in %llu", &bytes, &count) != 2) return "";
  size_t start = report.find(" " + std::to_string(bytes) + " byte(s) in " +
                             std::to_string(count) + " object(s) allocated from:");
  if (start == std::string::npos) return "";
  start = report.rfind('\n', start) + 1;
  size_t end = report.find("\n\n", start);
  return report.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Everything `command` writes to stdout.
std::string Output(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// marker name -> line, from a fixture source.
std::map<std::string, int> Sites(const char* source) {
  std::map<std::string, int> sites;
  std::ifstream in(source);
  std::string line;
  std::regex marker("LEAK-SITE\\(([^)]+)\\)");
  for (int number = 1; std::getline(in, line); ++number) {
    std::smatch m;
    if (std::regex_search(line, m, marker)) sites[m[1].str()] = number;
  }
  return sites;
}

}  // namespace

#endif  // STACKWALK_TESTS_LEAKCHECK_RUN_H_
