#include "leakcheck/loaded_objects.h"

#include <unistd.h>

#include "core/module_map.h"

namespace stackwalk::leakcheck {

std::vector<LoadedObject> ListLoadedObjects() {
  internal::ModuleMap& map = internal::ModuleMap::Global();
  map.RefreshIfChanged();  // out of memory: the last snapshot
  internal::ModuleMap::Reader reader(map);
  const internal::ModuleSnapshot* snapshot = reader.snapshot();
  std::vector<LoadedObject> objects;
  for (int i = 0; snapshot != nullptr && i < snapshot->size(); ++i) {
    const internal::Module& m = snapshot->module(i);
    LoadedObject o;
    o.path = m.path;
    if (m.is_main_executable && o.path.empty()) {  // the loader names the program ""
      char path[4096];
      ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
      if (n > 0) o.path.assign(path, static_cast<size_t>(n));
    }
    o.bias = m.load_bias;
    o.start = m.extent.lo;
    o.end = m.extent.hi;
    o.phdr = m.phdr;
    o.phnum = m.phnum;
    objects.push_back(std::move(o));
  }
  return objects;
}

}  // namespace stackwalk::leakcheck
