// DecodePointer(): the DW_EH_PE_* pointer encodings of .eh_frame and .eh_frame_hdr (LSB
// Core specification, "DWARF Extensions": Exception Frames / Pointer Encoding).
#ifndef STACKWALK_SRC_EHFRAME_POINTER_ENCODING_H_
#define STACKWALK_SRC_EHFRAME_POINTER_ENCODING_H_

#include <cstdint>

#include "ehframe/byte_reader.h"

namespace stackwalk::internal {

enum : uint8_t {
  kPeAbsptr = 0x00,
  kPeUleb128 = 0x01,
  kPeUdata2 = 0x02,
  kPeUdata4 = 0x03,
  kPeUdata8 = 0x04,
  kPeSleb128 = 0x09,
  kPeSdata2 = 0x0a,
  kPeSdata4 = 0x0b,
  kPeSdata8 = 0x0c,
  kPePcrel = 0x10,
  kPeTextrel = 0x20,
  kPeDatarel = 0x30,
  kPeFuncrel = 0x40,
  kPeAligned = 0x50,
  kPeIndirect = 0x80,
  kPeOmit = 0xff,
};

// Bases for the relative encodings; 0 where the context has none (a pointer relative to an
// unknown base fails).
struct PointerBases {
  uint64_t data = 0;  // .eh_frame_hdr start for the search table, else unused
  uint64_t text = 0;
  uint64_t func = 0;
};

// Reads one pointer in `encoding` at the reader's position. `address_size` is 8 or 4. Returns
// false for an unknown or unsupported encoding, a missing base or a short read. Indirect
// pointers are left to the caller (never needed for the fields unwinding reads).
inline bool DecodePointer(ByteReader& r, uint8_t encoding, int address_size,
                          const PointerBases& bases, uint64_t* out) {
  if (encoding == kPeOmit) return false;
  uint64_t field_addr = r.pos();
  uint64_t value;
  switch (encoding & 0x0f) {
    case kPeAbsptr:
      value = address_size == 8 ? r.U64() : r.U32();
      break;
    case kPeUleb128:
      value = r.Uleb128();
      break;
    case kPeUdata2:
      value = r.U16();
      break;
    case kPeUdata4:
      value = r.U32();
      break;
    case kPeUdata8:
      value = r.U64();
      break;
    case kPeSleb128:
      value = static_cast<uint64_t>(r.Sleb128());
      break;
    case kPeSdata2:
      value = static_cast<uint64_t>(static_cast<int64_t>(r.S16()));
      break;
    case kPeSdata4:
      value = static_cast<uint64_t>(static_cast<int64_t>(r.S32()));
      break;
    case kPeSdata8:
      value = r.U64();
      break;
    default:
      return false;
  }
  if (!r.ok()) return false;
  switch (encoding & 0x70) {
    case kPeAbsptr:
      break;
    case kPePcrel:
      value += field_addr;
      break;
    case kPeDatarel:
      if (bases.data == 0) return false;
      value += bases.data;
      break;
    case kPeTextrel:
      if (bases.text == 0) return false;
      value += bases.text;
      break;
    case kPeFuncrel:
      if (bases.func == 0) return false;
      value += bases.func;
      break;
    default:
      return false;
  }
  if (address_size == 4) value &= 0xffffffffu;
  *out = value;
  return true;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_POINTER_ENCODING_H_
