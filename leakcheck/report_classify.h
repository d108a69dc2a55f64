// The classify stage of a leak report (report_model.h): a verdict for each live block. With a
// scan, the reachability scan (reachability.h) tells reachable blocks from unreachable ones;
// without, every block is kLive. Not signal-safe: allocates, reads other threads' memory.
#ifndef STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_
#define STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/report_model.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {

// One verdict per block of `blocks`, index for index. With `scan`, first sorts `blocks` by
// address (what the scan needs) and scans from the roots reachability.h names; this thread's
// stack is scanned from `stack_pointer` up (a frame of the caller above the scan's own copies of
// block addresses). Without, leaves `blocks` as they are and calls every one kLive.
std::vector<Verdict> ClassifyBlocks(Allocation* blocks, size_t n, bool scan,
                                    const ThreadRegistry& threads, uint32_t self_serial,
                                    uintptr_t stack_pointer);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_
