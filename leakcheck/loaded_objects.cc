#include "leakcheck/loaded_objects.h"

#include <unistd.h>

#include <algorithm>

namespace stackwalk::leakcheck {

std::vector<LoadedObject> ListLoadedObjects() {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        LoadedObject o;
        o.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        o.bias = info->dlpi_addr;
        o.phdr = info->dlpi_phdr;
        o.phnum = info->dlpi_phnum;
        o.start = UINTPTR_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          o.start = std::min<uintptr_t>(o.start, info->dlpi_addr + ph.p_vaddr);
          o.end = std::max<uintptr_t>(o.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (o.start >= o.end) o.start = o.end = 0;
        static_cast<std::vector<LoadedObject>*>(data)->push_back(o);
        return 0;
      },
      &objects);
  // The program is listed first, without a name.
  if (!objects.empty() && objects[0].path.empty()) {
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n > 0) objects[0].path.assign(path, static_cast<size_t>(n));
  }
  return objects;
}

}  // namespace stackwalk::leakcheck
