// The module map on the real process: what it records of each object, and that it rebuilds
// exactly when dlopen/dlclose changed the loaded set.
#include "core/module_map.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

namespace stackwalk::internal {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Basename(const std::string& s) { return s.substr(s.rfind('/') + 1); }

TEST(ModuleMap, DescribesTheMainExecutableAndLibc) {
  ModuleMap& map = ModuleMap::Global();
  map.RefreshIfChanged();
  ModuleMap::Reader reader(map);
  const ModuleSnapshot* snap = reader.snapshot();
  ASSERT_NE(snap, nullptr);

  const Module* self = snap->FindExecutable(reinterpret_cast<uintptr_t>(&EndsWith));
  ASSERT_NE(self, nullptr);
  EXPECT_TRUE(self->is_main_executable);
#if defined(__arm__)
  EXPECT_FALSE(self->arm_exidx.empty());  // 32-bit ARM unwinds through .ARM.exidx
#else
  EXPECT_FALSE(self->eh_frame_hdr.empty());
#endif
  EXPECT_GT(self->build_id_size, 0);

  // getpid: a libc function no sanitizer runtime intercepts (strlen would be libasan's).
  const Module* libc = snap->FindExecutable(reinterpret_cast<uintptr_t>(&getpid));
  ASSERT_NE(libc, nullptr);
  EXPECT_NE(std::string(libc->path).find("libc.so"), std::string::npos) << libc->path;
  EXPECT_FALSE(libc->is_main_executable);
  EXPECT_EQ(libc->build_id_size, 20);  // Debian links with --build-id=sha1
#if defined(__arm__)
  EXPECT_FALSE(libc->arm_exidx.empty());
#endif

  // Sorted and disjoint, so that Find is a binary search.
  for (int i = 1; i < snap->size(); ++i) {
    EXPECT_LE(snap->module(i - 1).extent.hi, snap->module(i).extent.lo);
  }
  // Data is not code.
  static int data_object;
  EXPECT_EQ(snap->FindExecutable(reinterpret_cast<uintptr_t>(&data_object)), nullptr);
  EXPECT_EQ(snap->Find(0), nullptr);
}

TEST(ModuleMap, MarksTheVdso) {
  uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) GTEST_SKIP() << "no vDSO in this process (e.g. under some qemu-user versions)";
  ModuleMap::Reader reader(ModuleMap::Global());
  const Module* m = reader.snapshot()->Find(vdso);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->is_vdso);
  EXPECT_GT(m->exec_count, 0);
}

TEST(ModuleMap, RebuildsOnlyWhenTheLoadedSetChanges) {
  ModuleMap& map = ModuleMap::Global();
  map.RefreshIfChanged();
  const uint64_t before = map.rebuild_count();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(map.RefreshIfChanged());
  EXPECT_EQ(map.rebuild_count(), before);

  for (int cycle = 0; cycle < 3; ++cycle) {
    void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    uintptr_t pc = reinterpret_cast<uintptr_t>(dlsym(lib, "chain_lib_entry"));
    ASSERT_NE(pc, 0u);
    {
      // Not yet seen: the snapshot predates the dlopen.
      ModuleMap::Reader reader(map);
      EXPECT_EQ(reader.snapshot()->FindExecutable(pc), nullptr);
    }
    EXPECT_TRUE(map.RefreshIfChanged());
    EXPECT_EQ(map.rebuild_count(), before + 2 * cycle + 1);
    EXPECT_FALSE(map.RefreshIfChanged());
    {
      ModuleMap::Reader reader(map);
      const Module* m = reader.snapshot()->FindExecutable(pc);
      ASSERT_NE(m, nullptr);
      EXPECT_EQ(Basename(m->path), Basename(CHAIN_LIB_PATH));
      EXPECT_GT(m->build_id_size, 0);
      EXPECT_EQ(m->extent.lo - m->load_bias, 0u);  // a shared library is linked at 0
    }
    ASSERT_EQ(dlclose(lib), 0);
    EXPECT_TRUE(map.RefreshIfChanged());
    EXPECT_EQ(map.rebuild_count(), before + 2 * cycle + 2);
    ModuleMap::Reader reader(map);
    EXPECT_EQ(reader.snapshot()->Find(pc), nullptr) << "a dlclose'd module is still resolved";
  }
}

TEST(ModuleMap, ReaderKeepsItsSnapshotAcrossRebuilds) {
  ModuleMap& map = ModuleMap::Global();
  ModuleMap::Reader reader(map);
  const ModuleSnapshot* pinned = reader.snapshot();
  ASSERT_NE(pinned, nullptr);
  uint64_t generation = pinned->generation();
  int size = pinned->size();
  ASSERT_TRUE(map.Rebuild());
  ASSERT_TRUE(map.Rebuild());
  // Still mapped and unchanged while pinned (ASan would flag a use after munmap as a crash).
  EXPECT_EQ(pinned->generation(), generation);
  EXPECT_EQ(pinned->size(), size);
  EXPECT_NE(pinned->Find(reinterpret_cast<uintptr_t>(&EndsWith)), nullptr);
}

// A fork while another thread refreshes the map (holds its writer lock): the child's own first
// refresh (a walk's, an allocation hook's) must not wait for that lock, since the thread that
// held it does not exist in the child. A child that hangs dies of its alarm.
TEST(ModuleMap, AChildForkedWhileAnotherThreadHoldsTheWriterLockCanRefresh) {
  struct Hold {
    std::atomic<int> state{0};  // 1: the lock is held; 2: let go
  } hold;
  std::thread writer([&hold] {
    ModuleMap::WithWriterLock(
        [](void* arg) {
          auto* h = static_cast<Hold*>(arg);
          h->state.store(1);
          while (h->state.load() != 2) usleep(1000);
        },
        &hold);
  });
  while (hold.state.load() != 1) usleep(1000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    ModuleMap::Global().RefreshIfChanged();
    _exit(0);
  }
  int status = 0;
  const pid_t waited = waitpid(pid, &status, 0);
  hold.state.store(2);
  writer.join();
  ASSERT_EQ(waited, pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child waited for the lock another thread of its parent held at the fork";
}

}  // namespace
}  // namespace stackwalk::internal
