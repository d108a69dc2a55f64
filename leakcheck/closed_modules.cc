#include "leakcheck/closed_modules.h"

#include <link.h>

#include <algorithm>

namespace stackwalk::leakcheck {

std::vector<LoadedObject> ListLoadedObjects() {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        LoadedObject o;
        o.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        o.bias = info->dlpi_addr;
        o.start = UINTPTR_MAX;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          o.start = std::min<uintptr_t>(o.start, info->dlpi_addr + ph.p_vaddr);
          o.end = std::max<uintptr_t>(o.end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (o.start < o.end) static_cast<std::vector<LoadedObject>*>(data)->push_back(o);
        return 0;
      },
      &objects);
  return objects;
}

void ClosedModules::RecordUnloaded(const std::vector<LoadedObject>& before, uint64_t sequence) {
  std::vector<LoadedObject> after = ListLoadedObjects();
  std::lock_guard<std::mutex> hold(mutex_);
  for (const LoadedObject& o : before) {
    bool still_loaded = std::any_of(after.begin(), after.end(), [&](const LoadedObject& a) {
      return a.bias == o.bias && a.start == o.start && a.path == o.path;
    });
    if (still_loaded || o.path.empty()) continue;
    closed_.push_back(o);
    closed_.back().closed_at = sequence;
  }
}

bool ClosedModules::Find(uintptr_t pc, uint64_t allocated_at, LoadedObject* out) const {
  std::lock_guard<std::mutex> hold(mutex_);
  // The earliest unloading after the allocation: the object that was mapped there then.
  const LoadedObject* best = nullptr;
  for (const LoadedObject& o : closed_) {
    if (pc < o.start || pc >= o.end || o.closed_at <= allocated_at) continue;
    if (best == nullptr || o.closed_at < best->closed_at) best = &o;
  }
  if (best == nullptr) return false;
  *out = *best;
  return true;
}

}  // namespace stackwalk::leakcheck
