// Options: the leak checker's settings, from STACKWALK_LEAKCHECK="key=value:key=value", e.g.
//   STACKWALK_LEAKCHECK=min_size=16:max_frames=32:method=fp:output=/tmp/leaks.txt:exitcode=23
// and format=text|json, report_at_exit=0|1, report_signal=SIGUSR2 (a name or a number),
// libraries=GLOB,GLOB (only leaks with a frame in a matching object are reported; in-process, only
// these objects are hooked) and ignore_libraries=GLOB,GLOB (leaks with a frame in a matching
// object are not reported; in-process, these are not hooked). A glob matches an object's path or
// its file name. follow_exec=1 checks the programs the checked program starts too (by default,
// under the launcher, they run unchecked).
#ifndef STACKWALK_LEAKCHECK_OPTIONS_H_
#define STACKWALK_LEAKCHECK_OPTIONS_H_

#include <cstdint>

namespace stackwalk::leakcheck {

struct Options {
  uint64_t min_size = 0;  // smaller allocations are not recorded
  int max_frames = 32;    // frames kept per allocation (at most StackTable::kMaxFrames)
  int method = 0;         // a stackwalk_method: auto (0), fp (1), ehframe (2)
  char output[256] = {};  // the report's file; stderr when empty
  int exitcode = 0;       // if nonzero, the process exits with it when leaks are found
  bool report_at_exit = true;
  bool json = false;      // format=json: the report as one JSON object
  int report_signal = 0;  // if nonzero, each delivery of this signal writes a report
  bool follow_exec = false;  // keep the preload for programs this one executes
  bool unreachable_only = false;  // report only blocks no pointer chain from the roots reaches
  char libraries[512] = {};         // comma-separated globs; empty: every object
  char ignore_libraries[512] = {};  // comma-separated globs
};

// Whether `path` (an object's path) matches one of the comma-separated globs of `patterns`, by
// its whole path or its file name.
bool MatchesAnyPattern(const char* patterns, const char* path);

// Parses `text` (may be null). Unknown keys and bad values are reported on stderr, counted in
// `*problems` if given, and ignored.
// Signal safety: async-signal-safe (no allocation), for use before malloc is ready.
Options ParseOptions(const char* text, int* problems = nullptr);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_OPTIONS_H_
