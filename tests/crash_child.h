// The crash tests' harness: the functions that crash (built without frame pointers, so the
// walk from the fault needs CFI), a child that runs one under the crash handler writing to a
// pipe, and the report parsed back into frames and modules (crash_handler.h describes its lines).
// crash_handler_test checks how a crash ends and what the handler refuses; crash_report_test
// what the report says of frames and modules.
#ifndef STACKWALK_TESTS_CRASH_CHILD_H_
#define STACKWALK_TESTS_CRASH_CHILD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

extern "C" {
extern volatile int* volatile g_null;
int crash_leaf(volatile int* p);    // loads *p: no frame at all
int crash_caller();                 // crash_leaf(g_null)
int crash_through_libstdcxx();      // an uncaught std::out_of_range: abort()
int crash_recurse(int depth);       // recurses until the stack overflows
}

namespace crash_test {

struct Outcome {
  std::string report;
  int status = 0;
};

// The report pipe's write end, in the child: for bodies that re-install the handler.
extern int g_report_fd;

// Runs `body` in a child with the crash handler writing to a pipe; returns its report and
// wait status. Fails the test if the child takes more than 20 s.
Outcome RunCrashingChild(const std::function<void()>& body);

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

// The report's frames and modules; each line not of the documented form fails the test.
Report Parse(const std::string& text);
// The function named on report line "#<index> ...", or "".
std::string FrameFunction(const std::string& report, int index);
bool DiedBy(int status, int sig);

}  // namespace crash_test

#endif  // STACKWALK_TESTS_CRASH_CHILD_H_
