// NativeExidxLocator: the .ARM.exidx index of this process's loaded objects: glibc's lock-free
// _dl_find_object (its dlfo_eh_frame/dlfo_eh_count are the index on ARM), else the pinned
// module snapshot.
#ifndef STACKWALK_SRC_EXIDX_NATIVE_EXIDX_LOCATOR_H_
#define STACKWALK_SRC_EXIDX_NATIVE_EXIDX_LOCATOR_H_

#include <cstdint>

#include "core/module_map.h"
#include "exidx/exidx_table.h"

namespace stackwalk::internal {

class NativeExidxLocator {
 public:
  explicit NativeExidxLocator(const ModuleSnapshot* snapshot) : snapshot_(snapshot) {}
  // Signal safety: async-signal-safe.
  bool FindExidx(uint64_t pc, ExidxSection* out) const;

 private:
  const ModuleSnapshot* snapshot_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EXIDX_NATIVE_EXIDX_LOCATOR_H_
