// DecodeDumps: the leak dumps in a file's bytes (docs/dump-format.md; a program that reported
// several times appended one dump per report). Never reads outside the bytes it is given, never
// trusts a count or a length before checking it against them: a truncated or corrupt dump gives
// an error that says what and at which byte, and what could be read before it (the best partial
// report). Unknown sections are skipped; a newer major version is refused.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_DECODE_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::leakcheck::dump {

struct DecodedDumps {
  // Each dump read, in file order; the last one may be partial when `error` is set.
  std::vector<DumpContents> dumps;
  // Empty when every byte was a well-formed dump; else the first problem, e.g. "truncated at
  // byte 4711 (the dump at byte 0 says it has 5000 bytes)".
  std::string error;
};

// What of each dump to keep.
enum class DecodeScope {
  kEverything,
  // What a leak report renders (dump_report.h): the stacks of no live block (listed for the
  // profile's views) and the stack statistics are read past, not kept: the launcher naming a
  // cmake configure's exit dump held its 951,716 frames (15 MB) to render two blocks' stacks.
  kLeakReport,
};

DecodedDumps DecodeDumps(const uint8_t* data, size_t size,
                         DecodeScope scope = DecodeScope::kEverything);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_DECODE_H_
