#include "ehframe/cfi_parser.h"

#include "ehframe/byte_reader.h"
#include "ehframe/pointer_encoding.h"

namespace stackwalk::internal {

const char* CfiErrorString(CfiError error) {
  switch (error) {
    case CfiError::kOk:
      return "ok";
    case CfiError::kTruncated:
      return "record runs past its section";
    case CfiError::kBadCie:
      return "malformed CIE";
    case CfiError::kBadFde:
      return "malformed FDE";
    case CfiError::kBadEncoding:
      return "unsupported pointer encoding";
    case CfiError::kBadInstruction:
      return "unknown or malformed CFA instruction";
    case CfiError::kStateStackOverflow:
      return "DW_CFA_remember_state nested too deep";
    case CfiError::kStateStackUnderflow:
      return "DW_CFA_restore_state without a remembered state";
    case CfiError::kTooManyInstructions:
      return "CFA program too long";
    case CfiError::kPcNotCovered:
      return "FDE does not cover the PC";
  }
  return "unknown CFI error";
}

namespace {

// Reads an entry's length header; returns the reader over its body (after the length) and
// whether it uses the 64-bit DWARF format.
bool ReadEntry(const EhFrameSection& section, uint64_t addr, ByteReader* body, bool* is64) {
  ByteReader r(section.bounds.lo, section.bounds.hi);
  r.Seek(addr);
  uint64_t length = r.U32();
  *is64 = length == 0xffffffffu;
  if (*is64) length = r.U64();
  if (!r.ok() || length == 0) return false;
  *body = r.Sub(length);
  return body->ok();
}

// The CIE id / CIE pointer field: 4 bytes in .eh_frame; 4 or 8 in .debug_frame.
uint64_t ReadIdField(ByteReader& r, const EhFrameSection& section, bool is64) {
  return section.debug_frame && is64 ? r.U64() : r.U32();
}

}  // namespace

CfiError ParseCie(const EhFrameSection& section, uint64_t cie_addr, Cie* out) {
  ByteReader r;
  bool is64;
  if (!ReadEntry(section, cie_addr, &r, &is64)) return CfiError::kTruncated;
  Cie cie;
  const uint64_t cie_id = !section.debug_frame ? 0 : is64 ? ~uint64_t{0} : 0xffffffffu;
  if (ReadIdField(r, section, is64) != cie_id) return CfiError::kBadCie;
  cie.version = r.U8();
  if (cie.version != 1 && cie.version != 3 && cie.version != 4) return CfiError::kBadCie;
  uint64_t aug = r.CString();
  if (aug == 0) return CfiError::kTruncated;
  const char* augmentation = reinterpret_cast<const char*>(static_cast<uintptr_t>(aug));
  if (augmentation[0] != '\0' && augmentation[0] != 'z') {
    // "eh" (GCC 2.x) and other augmentations without 'z' cannot be skipped safely.
    return CfiError::kBadCie;
  }
  if (cie.version == 4) {
    uint8_t address_size = r.U8();
    uint8_t segment_size = r.U8();
    if (address_size != section.address_size || segment_size != 0) return CfiError::kBadCie;
  }
  cie.code_align = r.Uleb128();
  cie.data_align = r.Sleb128();
  cie.ra_column = cie.version == 1 ? r.U8() : static_cast<uint32_t>(r.Uleb128());
  if (!r.ok()) return CfiError::kTruncated;
  if (augmentation[0] == 'z') {
    cie.has_z = true;
    uint64_t aug_len = r.Uleb128();
    ByteReader data = r.Sub(aug_len);
    if (!r.ok()) return CfiError::kTruncated;
    for (const char* p = augmentation + 1; *p != '\0'; ++p) {
      switch (*p) {
        case 'L':
          cie.lsda_encoding = data.U8();
          break;
        case 'R':
          cie.fde_encoding = data.U8();
          break;
        case 'P': {
          uint8_t enc = data.U8();
          uint64_t personality;
          // The personality pointer is skipped, not used: decode it only to learn its size,
          // with stand-in bases so that every relative form decodes.
          PointerBases any_base{1, 1, 1};
          if (!DecodePointer(data, enc & 0x7f, section.address_size, any_base, &personality)) {
            return data.ok() ? CfiError::kBadEncoding : CfiError::kTruncated;
          }
          break;
        }
        case 'S':
          cie.signal_frame = true;
          break;
        case 'B':  // AArch64 BTI-protected frames: nothing to read
        case 'G':  // AArch64 MTE-tagged frames
          break;
        default:
          // Unknown letters: the 'z' length lets us skip their data, but not know what they
          // change; refuse rather than misread.
          return CfiError::kBadCie;
      }
      if (!data.ok()) return CfiError::kTruncated;
    }
  }
  cie.instructions = r.pos();
  cie.end = r.end();
  *out = cie;
  return CfiError::kOk;
}

CfiError ParseFde(const EhFrameSection& section, uint64_t fde_addr, Fde* out) {
  ByteReader r;
  bool is64;
  if (!ReadEntry(section, fde_addr, &r, &is64)) return CfiError::kTruncated;
  uint64_t id_field = r.pos();
  uint64_t cie_pointer = ReadIdField(r, section, is64);
  if (!r.ok()) return CfiError::kTruncated;
  uint64_t cie_addr;
  if (section.debug_frame) {
    // An offset from the section's start; all ones would make this a CIE.
    if (cie_pointer == (is64 ? ~uint64_t{0} : 0xffffffffu)) return CfiError::kBadFde;
    if (cie_pointer >= section.bounds.hi - section.bounds.lo) return CfiError::kBadFde;
    cie_addr = section.bounds.lo + cie_pointer;
  } else {
    // Back from this field; 0 would make this a CIE.
    if (cie_pointer == 0 || cie_pointer > id_field) return CfiError::kBadFde;
    cie_addr = id_field - cie_pointer;
  }
  Fde fde;
  CfiError err = ParseCie(section, cie_addr, &fde.cie);
  if (err != CfiError::kOk) return err;
  PointerBases bases;
  if (!DecodePointer(r, fde.cie.fde_encoding, section.address_size, bases, &fde.pc_begin)) {
    return r.ok() ? CfiError::kBadEncoding : CfiError::kTruncated;
  }
  // Link-time addresses (.debug_frame, a non-PIE object's), or a copy's (another process's
  // tables).
  fde.pc_begin = section.CodeAddress(fde.pc_begin, fde.cie.fde_encoding);
  uint64_t range;
  // The range is a plain size: same format, never relative.
  if (!DecodePointer(r, fde.cie.fde_encoding & 0x0f, section.address_size, bases, &range)) {
    return r.ok() ? CfiError::kBadEncoding : CfiError::kTruncated;
  }
  fde.pc_end = fde.pc_begin + range;
  if (fde.pc_end < fde.pc_begin) return CfiError::kBadFde;
  if (fde.cie.has_z) {
    uint64_t aug_len = r.Uleb128();
    r.Skip(aug_len);  // the LSDA pointer: exception handling only
  }
  if (!r.ok()) return CfiError::kTruncated;
  fde.instructions = r.pos();
  fde.end = r.end();
  *out = fde;
  return CfiError::kOk;
}

}  // namespace stackwalk::internal
