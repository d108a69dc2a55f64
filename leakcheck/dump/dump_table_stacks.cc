#include "leakcheck/dump/dump_table_stacks.h"

#include "leakcheck/program_frames.h"

namespace stackwalk::leakcheck::dump {

TableStacks::TableStacks(const StackTable& table, const std::atomic<ClosedModules*>& closed)
    : table_(table), modules_(&closed) {
  stacks_.reserve(table.size());  // most are listed (the profile's statistics name every stack)
}

void TableStacks::Add(uint32_t id, uint64_t earliest, uint64_t dated_by) {
  void* pcs[StackTable::kMaxFrames];
  const int n = table_.Frames(id, pcs);
  const int first = FirstProgramFrame(pcs, n);
  for (int i = first; i < n; ++i) modules_.Resolve(reinterpret_cast<uintptr_t>(pcs[i]), dated_by);
  stacks_.push_back({id, static_cast<uint8_t>(first), static_cast<uint8_t>(n), earliest, dated_by});
}

DumpStackSource::Head TableStacks::HeadOf(size_t i) const {
  const Listed& s = stacks_[i];
  return {s.id, s.earliest, static_cast<uint32_t>(s.end - s.first)};
}

const DumpFrame* TableStacks::Frames(size_t i, std::vector<DumpFrame>* scratch) {
  const Listed& s = stacks_[i];
  void* pcs[StackTable::kMaxFrames];
  table_.Frames(s.id, pcs);  // the same frames as when added: a stack's never change
  scratch->resize(static_cast<size_t>(s.end - s.first));
  DumpFrame* to = scratch->data();
  for (int f = s.first; f < s.end; ++f) {
    *to++ = modules_.Resolve(reinterpret_cast<uintptr_t>(pcs[f]), s.dated_by);
  }
  return scratch->data();
}

DumpStackStats TableStackStats::At(size_t i) const {
  DumpStackStats s;
  s.stack_id = ids_[i];
  StackStatsTotals totals;
  if (!table_.Totals(s.stack_id, final_epoch_, &totals)) return s;
  s.allocations = totals.allocations;
  s.allocated_bytes = totals.allocated_bytes;
  s.live_bytes = totals.live_bytes;
  s.live_blocks = totals.live_blocks;
  s.temporary = totals.temporary;
  s.temporary_bytes = totals.temporary_bytes;
  s.peak_bytes = totals.peak_bytes;
  s.peak_blocks = totals.peak_blocks;
  return s;
}

}  // namespace stackwalk::leakcheck::dump
