// TableStacks: a dump's stacks read from the program's stack table (leakcheck/stack_table.h) as
// the stacks section is written (a DumpStackSource), instead of copied out as DumpFrames first:
// a stack costs its id, its earliest block and the time its frames' objects are dated by (24
// bytes), not 16 bytes a frame and an allocation (clang's exit dump: 45,126 stacks, 1.3 million
// frames, ~21 MB). Each stack's frames are resolved to (module, offset) twice, the same way
// (ModuleIndexer): when it is added, so that the modules section, written before the stacks, lists
// every module they are in; and when it is written. A frame whose object was replaced in between
// (a dlclose, then a dlopen at its address) is written with the object it was in, listed then;
// one in no listed object as a PC in no known object, never with a module the dump lacks. Not
// signal-safe: allocates, reads the module map.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_TABLE_STACKS_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_TABLE_STACKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/closed_modules.h"
#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_modules.h"
#include "leakcheck/dump/dump_stack_source.h"
#include "leakcheck/dump/dump_stats_source.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck::dump {

class TableStacks final : public DumpStackSource {
 public:
  // `table` and `closed` (State::closed: null until the process's first dlclose, which may come
  // while the dump is written) outlive this.
  TableStacks(const StackTable& table, const std::atomic<ClosedModules*>& closed);

  // Lists stack `id`'s program frames (without the checker's own, report_collect.h): `earliest`
  // its earliest live block's sequence number (UINT64_MAX: none live), their objects those the
  // stack had at sequence number `dated_by` (ModuleIndexer::Resolve's `earliest`). An id the
  // table does not know is a stack of no frames.
  void Add(uint32_t id, uint64_t earliest, uint64_t dated_by);

  // The modules the added stacks' frames are in, in the order of their indices; call once, after
  // the last Add.
  std::vector<DumpModule> TakeModules() { return modules_.TakeModules(); }

  size_t size() const override { return stacks_.size(); }
  Head HeadOf(size_t i) const override;
  const DumpFrame* Frames(size_t i, std::vector<DumpFrame>* scratch) override;

 private:
  struct Listed {
    uint32_t id;
    uint8_t first;  // the first program frame of the table's (StackTable::kMaxFrames at most)
    uint8_t end;
    uint64_t earliest;
    uint64_t dated_by;
  };
  static_assert(StackTable::kMaxFrames <= UINT8_MAX, "a frame index is a byte");

  const StackTable& table_;
  ModuleIndexer modules_;
  std::vector<Listed> stacks_;
};

// The stack statistics section read from the stack table as it is written: 4 bytes a listed
// stack (its id) instead of 72. Each pass reads the figures afresh (StackTable::Totals): other
// threads run while a dump is written, so figures read later are later ones (the section's size
// is the same: the stacks listed are fixed when added).
class TableStackStats final : public DumpStatsSource {
 public:
  // `table` outlives this; `final_epoch`: the peak epoch the peak figures are of.
  TableStackStats(const StackTable& table, uint64_t final_epoch)
      : table_(table), final_epoch_(final_epoch) {}

  // Lists stack `id`; ids are added in increasing order.
  void Add(uint32_t id) { ids_.push_back(id); }
  void Reserve(size_t n) { ids_.reserve(n); }

  uint64_t final_epoch() const { return final_epoch_; }
  size_t size() const override { return ids_.size(); }
  DumpStackStats At(size_t i) const override;

 private:
  const StackTable& table_;
  const uint64_t final_epoch_;
  std::vector<uint32_t> ids_;
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_TABLE_STACKS_H_
