// The walk's remembered code ranges (walk/native_walk.h) for a library dlopen'ed after the module
// map's last rebuild: glibc's _dl_find_object answers for it, and the walk remembers its answer,
// so later walks through the library do not ask again (a preloaded leak checker never sees
// dlopen: python's extension modules are such libraries for the whole run).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/dl_find_object.h"
#include "core/module_map.h"
#include "fixtures/chain_lib.h"
#include "stackwalk/stackwalk.h"
#include "walk/native_walk.h"

namespace stackwalk::internal {
namespace {

constexpr int kMax = 64;

struct Captures {
  void* cold[kMax];
  int n_cold = 0;
  void* warm[kMax];
  int n_warm = 0;
};

extern "C" __attribute__((noinline)) int code_ranges_capture(void* arg) {
  auto* c = static_cast<Captures*>(arg);
  c->n_cold = stackwalk_backtrace(c->cold, kMax, STACKWALK_EHFRAME);
  c->n_warm = stackwalk_backtrace(c->warm, kMax, STACKWALK_EHFRAME);
  __asm__ volatile("" ::: "memory");
  return c->n_cold;
}

bool RememberedAsCode(uint64_t pc) {
  const uint64_t tag = ModuleMap::Global().rebuild_count() + 1;
  for (const LastCodeRange& last : t_last_code.range) {
    if (last.tag == tag && pc - ~last.inverted_lo < last.span) return true;
  }
  return false;
}

TEST(CodeRanges, ALibraryLoadedSinceTheSnapshotIsRememberedAfterOneWalk) {
  if (!kHaveDlFindObject) GTEST_SKIP() << "no _dl_find_object in this C library";
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  ASSERT_NE(entry, nullptr);
  Captures c;
  entry(code_ranges_capture, &c);
  // code_ranges_capture <- chain_lib_middle <- chain_lib_entry <- this test.
  ASSERT_GE(c.n_cold, 4);
  const uint64_t in_library = reinterpret_cast<uintptr_t>(c.cold[1]);
  GlibcObject object;
  ASSERT_TRUE(FindObjectByGlibc(reinterpret_cast<uintptr_t>(entry), &object));
  ASSERT_LT(in_library - object.map_start, object.map_end - object.map_start)
      << "frame 1 is not in the library";
  {
    ModuleMap::Reader reader(ModuleMap::Global());
    ASSERT_NE(reader.snapshot(), nullptr);
    ASSERT_EQ(reader.snapshot()->Find(in_library), nullptr)
        << "the module map knows the library: the walk did not need glibc";
  }
  EXPECT_TRUE(RememberedAsCode(in_library - 1));
  // Remembering changes nothing the walk finds.
  ASSERT_EQ(c.n_warm, c.n_cold);
  for (int i = 1; i < c.n_cold; ++i) EXPECT_EQ(c.warm[i], c.cold[i]) << i;
  dlclose(lib);
}

// The ranges lie in the thread's static TLS, a root of the leak checker's scan, and outlive their
// code (a JIT's unmapped pages, a dlclose'd object's segment, where large blocks are mapped next):
// no word of a remembered range is a range's start. (Read field by field: the sanitizers' checks
// take the address of initial-exec t_last_code, in a test, for null.)
TEST(CodeRanges, ARememberedRangesStartIsNotNamedInTheThreadsTls) {
  void* pcs[kMax];
  const int n = stackwalk_backtrace(pcs, kMax, STACKWALK_EHFRAME);
  ASSERT_GE(n, 2);
  const uint64_t tag = ModuleMap::Global().rebuild_count() + 1;
  std::vector<uint64_t> starts;
  for (int i = 0; i < n; ++i) {
    const uint64_t pc = reinterpret_cast<uintptr_t>(pcs[i]) - 1;
    for (const LastCodeRange& last : t_last_code.range) {
      if (last.tag == tag && pc - ~last.inverted_lo < last.span) starts.push_back(~last.inverted_lo);
    }
  }
  ASSERT_FALSE(starts.empty()) << "the walk remembered no range holding a frame";
  for (const LastCodeRange& last : t_last_code.range) {
    for (uint64_t start : starts) {
      EXPECT_NE(last.tag, start);
      EXPECT_NE(last.inverted_lo, start) << "a range's start kept as it is";
      EXPECT_NE(last.span, start);
    }
  }
}

}  // namespace
}  // namespace stackwalk::internal
