#include "leakcheck/recorded_filter.h"

#include "leakcheck/scan/own_mappings.h"

namespace stackwalk::leakcheck {

constinit RecordedFilter g_recorded_blocks;

bool RecordedFilter::AddFirst(uintptr_t address) {
  std::atomic<uint32_t>* counts = nullptr;
  // Own memory: never a root of the scan (its counts are no pointers anyway), zeroed.
  auto* fresh = static_cast<std::atomic<uint32_t>*>(OwnMap(kBytes));
  if (fresh == nullptr) return false;
  if (counts_.compare_exchange_strong(counts, fresh, std::memory_order_acq_rel)) {
    counts = fresh;
  } else {
    OwnUnmap(fresh, kBytes);  // another thread mapped them first
  }
  counts[Index(address)].fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace stackwalk::leakcheck
