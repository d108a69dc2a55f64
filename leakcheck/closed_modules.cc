#include "leakcheck/closed_modules.h"

#include <algorithm>

#include "leakcheck/recording.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

void ClosedModules::RecordUnloaded(const std::vector<LoadedObject>& before, uint64_t sequence) {
  std::vector<LoadedObject> after = ListLoadedObjects();
  std::lock_guard<std::mutex> hold(mutex_);
  for (const LoadedObject& o : before) {
    bool still_loaded = std::any_of(after.begin(), after.end(), [&](const LoadedObject& a) {
      return a.bias == o.bias && a.start == o.start && a.path == o.path;
    });
    if (still_loaded || o.path.empty() || o.end == 0) continue;
    closed_.push_back(o);
    closed_.back().closed_at = sequence;
  }
}

bool ClosedModules::Find(uintptr_t pc, uint64_t allocated_at, LoadedObject* out) const {
  std::lock_guard<std::mutex> hold(mutex_);
  // The earliest unloading after the allocation: the object that was mapped there then.
  const LoadedObject* best = nullptr;
  for (const LoadedObject& o : closed_) {
    if (pc < o.start || pc >= o.end || o.closed_at <= allocated_at) continue;
    if (best == nullptr || o.closed_at < best->closed_at) best = &o;
  }
  if (best == nullptr) return false;
  *out = *best;
  return true;
}

int DlcloseRemembering(State& state, int (*real_dlclose)(void*), void* handle) {
  ReentryGuard own;
  std::vector<LoadedObject> before = ListLoadedObjects();
  const int result = real_dlclose(handle);
  const uint64_t closed_at = state.allocations.next_sequence();
  ClosedModuleRegistry(state).RecordUnloaded(before, closed_at);
  // Allocations after this get numbers above it (see State::sequence_floor).
  state.sequence_floor.store(closed_at, std::memory_order_relaxed);
  return result;
}

}  // namespace stackwalk::leakcheck
