// EncodeDump: a DumpContents as the bytes of one leak dump (docs/dump-format.md). Names nothing
// and reads no process state but through the stack source it is given (dump_stack_source.h):
// plain data in, bytes out. Not signal-safe: allocates.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_stack_source.h"
#include "leakcheck/dump/dump_stats_source.h"

namespace stackwalk::leakcheck::dump {

std::string EncodeDump(const DumpContents& contents);

// The most bytes the streaming EncodeDump hands `write` at once: 1 MiB, what a pipe to the
// launcher holds (F_SETPIPE_SZ), so that the launcher wakes once a piece, ~21 times for clang's
// 21 MB exit dump instead of ~330 at 64 KiB.
constexpr size_t kDumpPieceBytes = size_t{1} << 20;

// The same bytes, handed to `write` in pieces of at most kDumpPieceBytes as they are made, so
// that the dump is never whole in memory (lengths are measured by a first pass over `contents`).
// Returns how many bytes it handed over.
uint64_t EncodeDump(const DumpContents& contents,
                    const std::function<void(const char*, size_t)>& write);

// The same, the stacks section written from `stacks` instead of contents.stacks (which is not
// read): the bytes of contents with the stacks `stacks` gives.
std::string EncodeDump(const DumpContents& contents, DumpStackSource& stacks);
uint64_t EncodeDump(const DumpContents& contents, DumpStackSource& stacks,
                    const std::function<void(const char*, size_t)>& write);

// The same, the stack statistics section (when contents.has_stack_stats) written from `stats`
// instead of contents.stack_stats (which is not read).
std::string EncodeDump(const DumpContents& contents, DumpStackSource& stacks,
                       const DumpStatsSource& stats);
uint64_t EncodeDump(const DumpContents& contents, DumpStackSource& stacks,
                    const DumpStatsSource& stats,
                    const std::function<void(const char*, size_t)>& write);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_ENCODE_H_
