// A dump's stacks from the stack table (dump_table_stacks.h) when the object of their frames is
// dlclose'd and another copy of it dlopen'ed at its address: before the dump lists its modules
// (each frame dated by the stack's time, ClosedModules) and between that and writing the stacks
// (the object listed then). The plugin is the test fixture libleaky_plugin.so and copies of it.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/module_map.h"
#include "leakcheck/closed_modules.h"
#include "leakcheck/dump/dump_table_stacks.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck::dump {
namespace {

// Where the loader mapped the object holding `address`: its PT_LOAD segments' pages (empty if
// it is in none).
struct Range {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};
Range MappedRange(void* address) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    return {};
  }
  struct Search {
    uintptr_t bias;
    Range range;
  } search{map->l_addr, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (object->dlpi_addr != s->bias) return 0;
        const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = object->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t lo = (object->dlpi_addr + ph.p_vaddr) & ~(page - 1);
          const uintptr_t hi = (object->dlpi_addr + ph.p_vaddr + ph.p_memsz + page - 1) & ~(page - 1);
          if (s->range.hi == 0 || lo < s->range.lo) s->range.lo = lo;
          if (hi > s->range.hi) s->range.hi = hi;
        }
        return 1;
      },
      &search);
  return search.range;
}

// Copies of the plugin in a directory of the test's own: each a file of its own, which the
// loader maps as an object of its own.
class PluginCopies {
 public:
  PluginCopies() {
    char dir[] = "/tmp/leakcheck_dump_stacks_dlclose.XXXXXX";
    if (mkdtemp(dir) != nullptr) dir_ = dir;
    fillers_.reserve(kMostFillers);  // no allocation between a dlclose and its dlopen
  }
  ~PluginCopies() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
    for (const Range& r : fillers_) munmap(reinterpret_cast<void*>(r.lo), r.hi - r.lo);
  }

  // A new copy's path ("" if it could not be made).
  std::string Copy(const char* name) {
    if (dir_.empty()) return "";
    const std::filesystem::path to = std::filesystem::path(dir_) / name;
    std::error_code error;
    return std::filesystem::copy_file(LEAKY_PLUGIN, to, error) ? to.string() : "";
  }

  // dlopen's `path` until the loader maps it at `want` (where an object of the same size was
  // just dlclose'd). The kernel places a mapping at the top of the highest free gap it fits
  // in: wherever the copy lands instead is reserved before the next try. Null if it cannot be.
  void* OpenAt(const std::string& path, Range want) {
    ReserveGapsAbove(want);
    for (int attempt = 0; attempt < 64; ++attempt) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) return nullptr;
      void* symbol = dlsym(handle, "PluginLeak");
      const Range got = symbol != nullptr ? MappedRange(symbol) : Range{};
      if (got.lo == want.lo && got.hi == want.hi) return handle;
      dlclose(handle);
      Range taken = got;  // above `want`, or the part of it above `want` in the same gap
      if (got.lo > want.lo && got.lo < want.hi) taken.lo = want.hi;
      if (got.hi <= got.lo || (taken.lo < want.hi && taken.hi > want.lo)) return nullptr;
      void* filler = mmap(reinterpret_cast<void*>(taken.lo), taken.hi - taken.lo, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (filler == MAP_FAILED || fillers_.size() == kMostFillers) return nullptr;
      fillers_.push_back(taken);
    }
    return nullptr;
  }

 private:
  // Reserves every free gap above `want` that could hold it (from /proc/self/maps, read into a
  // buffer of its own: nothing that could map memory runs between the dlclose and the dlopen).
  // Else a copy first lands in a higher gap, and a small mapping the loader or a sanitizer's
  // allocator makes meanwhile takes the top of the hole at `want` for good (seen under ASan).
  // Gaps at and above the stack's mapping are left alone: the stack grows into them.
  void ReserveGapsAbove(Range want) {
    static char maps[1 << 18];
    const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t size = 0;
    for (ssize_t n; size < sizeof(maps) - 1 &&
                    (n = read(fd, maps + size, sizeof(maps) - 1 - size)) > 0;) {
      size += static_cast<size_t>(n);
    }
    close(fd);
    maps[size] = '\0';
    uintptr_t previous_hi = 0;
    for (char* line = maps; line < maps + size && *line != '\0';) {
      char* end = std::strchr(line, '\n');
      if (end != nullptr) *end = '\0';
      char* dash = nullptr;
      const uintptr_t lo = std::strtoull(line, &dash, 16);
      const uintptr_t hi = dash != nullptr && *dash == '-' ? std::strtoull(dash + 1, nullptr, 16) : 0;
      if (std::strstr(line, "[stack]") != nullptr) break;
      if (previous_hi != 0 && lo > previous_hi && previous_hi >= want.hi &&
          lo - previous_hi >= want.hi - want.lo) {
        void* filler = mmap(reinterpret_cast<void*>(previous_hi), lo - previous_hi, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (filler != MAP_FAILED) fillers_.push_back({previous_hi, lo});
        if (fillers_.size() == kMostFillers) break;
      }
      if (hi > previous_hi) previous_hi = hi;
      if (end == nullptr) break;
      line = end + 1;
    }
  }

  static constexpr size_t kMostFillers = 1024;
  std::string dir_;
  std::vector<Range> fillers_;
};

// A return address a byte into the plugin's PluginLeak.
void* LeakSiteOf(void* plugin) {
  void* start = dlsym(plugin, "PluginLeak");
  return start != nullptr ? static_cast<char*>(start) + 1 : nullptr;
}

// dlclose of `handle` as the checker's hook records it (DlcloseRemembering: the module map
// refreshed before and after, the dlclose at allocation sequence number `sequence`), with
// another thread's dlopen of `path` at its range in between (a refresh first would map the
// module map's new snapshot there). Returns the copy's handle (null if it was not mapped there).
void* ReplaceRecorded(void* handle, PluginCopies& copies, const std::string& path, Range range,
                      uint64_t sequence, ClosedModules* closes) {
  internal::ModuleMap& map = internal::ModuleMap::Global();
  map.RefreshIfChanged();
  const uint64_t before = map.generation();
  dlclose(handle);
  void* copy = copies.OpenAt(path, range);
  map.RefreshIfChanged();
  closes->RecordDlclose(before, map.generation(), sequence);
  return copy;
}

// The index of the module at `path` in `modules` (kUnknownModule: none).
uint32_t IndexOfPath(const std::vector<DumpModule>& modules, const std::string& path) {
  for (uint32_t i = 0; i < modules.size(); ++i) {
    if (modules[i].path == path) return i;
  }
  return kUnknownModule;
}

// The plugin loaded, the return address of its leak site in the stack table.
class LeakDumpStacksDlclose : public ::testing::Test {
 protected:
  void SetUp() override {
    plugin_ = dlopen(LEAKY_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(plugin_, nullptr) << dlerror();
    pc_ = LeakSiteOf(plugin_);
    ASSERT_NE(pc_, nullptr);
    range_ = MappedRange(pc_);
    ASSERT_LT(range_.lo, range_.hi);
  }

  // The stack of `n` frames all at the leak site.
  uint32_t StackOf(int n) {
    void* pcs[] = {pc_, pc_, pc_};
    return table_->Intern(pcs, n);
  }

  // Stack `i` of `stacks` as written is one frame, the leak site in the plugin (module 0).
  void ExpectWrittenInThePlugin(TableStacks& stacks, size_t i, const DumpModule& plugin) {
    std::vector<DumpFrame> scratch;
    ASSERT_EQ(stacks.HeadOf(i).frames, 1u);
    const DumpFrame* f = stacks.Frames(i, &scratch);
    EXPECT_EQ(f[0].module, 0u);
    EXPECT_EQ(f[0].offset, reinterpret_cast<uintptr_t>(pc_) - plugin.load_bias);
  }

  PluginCopies copies_;
  std::unique_ptr<StackTable> table_ = std::make_unique<StackTable>();
  void* plugin_ = nullptr;
  void* pc_ = nullptr;
  Range range_;
};

TEST_F(LeakDumpStacksDlclose, AFrameOfAnObjectReplacedAfterTheModulesWereListedKeepsThatObject) {
  const std::string other = copies_.Copy("other_plugin.so");
  ASSERT_NE(other, "");
  const std::atomic<ClosedModules*> no_dlclose{nullptr};
  TableStacks stacks(*table_, no_dlclose);
  stacks.Add(StackOf(1), 5, 5);
  const std::vector<DumpModule> modules = stacks.TakeModules();
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(modules[0].path, LEAKY_PLUGIN);

  // Another thread's dlclose and dlopen, the new object at the old one's address.
  dlclose(plugin_);
  void* replacement = copies_.OpenAt(other, range_);
  ASSERT_NE(replacement, nullptr) << "the copy was never mapped where the plugin was";
  internal::ModuleMap::Global().RefreshIfChanged();

  ExpectWrittenInThePlugin(stacks, 0, modules[0]);
  dlclose(replacement);
}

TEST_F(LeakDumpStacksDlclose, TheProcesssFirstDlcloseWhileTheStacksAreWrittenIsSeen) {
  // No dlclose yet when the modules are listed; then the plugin is closed (the first, recorded)
  // and its address taken by two copies in turn: the one unloaded there last is not listed, the
  // plugin is, as the object the stack had at its time.
  const std::string first = copies_.Copy("first_plugin.so");
  const std::string second = copies_.Copy("second_plugin.so");
  ASSERT_NE(first, "");
  ASSERT_NE(second, "");
  std::atomic<ClosedModules*> closed{nullptr};
  TableStacks stacks(*table_, closed);
  stacks.Add(StackOf(1), 5, 5);
  const std::vector<DumpModule> modules = stacks.TakeModules();
  ASSERT_EQ(modules.size(), 1u);

  ClosedModules closes;  // as the first dlclose hook creates it
  closed.store(&closes, std::memory_order_release);
  void* copy = ReplaceRecorded(plugin_, copies_, first, range_, 50, &closes);
  ASSERT_NE(copy, nullptr) << "the first copy was never mapped where the plugin was";
  copy = ReplaceRecorded(copy, copies_, second, range_, 60, &closes);
  ASSERT_NE(copy, nullptr) << "the second copy was never mapped where the plugin was";

  ExpectWrittenInThePlugin(stacks, 0, modules[0]);
  dlclose(copy);
}

TEST_F(LeakDumpStacksDlclose, AStacksFramesAreThoseOfTheObjectsItHadAtItsDate) {
  // The plugin closed at sequence number 50, a copy loaded at its address since. A live stack
  // whose earliest block is older (5) was made in the plugin; a dead one dated by "now" (100) is
  // in the copy; a dead one dated before the close (40: the close came after the dump read
  // "now") in the plugin. A stack's `earliest` (UINT64_MAX for a dead one) dates nothing.
  const std::string other = copies_.Copy("later_plugin.so");
  ASSERT_NE(other, "");
  ClosedModules closes;
  const std::atomic<ClosedModules*> closed{&closes};
  void* copy = ReplaceRecorded(plugin_, copies_, other, range_, 50, &closes);
  ASSERT_NE(copy, nullptr) << "the copy was never mapped where the plugin was";

  TableStacks stacks(*table_, closed);
  stacks.Add(StackOf(1), 5, 5);
  stacks.Add(StackOf(2), UINT64_MAX, 100);
  stacks.Add(StackOf(3), UINT64_MAX, 40);
  const std::vector<DumpModule> modules = stacks.TakeModules();
  const uint32_t closed_index = IndexOfPath(modules, LEAKY_PLUGIN);
  const uint32_t copy_index = IndexOfPath(modules, other);
  ASSERT_NE(closed_index, kUnknownModule);
  ASSERT_NE(copy_index, kUnknownModule);
  EXPECT_EQ(modules[closed_index].closed_at, 50u);

  std::vector<DumpFrame> scratch;
  const auto modules_of = [&](size_t i) {
    std::vector<uint32_t> out;
    const DumpFrame* f = stacks.Frames(i, &scratch);
    for (uint32_t k = 0; k < stacks.HeadOf(i).frames; ++k) out.push_back(f[k].module);
    return out;
  };
  EXPECT_EQ(modules_of(0), std::vector<uint32_t>(1, closed_index));
  EXPECT_EQ(modules_of(1), std::vector<uint32_t>(2, copy_index));
  EXPECT_EQ(modules_of(2), std::vector<uint32_t>(3, closed_index));
  dlclose(copy);
}

TEST_F(LeakDumpStacksDlclose, AClosedObjectHoldsTheCallOfAReturnAddressNotTheAddressItself) {
  // A frame is a return address: the object that held its call, a byte back. One just past the
  // closed object's end was a call in it; one at its start, a call in whatever lay below.
  internal::ModuleMap& map = internal::ModuleMap::Global();
  map.RefreshIfChanged();
  const uint64_t before = map.generation();
  ASSERT_EQ(dlclose(plugin_), 0);
  map.RefreshIfChanged();
  ClosedModules closes;
  closes.RecordDlclose(before, map.generation(), 50);
  internal::UnloadedModule unloaded;
  ASSERT_TRUE(map.FindUnloaded(reinterpret_cast<uintptr_t>(pc_), &unloaded));
  ASSERT_EQ(std::string(unloaded.path), LEAKY_PLUGIN);

  LoadedObject object;
  ASSERT_TRUE(closes.Find(unloaded.extent.hi, 5, &object));
  EXPECT_EQ(object.path, LEAKY_PLUGIN);
  EXPECT_EQ(object.start, unloaded.extent.lo);
  EXPECT_EQ(object.closed_at, 50u);
  const bool below = closes.Find(unloaded.extent.lo, 5, &object);
  EXPECT_FALSE(below && object.path == LEAKY_PLUGIN) << "the call before its start was not in it";
  EXPECT_TRUE(closes.Find(reinterpret_cast<uintptr_t>(pc_), 5, &object));
}

TEST_F(LeakDumpStacksDlclose, AClosedObjectNotListedWhenTheModulesWereTakenIsWrittenAsItsPc) {
  // The modules are listed (none: no stack yet) before the process's first dlclose; the stack's
  // frame is then resolved in the closed plugin, which the list lacks: its frame is of no known
  // object and keeps the PC itself, as for a loaded object not listed (dump_modules.h).
  ClosedModules closes;
  std::atomic<ClosedModules*> closed{nullptr};
  ModuleIndexer indexer(&closed);
  EXPECT_TRUE(indexer.TakeModules().empty());
  internal::ModuleMap& map = internal::ModuleMap::Global();
  map.RefreshIfChanged();
  const uint64_t before = map.generation();
  dlclose(plugin_);
  map.RefreshIfChanged();
  closes.RecordDlclose(before, map.generation(), 10);
  closed.store(&closes);
  const DumpFrame frame = indexer.Resolve(reinterpret_cast<uintptr_t>(pc_), 5);
  EXPECT_EQ(frame.module, kUnknownModule);
  EXPECT_EQ(frame.offset, reinterpret_cast<uintptr_t>(pc_));
}

}  // namespace
}  // namespace stackwalk::leakcheck::dump
