#include "exidx/exidx_table.h"

#include <cstring>

namespace stackwalk::internal {
namespace {

constexpr uint32_t kCantUnwind = 1;

bool ReadWord32(const AddressRange& bounds, uint64_t addr, uint32_t* out) {
  if ((addr & 3) != 0 || !bounds.ContainsSpan(addr, 4)) return false;
  std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), 4);
  return true;
}

// A prel31 field (§5): a 31-bit signed offset from the field's own address.
uint64_t Prel31(uint64_t field_addr, uint32_t word) {
  int32_t offset = static_cast<int32_t>(word << 1) >> 1;
  return field_addr + static_cast<uint64_t>(static_cast<int64_t>(offset));
}

}  // namespace

const char* ExidxErrorString(ExidxError error) {
  switch (error) {
    case ExidxError::kOk:
      return "ok";
    case ExidxError::kNoEntry:
      return "no index entry covers the PC";
    case ExidxError::kCantUnwind:
      return "EXIDX_CANTUNWIND";
    case ExidxError::kBadEntry:
      return "malformed exception index or table entry";
    case ExidxError::kUnknownPersonality:
      return "unknown compact personality routine";
  }
  return "unknown exidx error";
}

bool EhabiOpcodes::Next(uint8_t* byte) {
  if (bytes_left_ == 0) {
    if (words_left_ == 0) return false;
    uint32_t word;
    if (!ReadWord32(bounds_, next_, &word)) {
      words_left_ = 0;
      return false;
    }
    data_ = word;
    bytes_left_ = 4;
    next_ += 4;
    --words_left_;
  }
  *byte = static_cast<uint8_t>(data_ >> 24);
  data_ <<= 8;
  --bytes_left_;
  return true;
}

bool EhabiOpcodes::NextUleb128(uint64_t* value) {
  uint64_t result = 0;
  int shift = 0;
  uint8_t byte;
  do {
    if (!Next(&byte) || shift > 28) return false;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
  } while (byte & 0x80);
  *value = result;
  return true;
}

ExidxError FindExidxEntry(const ExidxSection& section, uint64_t pc, uint64_t* entry,
                          uint64_t* function_start) {
  const uint64_t count = (section.table.hi - section.table.lo) / 8;
  if (section.table.empty() || count == 0) return ExidxError::kNoEntry;
  uint64_t lo = 0, hi = count;  // first entry starting above pc
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    uint64_t at = section.table.lo + mid * 8;
    uint32_t word;
    if (!ReadWord32(section.table, at, &word) || (word & 0x80000000u) != 0) {
      return ExidxError::kBadEntry;
    }
    if (Prel31(at, word) + section.load_bias <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return ExidxError::kNoEntry;
  *entry = section.table.lo + (lo - 1) * 8;
  uint32_t word = 0;
  if (!ReadWord32(section.table, *entry, &word)) return ExidxError::kBadEntry;
  *function_start = Prel31(*entry, word) + section.load_bias;
  return ExidxError::kOk;
}

ExidxError DecodeExidxEntry(const ExidxSection& section, uint64_t entry, uint64_t* personality,
                            EhabiOpcodes* opcodes) {
  uint32_t second;
  if (!ReadWord32(section.table, entry + 4, &second)) return ExidxError::kBadEntry;
  if (second == kCantUnwind) return ExidxError::kCantUnwind;
  EhabiOpcodes ops;
  ops.bounds_ = section.bounds;
  uint32_t first;
  uint64_t first_addr;
  if (second & 0x80000000u) {
    // Inline compact entry: only personality 0 fits (§6.3).
    first = second;
    first_addr = entry + 4;
    ops.bounds_ = section.table;
  } else {
    first_addr = Prel31(entry + 4, second);
    if (!ReadWord32(section.bounds, first_addr, &first)) return ExidxError::kBadEntry;
  }
  if (first & 0x80000000u) {
    uint32_t index = (first >> 24) & 0x0f;
    if ((first & 0x70000000u) != 0) return ExidxError::kBadEntry;
    *personality = index;
    switch (index) {
      case 0:  // su16: three opcodes in the same word
        ops.data_ = first << 8;
        ops.bytes_left_ = 3;
        ops.words_left_ = 0;
        break;
      case 1:  // lu16, lu32: a count of further words, two opcodes here
      case 2:
        if (first_addr == entry + 4) return ExidxError::kBadEntry;  // not allowed inline
        ops.data_ = first << 16;
        ops.bytes_left_ = 2;
        ops.words_left_ = static_cast<int>((first >> 16) & 0xff);
        break;
      default:
        return ExidxError::kUnknownPersonality;
    }
    ops.next_ = first_addr + 4;
  } else {
    // A generic personality routine (e.g. __gxx_personality_v0): GCC puts the opcodes after
    // its address, in the lu16/lu32 layout with the count in the top byte.
    *personality = ~uint64_t{0};
    uint32_t word;
    if (!ReadWord32(section.bounds, first_addr + 4, &word)) return ExidxError::kBadEntry;
    ops.data_ = word << 8;
    ops.bytes_left_ = 3;
    ops.words_left_ = static_cast<int>(word >> 24);
    ops.next_ = first_addr + 8;
  }
  *opcodes = ops;
  return ExidxError::kOk;
}

}  // namespace stackwalk::internal
