// The launcher as the program's parent (--name-in=launcher, issue 18): it forks, the child execs
// the program with the preload writing its reports as leak dumps (leakcheck/dump/) to a pipe the
// launcher handed over, and the launcher names and renders each dump as it arrives, forwards the
// signals a user sends it, and ends as the program ended. The program then carries no
// symbolizer: naming is the launcher's, after the fact, out of the program's time and memory.
#ifndef STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_
#define STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_

#include <string>

namespace stackwalk::leakcheck {

// The environment variable that names the dump pipe's descriptor in the program. The checked
// process keeps it through its own execs (wrapper scripts exec the real program under the same
// pid); the preload closes it in every process it does not check, so that they do not hold it.
constexpr char kDumpDescriptorVariable[] = "STACKWALK_LEAKCHECK_DUMP_FD";

struct SupervisorSettings {
  std::string output;    // --output ("%p": the reporting process's pid); stderr when empty
  std::string dump;      // --dump: the raw dumps kept there too ("%p" likewise); none when empty
  int exitcode = 0;      // --exitcode: the status when the program's at-exit report has leaks
  int report_signal = 0; // forwarded like the others, whichever it is
};

// Runs argv[0] (found on PATH) with the environment as it is (LD_PRELOAD and the options already
// set; the options must ask for the dump to /proc/self/fd/<kDumpDescriptor> and no naming), and
// returns the exit status for the launcher; a program killed by a signal makes the launcher kill
// itself with the same signal (its own core dump disabled) and this does not return.
int SuperviseProgram(char** argv, const SupervisorSettings& settings);

// The program's descriptor for the dump pipe: high, out of the way of the program's own.
constexpr int kDumpDescriptor = 499;

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_
