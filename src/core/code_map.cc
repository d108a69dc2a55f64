#include "core/code_map.h"

#include "core/dl_find_object.h"

namespace stackwalk::internal {

bool CodeMap::IsCode(uint64_t pc) const {
  if (pc == 0) return false;
  if (snapshot_ == nullptr) return true;
  if (snapshot_->FindExecutable(pc) != nullptr) return true;
  if (snapshot_->Find(pc) != nullptr) return false;  // a known module, but not its code
  // Loaded after the snapshot was taken: glibc knows, without a lock (where it can say).
  GlibcObject found;
  return FindObjectByGlibc(pc, &found);
}

}  // namespace stackwalk::internal
