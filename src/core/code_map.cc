#include "core/code_map.h"

#include <dlfcn.h>

namespace stackwalk::internal {

bool CodeMap::IsCode(uint64_t pc) const {
  if (pc == 0) return false;
  if (snapshot_ == nullptr) return true;
  if (snapshot_->FindExecutable(pc) != nullptr) return true;
  if (snapshot_->Find(pc) != nullptr) return false;  // a known module, but not its code
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  // Loaded after the snapshot was taken: glibc knows, without a lock.
  dl_find_object found;
  return _dl_find_object(reinterpret_cast<void*>(static_cast<uintptr_t>(pc)), &found) == 0;
#else
  return false;
#endif
}

}  // namespace stackwalk::internal
