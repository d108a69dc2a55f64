// CollectDump: a leak report's raw record (dump_contents.h) from the program's state, after the
// classify stage and before any naming: the header and summary figures the collect stage
// gathered, the blocks with their verdicts, the stacks (their frames read from the stack table
// as they are encoded, dump_table_stacks.h), the modules, the threads, and the pointers between
// leaked blocks (read through a SafeReader: the world has resumed and another thread may free a
// block meanwhile). Names nothing.
// Not signal-safe: allocates (under the report's ReentryGuard: the checker's own memory).
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_COLLECT_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_COLLECT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_table_stacks.h"
#include "leakcheck/report_model.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck::dump {

// A dump to encode: EncodeDump(contents, *stacks, *stats, ...) (dump_encode.h).
struct CollectedDump {
  DumpContents contents;                // its `stacks` empty: they are in `stacks`
  std::unique_ptr<TableStacks> stacks;  // the live stacks by id, then those none of whose
                                        // blocks is live (the profile's statistics name them)
  std::unique_ptr<TableStackStats> stats;  // the statistics section (contents.stack_stats empty)
};

// `report` has the collect stage's header and summary (and the check's stop figures); blocks[0,
// n) are sorted by address, verdicts[i] blocks[i]'s (before any suppression); `earliest[id]`
// the sequence number of stack id's earliest of them (EarliestBlocks, report_collect.h).
CollectedDump CollectDump(State& state, const LeakReport& report, const Allocation* blocks,
                          size_t n, const std::vector<Verdict>& verdicts,
                          const std::vector<uint64_t>& earliest);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_COLLECT_H_
