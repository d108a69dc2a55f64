// ClosedModules: when each dlclose of the program happened, so that the report can name frames
// of allocations made in an object before dlclose unloaded it. The objects themselves (path,
// load bias, where they were mapped) are the module map's history of unloaded objects
// (src/core/module_map.h, the library's one); what is kept here is the allocation sequence
// number of each dlclose and the module map generations around it. The dlclose hooks (preloaded
// and PLT/GOT) refresh the module map before and after the real call. Not for the allocation
// path.
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
  // A dlclose at allocation sequence `sequence`: what the module map's snapshots from
  // `generation_before` up to (not including) `generation_after` had and later ones lack went
  // then.
  void RecordDlclose(uint64_t generation_before, uint64_t generation_after, uint64_t sequence);
  // The object that held the call of return address `pc` (at pc - 1) for an allocation made at
  // `allocated_at`: the earliest unloaded after it (closed_at set). Returns false if none did.
  bool Find(uintptr_t pc, uint64_t allocated_at, LoadedObject* out) const;

 private:
  struct Close {
    uint64_t generation_before, generation_after, sequence;
  };
  // The sequence number of the dlclose that unloaded an object last seen in snapshot
  // `generation`, or 0 if no recorded dlclose did.
  uint64_t ClosedAt(uint64_t generation) const;

  mutable std::mutex mutex_;
  std::vector<Close> closes_;
};

struct State;

// Calls `real_dlclose(handle)` and keeps what it unloaded in the state's registry (both dlclose
// hooks: the preloaded one and the in-process one). Allocates (under a ReentryGuard).
int DlcloseRemembering(State& state, int (*real_dlclose)(void*), void* handle);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_CLOSED_MODULES_H_
