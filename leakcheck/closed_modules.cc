#include "leakcheck/closed_modules.h"

#include "core/module_map.h"
#include "leakcheck/recording.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

void ClosedModules::RecordDlclose(uint64_t generation_before, uint64_t generation_after,
                                  uint64_t sequence) {
  std::lock_guard<std::mutex> hold(mutex_);
  closes_.push_back(Close{generation_before, generation_after, sequence});
}

uint64_t ClosedModules::ClosedAt(uint64_t generation) const {
  uint64_t at = 0;
  for (const Close& c : closes_) {
    if (generation >= c.generation_before && generation < c.generation_after &&
        (at == 0 || c.sequence < at)) {
      at = c.sequence;
    }
  }
  return at;
}

bool ClosedModules::Find(uintptr_t pc, uint64_t allocated_at, LoadedObject* out) const {
  std::lock_guard<std::mutex> hold(mutex_);
  // The earliest unloading after the allocation: the object that was mapped there then.
  struct Search {
    const ClosedModules* self = nullptr;
    uint64_t allocated_at = 0;
    bool found = false;
    LoadedObject best;
  } search;
  search.self = this;
  search.allocated_at = allocated_at;
  // Every frame is a return address: its object is the one holding the call, a byte back (as
  // the loaded objects' lookup and the symbolizer take it).
  internal::ModuleMap::Global().VisitUnloaded(
      pc - 1,
      [](const internal::UnloadedModule& u, void* context) {
        auto* s = static_cast<Search*>(context);
        const uint64_t closed_at = s->self->ClosedAt(u.unloaded_after_generation);
        if (closed_at == 0 || closed_at <= s->allocated_at) return false;
        if (!s->found || closed_at < s->best.closed_at) {
          s->found = true;
          s->best.path = u.path;
          s->best.bias = u.load_bias;
          s->best.start = u.extent.lo;
          s->best.end = u.extent.hi;
          s->best.closed_at = closed_at;
        }
        return false;  // every one: the earliest counts
      },
      &search);
  if (!search.found) return false;
  *out = search.best;
  return true;
}

int DlcloseRemembering(State& state, int (*real_dlclose)(void*), void* handle) {
  ReentryGuard own;
  // The module map before and after: its rebuild after the call keeps what went in its history.
  internal::ModuleMap& map = internal::ModuleMap::Global();
  map.RefreshIfChanged();
  const uint64_t generation_before = map.generation();
  const int result = real_dlclose(handle);
  const uint64_t closed_at = state.allocations.next_sequence();
  map.RefreshIfChanged();
  ClosedModuleRegistry(state).RecordDlclose(generation_before, map.generation(), closed_at);
  // Allocations after this get numbers above it (see State::sequence_floor).
  state.sequence_floor.store(closed_at, std::memory_order_relaxed);
  return result;
}

}  // namespace stackwalk::leakcheck
