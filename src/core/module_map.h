// ModuleMap: an immutable snapshot of the loaded objects (executable, libraries, vDSO) with what
// the unwinders, the symbolizer and the leak checker need of each, swapped atomically when
// dlopen/dlclose changed the loaded set: the library's one list of loaded objects and its one
// history of unloaded ones (the leak checker's reachability scan still walks dl_iterate_phdr
// itself, for writable segments). Readers never lock; only Refresh*() (never from a signal
// handler) builds.
#ifndef STACKWALK_SRC_CORE_MODULE_MAP_H_
#define STACKWALK_SRC_CORE_MODULE_MAP_H_

#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/address_range.h"

namespace stackwalk::internal {

struct Module {
  static constexpr int kMaxExecRanges = 4;
  static constexpr int kMaxBuildIdSize = 32;

  const char* path = "";       // as the loader knows it; "" for the main executable on glibc
  uint64_t load_bias = 0;      // dlpi_addr: runtime address = link-time address + load_bias
  AddressRange extent;         // lowest to highest PT_LOAD byte
  AddressRange exec[kMaxExecRanges];  // PF_X segments
  int exec_count = 0;
  AddressRange eh_frame_hdr;   // PT_GNU_EH_FRAME, empty if absent
  AddressRange eh_segment;     // the PT_LOAD holding .eh_frame_hdr (and, in practice, .eh_frame)
  AddressRange arm_exidx;      // PT_ARM_EXIDX, empty if absent
  uint8_t build_id[kMaxBuildIdSize] = {};
  uint8_t build_id_size = 0;
  bool is_vdso = false;
  bool is_main_executable = false;
  const ElfW(Phdr)* phdr = nullptr;  // the loader's program headers (dlpi_phdr), valid while
  int phnum = 0;                     // the object stays loaded

  bool IsExecutable(uint64_t pc) const;
};

// One immutable snapshot. Modules are sorted by extent.lo.
class ModuleSnapshot {
 public:
  uint64_t generation() const { return generation_; }
  int size() const { return count_; }
  const Module& module(int i) const { return modules_[i]; }
  // The module whose extent holds `pc`, or nullptr. Signal safety: async-signal-safe.
  const Module* Find(uint64_t pc) const;
  // The module with an executable segment holding `pc`, or nullptr.
  const Module* FindExecutable(uint64_t pc) const;

 private:
  friend class ModuleMap;
  uint64_t generation_ = 0;
  unsigned long long adds_ = 0;
  unsigned long long subs_ = 0;
  int count_ = 0;
  size_t mapped_bytes_ = 0;
  ModuleSnapshot* next_retired_ = nullptr;
  Module* modules_ = nullptr;
};

// An object that was in a snapshot and is not in a later one: dlclose'd. Kept so that PCs captured
// while it was loaded can still be named from its file.
struct UnloadedModule {
  char path[256] = {};
  uint64_t load_bias = 0;
  AddressRange extent;
  uint64_t unloaded_after_generation = 0;  // the last snapshot that had it
};

class ModuleMap {
 public:
  // The process-wide map. Built on first use from a non-signal context (libstackwalk builds it
  // in a constructor at load time).
  static ModuleMap& Global();

  // Pins the current snapshot for the life of the reader: the snapshot is not freed while any
  // reader exists. Signal safety: async-signal-safe (two atomic increments, no lock).
  class Reader {
   public:
    explicit Reader(ModuleMap& map);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    // nullptr before the first build.
    const ModuleSnapshot* snapshot() const { return snapshot_; }

   private:
    ModuleMap& map_;
    const ModuleSnapshot* snapshot_;
  };

  // Rebuilds if the loaded set changed since the current snapshot (glibc's dlpi_adds and
  // dlpi_subs), or if there is none yet. Returns true if it rebuilt.
  // Signal safety: NOT async-signal-safe (dl_iterate_phdr, mmap, a mutex).
  bool RefreshIfChanged();
  // As RefreshIfChanged, but if another thread is rebuilding (holds the writer lock) returns
  // false at once with *busy set, rebuilding nothing. For callers that may run inside a
  // dl_iterate_phdr callback (an allocation hook), which holds the loader's lock that a writer
  // may be waiting for. Signal safety: NOT async-signal-safe.
  bool RefreshIfChangedUnlessBusy(bool* busy);
  // Rebuilds unconditionally (e.g. after a miss on an unknown PC). Returns false if it could not
  // build (out of memory); the old snapshot then stays.
  bool Rebuild();
  // Runs f(arg) holding the lock that serializes writers, as a refresh does (tests: a fork while
  // another thread writes; a child process starts with the lock free).
  static void WithWriterLock(void (*f)(void*), void* arg);

  // The most recently unloaded object whose extent held `pc`, among the last kUnloadedKept that
  // a rebuild found gone: the process's one history of unloaded objects (the symbolizer's, and
  // the leak checker's through VisitUnloaded). Only objects some snapshot saw are known: a
  // library dlopen'ed and dlclose'd with no rebuild in between (stackwalk_refresh_modules(), a
  // symbolization, the leak checker's dlclose hook) is not.
  // Signal safety: NOT async-signal-safe (the writer mutex).
  static constexpr int kUnloadedKept = 256;
  bool FindUnloaded(uint64_t pc, UnloadedModule* out) const;
  // Calls visit(object, context) for each kept unloaded object whose extent held `pc`, newest
  // first, until it returns true; returns whether one did. `visit` runs under the writer
  // mutex: it must not call into the map. Signal safety: NOT async-signal-safe.
  bool VisitUnloaded(uint64_t pc, bool (*visit)(const UnloadedModule& object, void* context),
                     void* context) const;
  // The current snapshot's generation (0 before the first build).
  uint64_t generation() const;

  // Looks `address` up and calls accept(module) with the module holding it, its snapshot pinned
  // for the call; accept returns whether the module will do. On a miss (no module, or one not
  // accepted) the map is refreshed if the loaded set changed (an object loaded since) and looked
  // up once more. Returns whether a module was accepted. The one lookup-then-refresh loop of the
  // library (DescribePc, Symbolizer::Symbolize).
  // Signal safety: NOT async-signal-safe (the refresh).
  template <class Accept>
  bool FindRefreshing(uint64_t address, Accept&& accept) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      {
        Reader reader(*this);
        const Module* m = reader.snapshot() != nullptr ? reader.snapshot()->Find(address) : nullptr;
        if (m != nullptr && accept(*m)) return true;
      }
      if (!RefreshIfChanged()) break;  // nothing loaded since: a second look finds the same
    }
    return false;
  }

  // How many snapshots were built so far.
  uint64_t rebuild_count() const { return rebuilds_.load(std::memory_order_relaxed); }

 private:
  ModuleMap() = default;
  bool RebuildLocked();
  bool RefreshIfChangedLocked();
  void FreeRetiredLocked();

  std::atomic<ModuleSnapshot*> current_{nullptr};
  std::atomic<long> readers_{0};
  std::atomic<uint64_t> rebuilds_{0};
  void NoteUnloadedLocked(const ModuleSnapshot& before, const ModuleSnapshot& after);

  ModuleSnapshot* retired_ = nullptr;  // guarded by the writer mutex in module_map.cc
  UnloadedModule unloaded_[kUnloadedKept];  // a ring, guarded by the writer mutex
  uint64_t unloaded_count_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_MODULE_MAP_H_
