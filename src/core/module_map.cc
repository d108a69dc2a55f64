#include "core/module_map.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <new>

#include "core/build_id.h"

namespace stackwalk::internal {
namespace {

#ifndef PT_ARM_EXIDX
#define PT_ARM_EXIDX 0x70000001
#endif

// Serializes writers. Readers never take it.
std::mutex g_writer_mutex;

// A fork while another thread refreshes the map would leave the child a locked mutex that no
// thread of its own will unlock, and its first refresh (a walk's, an allocation hook's) would
// wait forever: the child, single-threaded, starts with a fresh one. What it reads is whole: a
// writer publishes a snapshot with one atomic store once it is built.
void ResetWriterMutexInChild() { new (&g_writer_mutex) std::mutex(); }
[[maybe_unused]] const int g_reset_in_child = pthread_atfork(nullptr, nullptr, ResetWriterMutexInChild);

bool HasAddsSubs(size_t info_size) {
  return info_size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(unsigned long long);
}

struct LoadedSetState {
  bool known = false;
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int ReadAddsSubs(dl_phdr_info* info, size_t size, void* data) {
  auto* state = static_cast<LoadedSetState*>(data);
  if (HasAddsSubs(size)) {
    state->known = true;
    state->adds = info->dlpi_adds;
    state->subs = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: stop after the first
}

void DescribeModule(const dl_phdr_info* info, bool first, Module* m) {
  m->load_bias = info->dlpi_addr;
  m->phdr = info->dlpi_phdr;
  m->phnum = info->dlpi_phnum;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t start = info->dlpi_addr + ph.p_vaddr;
    AddressRange r{start, start + ph.p_memsz};
    switch (ph.p_type) {
      case PT_LOAD:
        if (r.lo < lo) lo = r.lo;
        if (r.hi > hi) hi = r.hi;
        if ((ph.p_flags & PF_X) && m->exec_count < Module::kMaxExecRanges) {
          m->exec[m->exec_count++] = r;
        }
        break;
      case PT_GNU_EH_FRAME:
        m->eh_frame_hdr = r;
        break;
      case PT_ARM_EXIDX:
        m->arm_exidx = r;
        break;
      case PT_NOTE:
        if (m->build_id_size == 0) {
          const int n = FindGnuBuildId(reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(start)),
                                       ph.p_memsz, m->build_id, sizeof(m->build_id));
          if (n > 0) m->build_id_size = static_cast<uint8_t>(n);
        }
        break;
      default:
        break;
    }
  }
  m->extent = lo <= hi ? AddressRange{lo, hi} : AddressRange{};
  if (!m->eh_frame_hdr.empty()) {
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      AddressRange r{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
      if (ph.p_type == PT_LOAD && r.Contains(m->eh_frame_hdr.lo)) m->eh_segment = r;
    }
  }
  uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  m->is_vdso = vdso != 0 && m->extent.Contains(vdso);
  m->is_main_executable = first && !m->is_vdso;
}

struct BuildPass {
  // Sizing (pass 1) when modules == nullptr.
  Module* modules = nullptr;
  int capacity = 0;
  char* strings = nullptr;
  size_t strings_capacity = 0;
  // Results.
  int count = 0;
  size_t string_bytes = 0;
  bool overflow = false;
  LoadedSetState state;
};

int CollectModule(dl_phdr_info* info, size_t size, void* data) {
  auto* pass = static_cast<BuildPass*>(data);
  if (pass->count == 0 && HasAddsSubs(size)) {
    pass->state.known = true;
    pass->state.adds = info->dlpi_adds;
    pass->state.subs = info->dlpi_subs;
  }
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  size_t len = std::strlen(name) + 1;
  if (pass->modules != nullptr) {
    if (pass->count >= pass->capacity || pass->string_bytes + len > pass->strings_capacity) {
      pass->overflow = true;
      return 1;
    }
    Module* m = &pass->modules[pass->count];
    *m = Module();
    DescribeModule(info, pass->count == 0, m);
    char* dst = pass->strings + pass->string_bytes;
    std::memcpy(dst, name, len);
    m->path = dst;
    if (m->is_vdso && name[0] == '\0') m->path = "[vdso]";
  }
  pass->count++;
  pass->string_bytes += len;
  return 0;
}

void SortByStart(Module* modules, int n) {
  for (int i = 1; i < n; ++i) {
    Module m = modules[i];
    int j = i - 1;
    while (j >= 0 && modules[j].extent.lo > m.extent.lo) {
      modules[j + 1] = modules[j];
      --j;
    }
    modules[j + 1] = m;
  }
}

}  // namespace

bool Module::IsExecutable(uint64_t pc) const {
  for (int i = 0; i < exec_count; ++i) {
    if (exec[i].Contains(pc)) return true;
  }
  return false;
}

const Module* ModuleSnapshot::Find(uint64_t pc) const {
  int lo = 0, hi = count_;  // first module with extent.lo > pc
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (modules_[mid].extent.lo <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return nullptr;
  const Module* m = &modules_[lo - 1];
  return m->extent.Contains(pc) ? m : nullptr;
}

const Module* ModuleSnapshot::FindExecutable(uint64_t pc) const {
  const Module* m = Find(pc);
  return m != nullptr && m->IsExecutable(pc) ? m : nullptr;
}

ModuleMap& ModuleMap::Global() {
  static ModuleMap map;  // constant-initialized: no guard, usable from a signal handler
  return map;
}

ModuleMap::Reader::Reader(ModuleMap& map) : map_(map) {
  // Announce the reader before loading the pointer: a writer that swapped the pointer and then
  // sees readers_ == 0 knows no reader holds the old snapshot (all accesses are seq_cst).
  map_.readers_.fetch_add(1);
  snapshot_ = map_.current_.load();
}

ModuleMap::Reader::~Reader() { map_.readers_.fetch_sub(1); }

void ModuleMap::WithWriterLock(void (*f)(void*), void* arg) {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  f(arg);
}

bool ModuleMap::RefreshIfChanged() {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  return RefreshIfChangedLocked();
}

bool ModuleMap::RefreshIfChangedUnlessBusy(bool* busy) {
  std::unique_lock<std::mutex> lock(g_writer_mutex, std::try_to_lock);
  *busy = !lock.owns_lock();
  return !*busy && RefreshIfChangedLocked();
}

bool ModuleMap::RefreshIfChangedLocked() {
  ModuleSnapshot* cur = current_.load();
  if (cur != nullptr) {
    LoadedSetState state;
    dl_iterate_phdr(ReadAddsSubs, &state);
    if (state.known && state.adds == cur->adds_ && state.subs == cur->subs_) {
      FreeRetiredLocked();
      return false;
    }
  }
  return RebuildLocked();
}

bool ModuleMap::Rebuild() {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  return RebuildLocked();
}

bool ModuleMap::RebuildLocked() {
  for (int attempt = 0; attempt < 8; ++attempt) {
    BuildPass sizing;
    dl_iterate_phdr(CollectModule, &sizing);
    // Room for libraries loaded between the two passes.
    int capacity = sizing.count + 16;
    size_t strings_capacity = sizing.string_bytes + 16 * 256;
    size_t bytes = sizeof(ModuleSnapshot) + alignof(Module) + sizeof(Module) * capacity +
                   strings_capacity;
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return false;
    auto* snap = new (mem) ModuleSnapshot();
    uintptr_t modules_addr = reinterpret_cast<uintptr_t>(snap + 1);
    modules_addr = (modules_addr + alignof(Module) - 1) & ~(uintptr_t{alignof(Module)} - 1);
    BuildPass fill;
    fill.modules = reinterpret_cast<Module*>(modules_addr);
    fill.capacity = capacity;
    fill.strings = reinterpret_cast<char*>(fill.modules + capacity);
    fill.strings_capacity = strings_capacity;
    for (int i = 0; i < capacity; ++i) new (&fill.modules[i]) Module();
    dl_iterate_phdr(CollectModule, &fill);
    if (fill.overflow) {
      munmap(mem, bytes);
      continue;
    }
    SortByStart(fill.modules, fill.count);
    snap->modules_ = fill.modules;
    snap->count_ = fill.count;
    snap->adds_ = fill.state.adds;
    snap->subs_ = fill.state.subs;
    snap->mapped_bytes_ = bytes;
    snap->generation_ = rebuilds_.load() + 1;
    ModuleSnapshot* old = current_.exchange(snap);
    rebuilds_.fetch_add(1);
    if (old != nullptr) NoteUnloadedLocked(*old, *snap);
    if (old != nullptr) {
      old->next_retired_ = retired_;
      retired_ = old;
    }
    FreeRetiredLocked();
    return true;
  }
  return false;
}

void ModuleMap::NoteUnloadedLocked(const ModuleSnapshot& before, const ModuleSnapshot& after) {
  for (int i = 0; i < before.size(); ++i) {
    const Module& m = before.module(i);
    if (m.is_vdso || m.is_main_executable || m.path[0] == '\0') continue;
    bool still_loaded = false;
    for (int j = 0; j < after.size() && !still_loaded; ++j) {
      const Module& n = after.module(j);
      still_loaded = n.load_bias == m.load_bias && n.extent.lo == m.extent.lo &&
                     std::strcmp(n.path, m.path) == 0;
    }
    if (still_loaded) continue;
    UnloadedModule& u = unloaded_[unloaded_count_++ % kUnloadedKept];
    std::strncpy(u.path, m.path, sizeof(u.path) - 1);
    u.path[sizeof(u.path) - 1] = '\0';
    u.load_bias = m.load_bias;
    u.extent = m.extent;
    u.unloaded_after_generation = before.generation();
  }
}

bool ModuleMap::VisitUnloaded(uint64_t pc, bool (*visit)(const UnloadedModule&, void*),
                              void* context) const {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  const uint64_t kept = unloaded_count_ < kUnloadedKept ? unloaded_count_ : kUnloadedKept;
  for (uint64_t k = 0; k < kept; ++k) {  // newest first
    const UnloadedModule& u = unloaded_[(unloaded_count_ - 1 - k) % kUnloadedKept];
    if (u.extent.Contains(pc) && visit(u, context)) return true;
  }
  return false;
}

bool ModuleMap::FindUnloaded(uint64_t pc, UnloadedModule* out) const {
  return VisitUnloaded(
      pc,
      [](const UnloadedModule& u, void* context) {
        *static_cast<UnloadedModule*>(context) = u;
        return true;
      },
      out);
}

uint64_t ModuleMap::generation() const {
  Reader reader(const_cast<ModuleMap&>(*this));
  return reader.snapshot() != nullptr ? reader.snapshot()->generation() : 0;
}

void ModuleMap::FreeRetiredLocked() {
  // Retired snapshots are unreachable from current_; once no reader is active, none can hold one.
  if (retired_ == nullptr || readers_.load() != 0) return;
  while (retired_ != nullptr) {
    ModuleSnapshot* next = retired_->next_retired_;
    munmap(retired_, retired_->mapped_bytes_);
    retired_ = next;
  }
}

namespace {
// Build the first snapshot at load time, outside any signal handler.
__attribute__((constructor)) void BuildModuleMapAtLoad() { ModuleMap::Global().RefreshIfChanged(); }
}  // namespace

}  // namespace stackwalk::internal
