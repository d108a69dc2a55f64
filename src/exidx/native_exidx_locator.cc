#include "exidx/native_exidx_locator.h"

#include <dlfcn.h>

namespace stackwalk::internal {

bool NativeExidxLocator::FindExidx(uint64_t pc, ExidxSection* out) const {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35)) && \
    defined(DLFO_STRUCT_HAS_EH_COUNT) && DLFO_STRUCT_HAS_EH_COUNT
  dl_find_object found;
  if (_dl_find_object(reinterpret_cast<void*>(static_cast<uintptr_t>(pc)), &found) == 0) {
    if (found.dlfo_eh_frame == nullptr || found.dlfo_eh_count <= 0) return false;
    uint64_t table = reinterpret_cast<uintptr_t>(found.dlfo_eh_frame);
    out->table = {table, table + 8 * static_cast<uint64_t>(found.dlfo_eh_count)};
    out->bounds = {reinterpret_cast<uintptr_t>(found.dlfo_map_start),
                   reinterpret_cast<uintptr_t>(found.dlfo_map_end)};
    return true;
  }
#endif
  const Module* m = snapshot_ != nullptr ? snapshot_->FindExecutable(pc) : nullptr;
  if (m == nullptr || m->arm_exidx.empty()) return false;
  out->table = m->arm_exidx;
  out->bounds = m->extent;
  return true;
}

}  // namespace stackwalk::internal
