// Options: the leak checker's settings, from STACKWALK_LEAKCHECK="key=value:key=value", e.g.
//   STACKWALK_LEAKCHECK=min_size=16:max_frames=32:method=fp:output=/tmp/leaks.txt:exitcode=23
// and format=text|json, report_at_exit=0|1.
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
};

// Parses `text` (may be null). Unknown keys and bad values are reported on stderr and ignored.
// Signal safety: async-signal-safe (no allocation), for use before malloc is ready.
Options ParseOptions(const char* text);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_OPTIONS_H_
