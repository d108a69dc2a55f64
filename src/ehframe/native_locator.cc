#include "ehframe/native_locator.h"


#include <cstring>

#include "core/dl_find_object.h"
#include "core/proc_maps.h"
#include "ehframe/debug_frame.h"

namespace stackwalk::internal {

bool NativeLocator::Find(uint64_t pc, EhFrameSection* out) const {
  const Module* m = snapshot_ != nullptr ? snapshot_->FindExecutable(pc) : nullptr;
  GlibcObject found;
  if (FindObjectByGlibc(pc, &found)) {
    if (found.eh_frame == 0) return false;
    EhFrameSection s;
    s.hdr = found.eh_frame;
    if (m != nullptr && m->eh_frame_hdr.lo == s.hdr) {
      s.bounds = m->eh_segment;
      s.in_vdso = m->is_vdso;
    } else {
      // Loaded since the snapshot: the object's whole mapping bounds the reads.
      s.bounds = {found.map_start, found.map_end};
    }
    s.address_size = sizeof(void*);
    *out = s;
    return s.bounds.Contains(s.hdr);
  }
  // glibc does not know it (the vDSO on some versions), or has no _dl_find_object: the
  // snapshot may.
  if (m == nullptr || m->eh_frame_hdr.empty() || m->eh_segment.empty()) return false;
  EhFrameSection s;
  s.hdr = m->eh_frame_hdr.lo;
  s.bounds = m->eh_segment;
  s.address_size = sizeof(void*);
  s.in_vdso = m->is_vdso;
  *out = s;
  return true;
}

bool NativeLocator::FindDebugFrame(uint64_t pc, EhFrameSection* out, uint64_t* fde) const {
  return DebugFrameRegistry::Global().table_count() > 0 &&
         DebugFrameRegistry::Global().Find(pc, out, fde);
}

bool NativeLocator::ReadCode(uint64_t pc, void* out, size_t n) const {
  const Module* m = snapshot_ != nullptr ? snapshot_->FindExecutable(pc) : nullptr;
  bool readable = false;
  if (m != nullptr) {
    for (int i = 0; i < m->exec_count && !readable; ++i) readable = m->exec[i].ContainsSpan(pc, n);
  } else {
    Mapping mapping;
    readable = FindMapping(pc, &mapping) && mapping.readable && mapping.executable &&
               mapping.range.ContainsSpan(pc, n);
  }
  if (!readable) return false;
  std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(pc)), n);
  return true;
}

}  // namespace stackwalk::internal
