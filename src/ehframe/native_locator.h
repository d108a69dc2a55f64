// NativeLocator: finds the unwind tables of this process's loaded objects for EhFrameStep:
// glibc's lock-free _dl_find_object first (always current, signal-safe), bounded by the pinned
// module snapshot's segment where the snapshot knows the object; the snapshot alone elsewhere.
#ifndef STACKWALK_SRC_EHFRAME_NATIVE_LOCATOR_H_
#define STACKWALK_SRC_EHFRAME_NATIVE_LOCATOR_H_

#include <cstddef>
#include <cstdint>

#include "core/module_map.h"
#include "ehframe/eh_frame_hdr.h"

namespace stackwalk::internal {

class NativeLocator {
 public:
  explicit NativeLocator(const ModuleSnapshot* snapshot) : snapshot_(snapshot) {}

  // Signal safety: async-signal-safe.
  bool Find(uint64_t pc, EhFrameSection* out) const;
  // The FDE of a .debug_frame table loaded by stackwalk_load_debug_frames().
  // Signal safety: async-signal-safe.
  bool FindDebugFrame(uint64_t pc, EhFrameSection* out, uint64_t* fde) const;
  // Copies code bytes at pc if they lie in a loaded object's executable segment, or else in a
  // readable executable mapping (read from /proc/self/maps: qemu-user's trampoline page).
  // Signal safety: async-signal-safe.
  bool ReadCode(uint64_t pc, void* out, size_t n) const;

 private:
  const ModuleSnapshot* snapshot_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_NATIVE_LOCATOR_H_
