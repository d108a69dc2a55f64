// ReadRecord: a leak dump (dump_contents.h) made from a record region (record_format.h) the
// checked program left behind: the blocks it held when it ended, with their stacks as (module,
// offset) frames from the module list it wrote last, and no verdicts (no memory is left to scan:
// every block is kLive). What the launcher reports for a program killed by a signal (issue 17).
// The region may be torn at any byte (the program died mid-write) or corrupt: every row, offset,
// count and pointer is checked against the region's bounds, nothing is followed twice, and what
// could not be read is said in `problems`; it never crashes or loops. Plain bytes in: fuzzed.
#ifndef STACKWALK_LEAKCHECK_DUMP_RECORD_READ_H_
#define STACKWALK_LEAKCHECK_DUMP_RECORD_READ_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::leakcheck::dump {

struct RecordReading {
  bool begun = false;                 // the region has the magic: the program started recording
  bool exit_reported = false;         // the program wrote its report at exit
  bool executed = false;              // the program exec'd: the record is of an image gone
  DumpContents dump;                  // the blocks live at the end, unclassified
  std::vector<std::string> problems;  // what could not be read, one line each
};

// `occasion` as the report names it ("killed by SIGKILL").
RecordReading ReadRecord(const uint8_t* region, size_t size, const std::string& occasion);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_RECORD_READ_H_
