// SortByAddress (sort_by_address.h).
#include "leakcheck/scan/sort_by_address.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace stackwalk::leakcheck {
namespace {

constexpr unsigned kDigitBits = 11;  // 2,048 counters (16 KiB on the stack): fits L1
constexpr size_t kDigits = size_t{1} << kDigitBits;
constexpr size_t kRadixFrom = 4096;  // fewer blocks: std::sort is as fast

}  // namespace

void SortByAddress(Allocation* blocks, size_t n, ScratchArena* scratch) {
  auto by_address = [](const Allocation& a, const Allocation& b) { return a.address < b.address; };
  Allocation* other = n >= kRadixFrom ? scratch->AllocateArray<Allocation>(n) : nullptr;
  if (other == nullptr) {
    std::sort(blocks, blocks + n, by_address);  // in place: std::stable_sort would malloc
    return;
  }
  // The key: the address less the lowest, without the low bits every address shares (malloc's
  // alignment), so that only the bits that differ cost passes.
  uint64_t lowest = UINT64_MAX, highest = 0;
  for (size_t i = 0; i < n; ++i) {
    lowest = std::min<uint64_t>(lowest, blocks[i].address);
    highest = std::max<uint64_t>(highest, blocks[i].address);
  }
  uint64_t any_bit = 0;
  for (size_t i = 0; i < n; ++i) any_bit |= blocks[i].address - lowest;
  if (any_bit == 0) return;  // one address
  const unsigned shift = static_cast<unsigned>(__builtin_ctzll(any_bit));
  const unsigned bits = 64 - static_cast<unsigned>(__builtin_clzll((highest - lowest) >> shift));
  Allocation* from = blocks;
  Allocation* to = other;
  size_t count[kDigits];
  for (unsigned at = 0; at < bits; at += kDigitBits) {
    auto digit = [&](const Allocation& a) {
      return static_cast<size_t>((((a.address - lowest) >> shift) >> at) & (kDigits - 1));
    };
    std::memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; ++i) ++count[digit(from[i])];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t here = c;
      c = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) to[count[digit(from[i])]++] = from[i];
    std::swap(from, to);
  }
  if (from != blocks) std::memcpy(blocks, from, n * sizeof(Allocation));
}

}  // namespace stackwalk::leakcheck
