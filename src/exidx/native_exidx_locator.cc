#include "exidx/native_exidx_locator.h"

#include "core/dl_find_object.h"

namespace stackwalk::internal {

bool NativeExidxLocator::FindExidx(uint64_t pc, ExidxSection* out) const {
  // glibc's answer where it says how long the table is (eh_count); the snapshot's otherwise.
  GlibcObject found;
  if (FindObjectByGlibc(pc, &found) && found.eh_count >= 0) {
    if (found.eh_frame == 0 || found.eh_count == 0) return false;
    out->table = {found.eh_frame, found.eh_frame + 8 * static_cast<uint64_t>(found.eh_count)};
    out->bounds = {found.map_start, found.map_end};
    return true;
  }
  const Module* m = snapshot_ != nullptr ? snapshot_->FindExecutable(pc) : nullptr;
  if (m == nullptr || m->arm_exidx.empty()) return false;
  out->table = m->arm_exidx;
  out->bounds = m->extent;
  return true;
}

}  // namespace stackwalk::internal
