#include "ehframe/debug_frame.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/dl_find_object.h"
#include "core/module_map.h"
#include "ehframe/debug_frame_index.h"

namespace stackwalk::internal {
namespace {

std::mutex g_load_mutex;

// A child forked while another thread was loading starts with the lock free: that thread does not
// exist in the child, and what it was doing is not there either (a table is published by the
// store of count_, the last step; an unpublished slot is overwritten by the next load), so a
// fresh lock leaves the registry consistent, and the fork need not wait for a whole file's index.
void ResetLoadMutexInChild() { new (&g_load_mutex) std::mutex(); }
[[maybe_unused]] const int g_reset_in_child = pthread_atfork(nullptr, nullptr, ResetLoadMutexInChild);

}  // namespace

DebugFrameRegistry& DebugFrameRegistry::Global() {
  static DebugFrameRegistry registry;
  return registry;
}

void DebugFrameRegistry::WithLoadLock(void (*f)(void*), void* arg) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  f(arg);
}

bool DebugFrameRegistry::Load(const char* path, uint64_t load_bias, uint64_t object_start) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  int n = count_.load(std::memory_order_relaxed);
  if (n == kMaxTables) return false;
  for (int i = 0; i < n; ++i) {
    if (tables_[i].object_start == object_start) return false;  // already there
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return false;
  }
  void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  Table table{};
  if (!FindDebugFrameSection(static_cast<const uint8_t*>(map), static_cast<size_t>(st.st_size),
                             &table.section.bounds)) {
    munmap(map, static_cast<size_t>(st.st_size));
    return false;
  }
  table.section.debug_frame = true;
  table.section.load_bias = load_bias;
  table.section.absolute_bias = load_bias;
  table.section.address_size = sizeof(void*);
  table.object_start = object_start;

  std::vector<DebugFrameEntry> entries = IndexDebugFrame(table.section);
  if (entries.empty()) {
    munmap(map, static_cast<size_t>(st.st_size));
    return false;
  }
  // The index lives as long as the process: readers hold no reference to release.
  auto* index = new DebugFrameEntry[entries.size()];
  std::copy(entries.begin(), entries.end(), index);
  table.index = index;
  table.count = static_cast<int>(entries.size());
  table.covered = {entries.front().pc_begin, 0};
  for (const DebugFrameEntry& e : entries) table.covered.hi = std::max(table.covered.hi, e.pc_end);
  tables_[n] = table;
  count_.store(n + 1, std::memory_order_release);
  return true;
}

int DebugFrameRegistry::LoadForLoadedObjects() {
  ModuleMap& map = ModuleMap::Global();
  map.RefreshIfChanged();
  ModuleMap::Reader reader(map);
  const ModuleSnapshot* snapshot = reader.snapshot();
  if (snapshot == nullptr) return 0;
  int added = 0;
  for (int i = 0; i < snapshot->size(); ++i) {
    const Module& m = snapshot->module(i);
    if (m.is_vdso) continue;
    const char* path = m.path[0] != '\0' ? m.path : "/proc/self/exe";
    if (Load(path, m.load_bias, m.extent.lo)) ++added;
  }
  return added;
}

bool DebugFrameRegistry::Find(uint64_t pc, EhFrameSection* section, uint64_t* fde) const {
  const int n = count_.load(std::memory_order_acquire);
  for (int t = 0; t < n; ++t) {
    const Table& table = tables_[t];
    if (!table.covered.Contains(pc)) continue;
    // Still the object the table was read for, not one loaded since at the same place.
    GlibcObject found;
    if (kHaveDlFindObject &&
        (!FindObjectByGlibc(pc, &found) || found.map_start != table.object_start)) {
      continue;
    }
    const DebugFrameEntry* entry =
        FindDebugFrameEntry(table.index, static_cast<size_t>(table.count), pc);
    if (entry != nullptr) {
      *section = table.section;
      *fde = entry->fde;
      return true;
    }
  }
  return false;
}

}  // namespace stackwalk::internal
