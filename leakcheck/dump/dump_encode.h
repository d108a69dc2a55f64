// EncodeDump: a DumpContents as the bytes of one leak dump (docs/dump-format.md). Names nothing
// and reads no process state: plain data in, bytes out. Not signal-safe: allocates.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_

#include <string>

#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::leakcheck::dump {

std::string EncodeDump(const DumpContents& contents);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_
