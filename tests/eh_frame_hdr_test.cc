// FindFde's binary search of .eh_frame_hdr on made-up tables: the encoding every linker writes
// (datarel sdata4, searched without decoding each entry) and an absolute 8-byte one (decoded
// entry by entry) give the FDE of the last entry at or below a PC, as a linear scan does.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ehframe/eh_frame_hdr.h"
#include "ehframe/pointer_encoding.h"

namespace stackwalk::internal {
namespace {

struct Entry {
  uint64_t start;  // the code address the FDE starts at
  uint64_t fde;    // its address
};

// A header with a search table of `table_encoding` (kPeDatarel | kPeSdata4, or kPeSdata8
// absolute) claiming `count` entries (the real number unless a test lies), room for `capacity`;
// Write() puts the entries in.
class Table {
 public:
  Table(size_t capacity, uint8_t table_encoding, uint32_t count)
      : bytes_(16 + capacity * 16 + 64), encoding_(table_encoding), count_(count) {}

  void Write(const std::vector<Entry>& entries) {
    const uint64_t hdr = address();
    uint8_t* p = bytes_.data();
    p[0] = 1;
    p[1] = kPePcrel | kPeSdata4;  // eh_frame_ptr: not read by the search
    p[2] = kPeUdata4;
    p[3] = encoding_;
    Put<int32_t>(p + 4, 0);
    Put<uint32_t>(p + 8, count_);
    uint8_t* at = p + 12;
    for (const Entry& e : entries) {
      if (encoding_ == (kPeDatarel | kPeSdata4)) {
        Put<int32_t>(at, static_cast<int32_t>(e.start - hdr));
        Put<int32_t>(at + 4, static_cast<int32_t>(e.fde - hdr));
        at += 8;
      } else {
        Put<uint64_t>(at, e.start);
        Put<uint64_t>(at + 8, e.fde);
        at += 16;
      }
    }
    end_ = hdr + static_cast<uint64_t>(at - p);
  }

  uint64_t address() const { return reinterpret_cast<uintptr_t>(bytes_.data()); }
  EhFrameSection Section(uint64_t load_bias = 0) const {
    EhFrameSection s;
    s.hdr = address();
    s.bounds = {address(), end_};
    s.address_size = 8;
    s.load_bias = load_bias;
    return s;
  }

 private:
  template <typename T>
  static void Put(uint8_t* at, T value) {
    std::memcpy(at, &value, sizeof value);
  }
  std::vector<uint8_t> bytes_;
  uint8_t encoding_;
  uint32_t count_;
  uint64_t end_ = 0;
};

// The last entry starting at or below pc: its FDE, or 0.
uint64_t Scan(const std::vector<Entry>& entries, uint64_t pc) {
  uint64_t found = 0;
  for (const Entry& e : entries) {
    if (e.start <= pc) found = e.fde;
  }
  return found;
}

// Entries below and above the header (negative and positive 32-bit offsets), unevenly spaced.
std::vector<Entry> MadeUpEntries(uint64_t hdr, int n) {
  std::vector<Entry> entries;
  uint64_t start = hdr - 0x200000;
  for (int i = 0; i < n; ++i) {
    entries.push_back({start, hdr + 0x1000 + static_cast<uint64_t>(i) * 0x40});
    start += 0x10 + static_cast<uint64_t>((i * 7919) % 0x3000) * 0x10;
  }
  return entries;
}

TEST(EhFrameHdr, BothEncodingsFindTheLastEntryAtOrBelowEveryPc) {
  for (int n : {1, 2, 3, 100, 4097}) {
    // Made from the datarel table's address: its offsets are 32-bit.
    Table datarel(n, kPeDatarel | kPeSdata4, static_cast<uint32_t>(n));
    const std::vector<Entry> entries = MadeUpEntries(datarel.address(), n);
    datarel.Write(entries);
    Table absolute(n, kPeSdata8, static_cast<uint32_t>(n));
    absolute.Write(entries);
    int checked = 0;
    for (const Entry& e : entries) {
      for (uint64_t pc : {e.start - 1, e.start, e.start + 1}) {
        const uint64_t want = Scan(entries, pc);
        ASSERT_EQ(FindFde(datarel.Section(), pc), want) << n << " entries, pc " << pc;
        ASSERT_EQ(FindFde(absolute.Section(), pc), want) << n << " entries, pc " << pc;
        ++checked;
      }
    }
    EXPECT_EQ(checked, 3 * n);
    EXPECT_EQ(FindFde(datarel.Section(), entries.front().start - 1), 0u);
    EXPECT_EQ(FindFde(datarel.Section(), UINT64_MAX), entries.back().fde);
  }
}

TEST(EhFrameHdr, ATableReadFromACopyIsSearchedAtTheTargetsAddresses) {
  // Another process's tables read from a copy: relative code addresses move by load_bias.
  Table datarel(50, kPeDatarel | kPeSdata4, 50);
  const std::vector<Entry> entries = MadeUpEntries(datarel.address(), 50);
  datarel.Write(entries);
  const uint64_t bias = 0x7000000000;
  for (const Entry& e : entries) {
    EXPECT_EQ(FindFde(datarel.Section(bias), e.start + bias), e.fde);
    EXPECT_EQ(FindFde(datarel.Section(bias), e.start + bias - 1), Scan(entries, e.start - 1));
  }
}

TEST(EhFrameHdr, ACountPastTheSectionFindsNothing) {
  Table datarel(10, kPeDatarel | kPeSdata4, 1000000);
  const std::vector<Entry> entries = MadeUpEntries(datarel.address(), 10);
  datarel.Write(entries);
  EXPECT_EQ(FindFde(datarel.Section(), entries[5].start), 0u);
  Table absolute(10, kPeSdata8, 1000000);
  absolute.Write(entries);
  EXPECT_EQ(FindFde(absolute.Section(), entries[5].start), 0u);
  Table honest(10, kPeDatarel | kPeSdata4, 10);
  honest.Write(MadeUpEntries(honest.address(), 10));
  EXPECT_EQ(FindFde(honest.Section(), MadeUpEntries(honest.address(), 10)[5].start),
            MadeUpEntries(honest.address(), 10)[5].fde);
}

}  // namespace
}  // namespace stackwalk::internal
