#include "ehframe/debug_frame.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/dl_find_object.h"
#include "core/module_map.h"
#include "ehframe/byte_reader.h"
#include "ehframe/cfi_parser.h"

namespace stackwalk::internal {
namespace {

std::mutex g_load_mutex;

// The .debug_frame section of a mapped ELF file, if it has an uncompressed one.
bool FindDebugFrameSection(const uint8_t* file, size_t size, AddressRange* out) {
  if (size < sizeof(ElfW(Ehdr)) || std::memcmp(file, ELFMAG, SELFMAG) != 0) return false;
  ElfW(Ehdr) eh;
  std::memcpy(&eh, file, sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shstrndx >= eh.e_shnum ||
      eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(ElfW(Shdr))) {
    return false;
  }
  auto section = [&](int i) {
    ElfW(Shdr) sh;
    std::memcpy(&sh, file + eh.e_shoff + i * sizeof(ElfW(Shdr)), sizeof(sh));
    return sh;
  };
  ElfW(Shdr) names = section(eh.e_shstrndx);
  if (names.sh_offset > size || names.sh_size > size - names.sh_offset) return false;
  for (int i = 0; i < eh.e_shnum; ++i) {
    ElfW(Shdr) sh = section(i);
    if (sh.sh_name >= names.sh_size) continue;
    const char* name = reinterpret_cast<const char*>(file + names.sh_offset + sh.sh_name);
    size_t room = names.sh_size - sh.sh_name;
    if (strnlen(name, room) == room || std::strcmp(name, ".debug_frame") != 0) continue;
    if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED) != 0) return false;
    if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || sh.sh_size == 0) return false;
    const uint64_t base = reinterpret_cast<uintptr_t>(file) + sh.sh_offset;
    *out = {base, base + sh.sh_size};
    return true;
  }
  return false;
}

}  // namespace

DebugFrameRegistry& DebugFrameRegistry::Global() {
  static DebugFrameRegistry registry;
  return registry;
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
  table.section.address_size = sizeof(void*);
  table.object_start = object_start;

  // Index every FDE by the range it covers.
  std::vector<IndexEntry> entries;
  ByteReader r(table.section.bounds.lo, table.section.bounds.hi);
  while (r.ok() && !r.at_end()) {
    uint64_t entry = r.pos();
    uint64_t length = r.U32();
    bool is64 = length == 0xffffffffu;
    if (is64) length = r.U64();
    if (!r.ok() || length == 0) break;
    uint64_t body = r.pos();
    uint64_t id = is64 ? r.U64() : r.U32();
    bool is_cie = id == (is64 ? ~uint64_t{0} : 0xffffffffu);
    Fde fde;
    if (!is_cie && ParseFde(table.section, entry, &fde) == CfiError::kOk && fde.pc_end > fde.pc_begin) {
      entries.push_back({fde.pc_begin, fde.pc_end, entry});
    }
    r.Seek(body);
    r.Skip(length);
  }
  if (entries.empty()) {
    munmap(map, static_cast<size_t>(st.st_size));
    return false;
  }
  std::sort(entries.begin(), entries.end(),
            [](const IndexEntry& a, const IndexEntry& b) { return a.pc_begin < b.pc_begin; });
  // The index lives as long as the process: readers hold no reference to release.
  auto* index = new IndexEntry[entries.size()];
  std::copy(entries.begin(), entries.end(), index);
  table.index = index;
  table.count = static_cast<int>(entries.size());
  table.covered = {entries.front().pc_begin, 0};
  for (const IndexEntry& e : entries) table.covered.hi = std::max(table.covered.hi, e.pc_end);
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
    int lo = 0, hi = table.count;  // last entry starting at or below pc
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      if (table.index[mid].pc_begin <= pc) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo > 0 && pc < table.index[lo - 1].pc_end) {
      *section = table.section;
      *fde = table.index[lo - 1].fde;
      return true;
    }
  }
  return false;
}

}  // namespace stackwalk::internal
