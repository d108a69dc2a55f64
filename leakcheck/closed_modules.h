// ClosedModules: objects that dlclose unloaded, with where they were mapped and when, so the
// report can still name frames of allocations made in them before they went away. The
// dlclose hooks (preloaded and PLT/GOT) take a list of the loaded objects before the real call
// and hand it here after; whatever vanished is kept. Not for the allocation path.
#ifndef STACKWALK_LEAKCHECK_CLOSED_MODULES_H_
#define STACKWALK_LEAKCHECK_CLOSED_MODULES_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "leakcheck/loaded_objects.h"

namespace stackwalk::leakcheck {

class ClosedModules {
 public:
  // Keeps every object of `before` that is no longer loaded, stamped with `sequence`.
  void RecordUnloaded(const std::vector<LoadedObject>& before, uint64_t sequence);
  // The object that held `pc` for an allocation made at `allocated_at`: one unloaded after it.
  // Returns false if none did.
  bool Find(uintptr_t pc, uint64_t allocated_at, LoadedObject* out) const;

 private:
  mutable std::mutex mutex_;
  std::vector<LoadedObject> closed_;
};

struct State;

// Calls `real_dlclose(handle)` and keeps what it unloaded in the state's registry (both dlclose
// hooks: the preloaded one and the in-process one). Allocates (under a ReentryGuard).
int DlcloseRemembering(State& state, int (*real_dlclose)(void*), void* handle);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_CLOSED_MODULES_H_
