// RootSet: ranges kept in order past its first growth, bytes tallied per kind, empty ranges
// dropped, its memory the checker's own (never a root itself).
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/roots.h"

namespace stackwalk::leakcheck {
namespace {

TEST(RootSet, KeepsRangesAndTalliesBytesPerKind) {
  RootSet roots;
  for (uintptr_t i = 0; i < 5000; ++i) {
    roots.Add({0x10000 + i * 0x100, 0x10000 + i * 0x100 + 0x40,
               i % 2 == 0 ? RootKind::kStack : RootKind::kAnonymous, static_cast<int32_t>(i), i % 3 == 0});
  }
  roots.Add({0x5000, 0x5000, RootKind::kGlobals, 0, false});  // empty: dropped
  roots.Add({0x6000, 0x5000, RootKind::kGlobals, 0, false});  // inverted: dropped
  ASSERT_EQ(roots.size(), 5000u);
  EXPECT_FALSE(roots.overflowed());
  EXPECT_EQ(roots.bytes(RootKind::kStack), 2500u * 0x40);
  EXPECT_EQ(roots.bytes(RootKind::kAnonymous), 2500u * 0x40);
  EXPECT_EQ(roots.bytes(RootKind::kGlobals), 0u);
  for (size_t i = 0; i < roots.size(); ++i) {
    EXPECT_EQ(roots[i].lo, 0x10000 + i * 0x100);
    EXPECT_EQ(roots[i].tid, static_cast<int32_t>(i));
    EXPECT_EQ(roots[i].copy, i % 3 == 0);
  }
  const RootRange* memory = &roots[0];
  EXPECT_TRUE(IsOwnMapping(reinterpret_cast<uintptr_t>(memory),
                           reinterpret_cast<uintptr_t>(memory + 1)));
}

TEST(RootSet, NamesEveryKind) {
  for (int k = 0; k < kRootKindCount; ++k) {
    EXPECT_NE(std::string(RootKindName(static_cast<RootKind>(k))), "?") << k;
  }
}

}  // namespace
}  // namespace stackwalk::leakcheck
