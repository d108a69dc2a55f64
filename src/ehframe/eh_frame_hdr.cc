#include "ehframe/eh_frame_hdr.h"

#include <cstring>

#include "ehframe/byte_reader.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/pointer_encoding.h"

namespace stackwalk::internal {
namespace {

// Size of one fixed-size table field, or 0 for variable-size encodings.
int FieldSize(uint8_t encoding, int address_size) {
  switch (encoding & 0x0f) {
    case kPeUdata2:
    case kPeSdata2:
      return 2;
    case kPeUdata4:
    case kPeSdata4:
      return 4;
    case kPeUdata8:
    case kPeSdata8:
      return 8;
    case kPeAbsptr:
      return address_size;
    default:
      return 0;
  }
}

// Bounds the linear walk of tables without a search table.
constexpr int kMaxLinearFdes = 1 << 20;

uint64_t LinearSearch(const EhFrameSection& section, uint64_t eh_frame, uint64_t pc) {
  ByteReader all(section.bounds.lo, section.bounds.hi);
  all.Seek(eh_frame);
  for (int i = 0; i < kMaxLinearFdes && all.ok() && !all.at_end(); ++i) {
    uint64_t entry = all.pos();
    uint64_t length = all.U32();
    if (!all.ok() || length == 0) return 0;  // zero terminator ends .eh_frame
    if (length == 0xffffffffu) length = all.U64();
    uint64_t body = all.pos();
    uint32_t id = all.U32();
    if (id != 0) {
      Fde fde;
      if (ParseFde(section, entry, &fde) == CfiError::kOk && pc >= fde.pc_begin &&
          pc < fde.pc_end) {
        return entry;
      }
    }
    all.Seek(body);
    all.Skip(length);
  }
  return 0;
}

// The search of the table every linker writes (DW_EH_PE_datarel | DW_EH_PE_sdata4: pairs of
// 32-bit offsets from the header), without DecodePointer's general decoding of each entry it
// visits: a miss in a thread's rule cache in clang's libraries searched ~100,000 entries for
// ~1,700 instructions of its ~4,900. The same arithmetic as that decoding (sign-extended, added
// to the header's address with wrap-around, then CodeAddress). The caller checked that the
// `count` entries of 8 bytes from `table` lie inside the section's bounds.
uint64_t SearchDatarelSdata4(const EhFrameSection& section, uint64_t table, uint64_t count,
                             uint64_t pc) {
  const auto entry_word = [&](uint64_t index, int word) {
    int32_t value;
    const uint64_t at = table + index * 8 + 4 * static_cast<uint64_t>(word);
    std::memcpy(&value, reinterpret_cast<const void*>(static_cast<uintptr_t>(at)), sizeof value);
    const uint64_t address = section.hdr + static_cast<uint64_t>(static_cast<int64_t>(value));
    return section.address_size == 4 ? address & 0xffffffffu : address;
  };
  // Last entry with initial_loc <= pc.
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry_word(mid, 0) + section.load_bias <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? 0 : entry_word(lo - 1, 1);
}

}  // namespace

uint64_t FindFde(const EhFrameSection& section, uint64_t pc) {
  ByteReader r(section.bounds.lo, section.bounds.hi);
  r.Seek(section.hdr);
  uint8_t version = r.U8();
  uint8_t eh_frame_ptr_enc = r.U8();
  uint8_t fde_count_enc = r.U8();
  uint8_t table_enc = r.U8();
  if (!r.ok() || version != 1) return 0;
  PointerBases bases;
  bases.data = section.hdr;
  uint64_t eh_frame = 0, fde_count = 0;
  if (!DecodePointer(r, eh_frame_ptr_enc, section.address_size, bases, &eh_frame)) return 0;
  int field = FieldSize(table_enc, section.address_size);
  if (fde_count_enc == kPeOmit || table_enc == kPeOmit || field == 0 ||
      !DecodePointer(r, fde_count_enc, section.address_size, bases, &fde_count)) {
    return LinearSearch(section, eh_frame, pc);
  }
  uint64_t table = r.pos();
  uint64_t entry_size = 2 * static_cast<uint64_t>(field);
  if (fde_count == 0 || fde_count > (section.bounds.hi - table) / entry_size) return 0;

  if (table_enc == (kPeDatarel | kPeSdata4) && section.hdr != 0) {
    return SearchDatarelSdata4(section, table, fde_count, pc);
  }
  // Last entry with initial_loc <= pc.
  uint64_t lo = 0, hi = fde_count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    ByteReader e(section.bounds.lo, section.bounds.hi);
    e.Seek(table + mid * entry_size);
    uint64_t start;
    if (!DecodePointer(e, table_enc, section.address_size, bases, &start)) return 0;
    if (section.CodeAddress(start, table_enc) <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return 0;
  ByteReader e(section.bounds.lo, section.bounds.hi);
  e.Seek(table + (lo - 1) * entry_size + field);
  uint64_t fde;
  if (!DecodePointer(e, table_enc, section.address_size, bases, &fde)) return 0;
  return fde;
}

}  // namespace stackwalk::internal
