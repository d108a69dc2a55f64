// OwnMap's registry against /proc/self/maps: what it maps is registered (and only that), a remap
// follows the mapping, an unmap forgets it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "leakcheck/scan/own_mappings.h"
#include "writable_words.h"

namespace stackwalk::leakcheck {
namespace {

uintptr_t Lo(void* p) { return reinterpret_cast<uintptr_t>(p); }

// The table lies in the checker's globals, a root: an unmapped range's address left there would
// point into whatever large block is mapped there next, and keep it reachable.
TEST(OwnMappings, AnUnmappedRangeIsNoLongerNamedInTheTable) {
  const size_t bytes = 3 * 4096;
  void* mapped = OwnMap(bytes);
  ASSERT_NE(mapped, nullptr);
  const auto address = reinterpret_cast<uintptr_t>(mapped);
  const auto* table_code = reinterpret_cast<const void*>(&OwnUnmap);
  ASSERT_GT(testing::WritableWordsEqualTo(table_code, address), 0u) << "registered";
  OwnUnmap(mapped, bytes);
  EXPECT_EQ(testing::WritableWordsEqualTo(table_code, address), 0u);
}

TEST(OwnMappings, RegistersWhatItMapsAndNothingElse) {
  const size_t page = sysconf(_SC_PAGESIZE);
  void* own = OwnMap(4 * page);
  ASSERT_NE(own, nullptr);
  std::memset(own, 0xab, 4 * page);  // writable
  EXPECT_TRUE(IsOwnMapping(Lo(own), Lo(own) + 1));
  EXPECT_TRUE(IsOwnMapping(Lo(own) + 3 * page, Lo(own) + 5 * page));  // overlaps the last page
  EXPECT_FALSE(IsOwnMapping(Lo(own) + 4 * page, Lo(own) + 5 * page));  // just past it

  void* theirs = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(theirs, MAP_FAILED);
  EXPECT_FALSE(IsOwnMapping(Lo(theirs), Lo(theirs) + page));
  int on_stack = 0;
  EXPECT_FALSE(IsOwnMapping(Lo(&on_stack), Lo(&on_stack) + sizeof on_stack));
  munmap(theirs, page);

  OwnUnmap(own, 4 * page);
  EXPECT_FALSE(IsOwnMapping(Lo(own), Lo(own) + 4 * page));
}

TEST(OwnMappings, RemapFollowsTheMapping) {
  const size_t page = sysconf(_SC_PAGESIZE);
  void* own = OwnMap(page);
  ASSERT_NE(own, nullptr);
  static_cast<char*>(own)[0] = 7;
  void* grown = OwnRemap(own, page, 64 * page);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(static_cast<char*>(grown)[0], 7);
  EXPECT_TRUE(IsOwnMapping(Lo(grown) + 63 * page, Lo(grown) + 64 * page));
  if (grown != own) EXPECT_FALSE(IsOwnMapping(Lo(own), Lo(own) + page));
  OwnUnmap(grown, 64 * page);
  EXPECT_FALSE(IsOwnMapping(Lo(grown), Lo(grown) + 64 * page));
}

TEST(OwnMappings, ManyMappingsReuseFreedSlots) {
  const size_t page = sysconf(_SC_PAGESIZE);
  // More map/unmap rounds than the registry has slots: freed slots are taken again.
  for (int round = 0; round < 3; ++round) {
    std::vector<void*> maps;
    for (int i = 0; i < 2000; ++i) {
      void* p = OwnMap(page);
      ASSERT_NE(p, nullptr);
      maps.push_back(p);
    }
    for (void* p : maps) EXPECT_TRUE(IsOwnMapping(Lo(p), Lo(p) + page));
    for (void* p : maps) OwnUnmap(p, page);
    for (void* p : maps) EXPECT_FALSE(IsOwnMapping(Lo(p), Lo(p) + page));
  }
}

TEST(OwnMappings, LowestOverlappingOwnMapping) {
  const size_t page = sysconf(_SC_PAGESIZE);
  void* a = OwnMap(page);
  void* b = OwnMap(page);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const uintptr_t lo = Lo(a) < Lo(b) ? Lo(a) : Lo(b);
  const uintptr_t hi = (Lo(a) < Lo(b) ? Lo(b) : Lo(a)) + page;
  uintptr_t own_lo = 0, own_hi = 0;
  ASSERT_TRUE(LowestOwnMapping(lo - page, hi + page, &own_lo, &own_hi));
  EXPECT_EQ(own_lo, lo);
  EXPECT_EQ(own_hi, lo + page);
  ASSERT_TRUE(LowestOwnMapping(hi - 1, hi, &own_lo, &own_hi));  // only the upper one
  EXPECT_EQ(own_hi, hi);
  OwnUnmap(a, page);
  OwnUnmap(b, page);
  EXPECT_FALSE(LowestOwnMapping(lo, hi, &own_lo, &own_hi));
}

}  // namespace
}  // namespace stackwalk::leakcheck
