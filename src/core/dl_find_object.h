// FindObjectByGlibc(): glibc's _dl_find_object (glibc >= 2.35), the one place that knows whether
// it is there. It finds the loaded object holding an address without a lock and without
// allocating (async-signal-safe), including objects loaded after the module map's snapshot.
// Elsewhere (older glibc, other C libraries) kHaveDlFindObject is false and every call answers
// false.
#ifndef STACKWALK_SRC_CORE_DL_FIND_OBJECT_H_
#define STACKWALK_SRC_CORE_DL_FIND_OBJECT_H_

#include <dlfcn.h>
#include <link.h>

#include <cstdint>

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define STACKWALK_HAVE_DL_FIND_OBJECT 1
#else
#define STACKWALK_HAVE_DL_FIND_OBJECT 0
#endif

namespace stackwalk::internal {

inline constexpr bool kHaveDlFindObject = STACKWALK_HAVE_DL_FIND_OBJECT;

// What glibc says of the object holding an address.
struct GlibcObject {
  uint64_t map_start = 0;       // the object's mapping: [map_start, map_end)
  uint64_t map_end = 0;
  uint64_t eh_frame = 0;        // its PT_GNU_EH_FRAME (.eh_frame_hdr), or on arm32 its
                                // PT_ARM_EXIDX table; 0 if it has none
  int eh_count = -1;            // arm32: the entries of that table; -1 where glibc does not say
  const char* path = nullptr;   // the link map's name ("" for the main executable), or nullptr
  uint64_t load_bias = 0;       // the link map's l_addr (valid when path is not nullptr)
};

// Signal safety: async-signal-safe.
inline bool FindObjectByGlibc(uint64_t address, GlibcObject* out) {
#if STACKWALK_HAVE_DL_FIND_OBJECT
  dl_find_object found;
  if (_dl_find_object(reinterpret_cast<void*>(static_cast<uintptr_t>(address)), &found) != 0) {
    return false;
  }
  *out = GlibcObject();
  out->map_start = reinterpret_cast<uintptr_t>(found.dlfo_map_start);
  out->map_end = reinterpret_cast<uintptr_t>(found.dlfo_map_end);
  out->eh_frame = reinterpret_cast<uintptr_t>(found.dlfo_eh_frame);
#if defined(DLFO_STRUCT_HAS_EH_COUNT) && DLFO_STRUCT_HAS_EH_COUNT
  out->eh_count = found.dlfo_eh_count;
#endif
  if (found.dlfo_link_map != nullptr) {
    out->path = found.dlfo_link_map->l_name;
    out->load_bias = found.dlfo_link_map->l_addr;
  }
  return true;
#else
  (void)address;
  (void)out;
  return false;
#endif
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_DL_FIND_OBJECT_H_
