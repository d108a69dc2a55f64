// CodeMap: answers "is this address inside loaded code?" for the walkers that must tell code
// pointers from data (every frame-pointer step, and the walk's check that a table step's caller
// is code, through walk/native_walk.h's StepEnv). Reads the pinned module snapshot, and
// asks glibc's lock-free _dl_find_object about PCs of libraries loaded since the snapshot.
#ifndef STACKWALK_SRC_CORE_CODE_MAP_H_
#define STACKWALK_SRC_CORE_CODE_MAP_H_

#include <cstdint>

#include "core/module_map.h"

namespace stackwalk::internal {

class CodeMap {
 public:
  // `snapshot` may be null (before the first build): then any nonzero address counts as code,
  // and validation rests on the stack checks alone.
  explicit CodeMap(const ModuleSnapshot* snapshot) : snapshot_(snapshot) {}

  // True if `pc` lies in an executable segment of a snapshot module, or, for an object loaded
  // since, anywhere in it (_dl_find_object knows objects, not segments). 0 is never code.
  // Signal safety: async-signal-safe.
  bool IsCode(uint64_t pc) const;

 private:
  const ModuleSnapshot* snapshot_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_CODE_MAP_H_
