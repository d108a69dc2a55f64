#include "core/proc_maps.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace stackwalk::internal {
namespace {

// Feeds `text` through a pipe, as /proc/self/maps would come: in read()-sized pieces.
bool FindIn(const std::string& text, uint64_t addr, Mapping* out, AddressRange* gap = nullptr) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fds[1]);
  bool found = FindMappingInMapsFd(fds[0], addr, out, gap);
  close(fds[0]);
  return found;
}

const char kMaps[] =
    "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /usr/bin/demo\n"
    "55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 123 /usr/bin/demo\n"
    "7ffd12300000-7ffd12321000 rw-p 00000000 00:00 0 [stack]\n";

TEST(ProcMaps, FindsTheMappingAndItsPermissions) {
  Mapping m;
  ASSERT_TRUE(FindIn(kMaps, 0x55d0c0a01234, &m));
  EXPECT_EQ(m.range.lo, 0x55d0c0a01000u);
  EXPECT_EQ(m.range.hi, 0x55d0c0a02000u);
  EXPECT_TRUE(m.readable);
  EXPECT_FALSE(m.writable);
  EXPECT_TRUE(m.executable);
  ASSERT_TRUE(FindIn(kMaps, 0x7ffd12320ff8, &m));
  EXPECT_TRUE(m.writable);
  EXPECT_FALSE(m.executable);
}

TEST(ProcMaps, AnAddressInNoMappingGetsTheGapAroundIt) {
  Mapping m;
  AddressRange gap{1, 2};
  EXPECT_FALSE(FindIn(kMaps, 0x600000000000, &m, &gap));  // between the program and the stack
  EXPECT_EQ(gap.lo, 0x55d0c0a02000u);
  EXPECT_EQ(gap.hi, 0x7ffd12300000u);
  EXPECT_FALSE(FindIn(kMaps, 0x1000, &m, &gap));  // below every line
  EXPECT_EQ(gap.lo, 0u);
  EXPECT_EQ(gap.hi, 0x55d0c0a00000u);
  EXPECT_FALSE(FindIn(kMaps, 0x7ffd12321000, &m, &gap));  // above every line
  EXPECT_EQ(gap.lo, 0x7ffd12321000u);
  EXPECT_EQ(gap.hi, ~uint64_t{0});
  ASSERT_TRUE(FindIn(kMaps, 0x55d0c0a01234, &m, &gap));  // found: no gap
  EXPECT_TRUE(gap.empty());
  // A text that does not end its last line, or is malformed, tells no gap.
  EXPECT_FALSE(FindIn("55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 123 /a", 0x7ffd00000000, &m,
                      &gap));
  EXPECT_TRUE(gap.empty());
  EXPECT_FALSE(FindIn("55d0c0a00000-55d0c0a01000 r--p 0 0 0\nzz-yy\n", 0x7ffd00000000, &m, &gap));
  EXPECT_TRUE(gap.empty());
}

TEST(ProcMaps, HalfOpenRanges) {
  Mapping m;
  EXPECT_FALSE(FindIn(kMaps, 0x7ffd12321000, &m));
  EXPECT_FALSE(FindIn(kMaps, 0x55d0c09fffff, &m));
  ASSERT_TRUE(FindIn(kMaps, 0x55d0c0a01000, &m));
  EXPECT_TRUE(m.executable);
}

TEST(ProcMaps, LinesLongerThanTheBuffer) {
  std::string text = "1000-2000 r--p 00000000 08:01 1 /" + std::string(10000, 'x') + "\n" +
                     "3000-4000 rw-p 00000000 00:00 0\n";
  Mapping m;
  ASSERT_TRUE(FindIn(text, 0x3800, &m));
  EXPECT_EQ(m.range.lo, 0x3000u);
}

TEST(ProcMaps, MalformedTextFindsNothing) {
  Mapping m;
  EXPECT_FALSE(FindIn("zzzz-2000 r--p\n3000-4000 rw-p 0 0:0 0\n", 0x3800, &m));
  EXPECT_FALSE(FindIn("1000-", 0x1000, &m));
  EXPECT_FALSE(FindIn("", 0x1000, &m));
  EXPECT_FALSE(FindIn("11111111111111111111-2 rw-p\n", 0x1, &m));  // overflow
}

TEST(ProcMaps, FindsOwnStackAndCode) {
  int local = 0;
  Mapping m;
  ASSERT_TRUE(FindMapping(reinterpret_cast<uintptr_t>(&local), &m));
  EXPECT_TRUE(m.readable && m.writable);
  ASSERT_TRUE(FindMapping(reinterpret_cast<uintptr_t>(&FindIn), &m));
  EXPECT_TRUE(m.executable);
}

// The line parser FindMapping streams through, over whole lines (the symbolizer tool's maps).
TEST(ProcMaps, ParseMapsLineGivesOffsetAndPath) {
  const std::string text =
      "7f1c2a000000-7f1c2a028000 r-xp 00028000 08:01 1234      /usr/lib/a b.so (deleted)\r\n";
  MapsLine line;
  ASSERT_TRUE(ParseMapsLine(text.data(), text.size(), &line));
  EXPECT_EQ(line.mapping.range.lo, 0x7f1c2a000000u);
  EXPECT_EQ(line.mapping.range.hi, 0x7f1c2a028000u);
  EXPECT_TRUE(line.mapping.executable);
  EXPECT_FALSE(line.mapping.writable);
  EXPECT_EQ(line.offset, 0x28000u);
  EXPECT_EQ(text.substr(line.path_begin, line.path_end - line.path_begin),
            "/usr/lib/a b.so (deleted)");
  const std::string anonymous = "1000-2000 rw-p 00000000 00:00 0";  // no path, no newline
  ASSERT_TRUE(ParseMapsLine(anonymous.data(), anonymous.size(), &line));
  EXPECT_EQ(line.path_begin, line.path_end);
  for (const std::string bad : {"2000-1000 r-xp 0 08:01 1 /x", "1000-2000 r-xp zz 08:01 1 /x",
                                "1000-2000 r-xp 0 08:01 x1 /x", "1000-2000 r-", "", "zz-2000 r-xp 0 0:0 0"}) {
    EXPECT_FALSE(ParseMapsLine(bad.data(), bad.size(), &line)) << bad;
  }
}

}  // namespace
}  // namespace stackwalk::internal
