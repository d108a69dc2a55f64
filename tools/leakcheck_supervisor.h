// The launcher as the program's parent, in either naming mode (issues 18, 17): it forks, the child
// execs the program with the preload; the launcher forwards the signals a user sends it and ends
// as the program ended. Naming in the launcher (--name-in=launcher), the program writes its
// reports as leak dumps (leakcheck/dump/) to a pipe the launcher handed over, and the launcher
// names and renders each as it arrives: the program carries no symbolizer. Either way the
// program's tables live in a record region the launcher handed over too
// (leakcheck/record_region.h), which it reports if the program dies of a signal, SIGKILL included;
// each forked child hands it a region of its own (leakcheck_children.h), reported likewise.
#ifndef STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_
#define STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_

#include <cstdint>
#include <string>

#include "leakcheck/options.h"

namespace stackwalk::leakcheck {

// The environment variable that names the dump pipe's descriptor in the program. The checked
// process keeps it through its own execs (wrapper scripts exec the real program under the same
// pid); the preload closes it in every process it does not check, so that they do not hold it.
constexpr char kDumpDescriptorVariable[] = "STACKWALK_LEAKCHECK_DUMP_FD";

struct SupervisorSettings {
  // True (--name-in=launcher): the program writes its reports as dumps to the launcher's pipe and
  // the launcher names them. False (the default): the program names and writes its own reports
  // (and applies --exitcode); the launcher only waits, forwards signals, passes the status
  // through and, after a death by signal, reports the program's record region.
  bool name_in_launcher = true;
  // True (--wait-children=1, the default): after the program ends the launcher waits for its
  // checked descendants, until the dump pipe's last write end is closed (each checked process
  // holds one) and every forked child that handed over its record region has ended, so that a
  // child reporting after its parent ended is not lost. False (daemons, which outlive the program
  // for good): it reads what is in the pipe, finishes a dump begun, reports the children ended by
  // then, and ends.
  bool wait_children = true;
  // The launcher's options as checked. What the launcher reads of them: where reports and dumps
  // go (output, dump: "%p" is the reporting process's pid), the report signal (forwarded like the
  // others), sampling (a record's blocks are a sample), and how a record's report is rendered
  // (json, show_reachable, the library filters, suppressions; the program's dumps carry their own).
  Options options;

  // Whether reports are rendered: without naming in the launcher, --program-report=0 asks for
  // the record's dump alone.
  bool render() const { return name_in_launcher || options.program_report; }
  // The status when the program's at-exit report has leaks, if the launcher decides it (naming in
  // the program, the program applies --exitcode itself); 0: none.
  int exitcode() const { return name_in_launcher ? options.exitcode : 0; }
};

// Runs argv[0] (found on PATH) with the environment as it is (LD_PRELOAD and the options already
// set; naming in the launcher, the options must ask for the dump to /proc/self/fd/<kDumpDescriptor>
// and no naming), the program's tables in a record region the launcher reads if it dies of a
// signal without its report at exit (leakcheck/record_region.h), and
// returns the exit status for the launcher; a program killed by a signal makes the launcher kill
// itself with the same signal (its own core dump disabled) and this does not return.
int SuperviseProgram(char** argv, const SupervisorSettings& settings);

// The program's descriptor for the dump pipe: high, out of the way of the program's own.
constexpr int kDumpDescriptor = 499;

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_TOOLS_LEAKCHECK_SUPERVISOR_H_
