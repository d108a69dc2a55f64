// RootSet (roots.h): the list of roots, in own memory.
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/roots.h"

namespace stackwalk::leakcheck {

const char* RootKindName(RootKind kind) {
  switch (kind) {
    case RootKind::kGlobals: return "globals";
    case RootKind::kRegisters: return "registers";
    case RootKind::kStack: return "stacks";
    case RootKind::kStaticTls: return "static_tls";
    case RootKind::kDynamicTls: return "dynamic_tls";
    case RootKind::kAnonymous: return "anonymous";
    case RootKind::kCallerStack: return "caller";
    case RootKind::kLoaderBlocks: return "loader_blocks";
  }
  return "?";
}

RootSet::~RootSet() { OwnUnmap(ranges_, capacity_ * sizeof(RootRange)); }

void RootSet::Add(const RootRange& range) {
  if (range.hi <= range.lo) return;
  if (count_ == capacity_) {
    const size_t grown = capacity_ == 0 ? 1024 : capacity_ * 2;
    void* memory = ranges_ == nullptr
                       ? OwnMap(grown * sizeof(RootRange))
                       : OwnRemap(ranges_, capacity_ * sizeof(RootRange), grown * sizeof(RootRange));
    if (memory == nullptr) {
      overflowed_ = true;
      return;
    }
    ranges_ = static_cast<RootRange*>(memory);
    capacity_ = grown;
  }
  ranges_[count_++] = range;
  bytes_[static_cast<int>(range.kind)] += range.hi - range.lo;
}

}  // namespace stackwalk::leakcheck
