// The collect stage of a leak report (report_model.h): a consistent copy of the live-allocation
// table, each stack's program frames, and the figures of the process the report's header gives.
// Reads the recording's tables; changes nothing in them. Not signal-safe: allocates, except
// while the table's shard locks are held (the copy goes to mmap'ed memory).
#ifndef STACKWALK_LEAKCHECK_REPORT_COLLECT_H_
#define STACKWALK_LEAKCHECK_REPORT_COLLECT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/program_frames.h"
#include "leakcheck/report_model.h"
#include "leakcheck/stack_table.h"
#include "leakcheck/state.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {

// A copy of the live allocations, taken as one consistent view (AllocationTable::ForEach), in
// mmap'ed memory: the table's shard locks are held while it is taken, so nothing here may call
// malloc (whose hook would take them again). Empty if the memory could not be mapped.
class LiveSnapshot {
 public:
  explicit LiveSnapshot(AllocationTable& table);
  ~LiveSnapshot();
  LiveSnapshot(const LiveSnapshot&) = delete;
  LiveSnapshot& operator=(const LiveSnapshot&) = delete;

  Allocation* begin() { return items_; }
  Allocation* end() { return items_ + size_; }
  const Allocation* begin() const { return items_; }
  const Allocation* end() const { return items_ + size_; }
  size_t size() const { return size_; }

 private:
  Allocation* items_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t size_ = 0;
};

// The sequence number of the earliest of `blocks` of each stack, by stack id (UINT64_MAX: none):
// all a dump needs of the stacks, whose frames it reads from the table itself.
std::vector<uint64_t> EarliestBlocks(const Allocation* blocks, size_t n, const StackTable& stacks);

// The stacks with a live block (`earliest`, EarliestBlocks'), by stack id: each one's program
// frames (from the program's call of the allocator outwards: the capture starts inside the
// checker's hooks, whose frames are left out, program_frames.h) and its earliest block.
std::vector<NamedStack> CollectStacks(const std::vector<uint64_t>& earliest,
                                      const StackTable& stacks);

// A report's header: occasion, number, process id and program (several checked processes may
// report to one stderr), and the summary's figures of the tables (peak, own memory, counts).
void CollectHeader(State& state, const char* occasion, int number, LeakReport* report);

// Fills in each thread's name, kernel id and peak (entries and thread lines) from the registry.
void LabelThreads(const ThreadRegistry& threads, LeakReport* report);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_COLLECT_H_
