// LoadedObjects: the objects loaded now, as the module map (src/core/module_map.h, refreshed
// first) lists them, with their paths (the program's from /proc/self/exe; the vDSO's "[vdso]"),
// load bias, address range and program headers. Allocates: the checker calls it under a
// ReentryGuard, never from an allocation hook.
#ifndef STACKWALK_LEAKCHECK_LOADED_OBJECTS_H_
#define STACKWALK_LEAKCHECK_LOADED_OBJECTS_H_

#include <link.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stackwalk::leakcheck {

struct LoadedObject {
  std::string path;
  uintptr_t bias = 0;
  uintptr_t start = 0;  // lowest and highest address of its PT_LOAD segments
  uintptr_t end = 0;
  const ElfW(Phdr)* phdr = nullptr;  // valid while the object stays loaded
  int phnum = 0;
  uint64_t closed_at = 0;  // for unloaded objects: allocation sequence number when it went
};

std::vector<LoadedObject> ListLoadedObjects();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_LOADED_OBJECTS_H_
