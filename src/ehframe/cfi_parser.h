// Decodes CIEs and FDEs of .eh_frame (DWARF 5 §6.4.1; LSB "Exception Frames" for the
// augmentations z, L, P, R, S and AArch64's B and G). Decoding only: cfi_program.h runs the
// CFA instructions and cfi_executor.h applies the resulting row.
#ifndef STACKWALK_SRC_EHFRAME_CFI_PARSER_H_
#define STACKWALK_SRC_EHFRAME_CFI_PARSER_H_

#include <cstdint>

#include "ehframe/eh_frame_hdr.h"

namespace stackwalk::internal {

enum class CfiError : uint8_t {
  kOk,
  kTruncated,           // a read ran past the section
  kBadCie,              // malformed CIE (id, version, augmentation)
  kBadFde,              // malformed FDE (CIE pointer, range)
  kBadEncoding,         // a pointer encoding we cannot decode
  kBadInstruction,      // an unknown or malformed CFA instruction
  kStateStackOverflow,  // DW_CFA_remember_state nested deeper than kMaxRememberedStates
  kStateStackUnderflow, // DW_CFA_restore_state with nothing remembered
  kTooManyInstructions, // the program ran past kMaxCfaInstructions
  kPcNotCovered,        // the FDE does not cover the PC
};

// A static description of `error`, for tests and tracing.
const char* CfiErrorString(CfiError error);

struct Cie {
  uint8_t version = 0;
  uint64_t code_align = 1;
  int64_t data_align = 1;
  uint32_t ra_column = 0;
  uint8_t fde_encoding = 0;      // DW_EH_PE_absptr unless 'R'
  uint8_t lsda_encoding = 0xff;  // DW_EH_PE_omit unless 'L'
  bool has_z = false;
  bool signal_frame = false;     // 'S': the frame's PC is exact, not a return address
  uint64_t instructions = 0;     // [instructions, end): the initial instructions
  uint64_t end = 0;
};

struct Fde {
  Cie cie;
  uint64_t pc_begin = 0;
  uint64_t pc_end = 0;
  uint64_t instructions = 0;
  uint64_t end = 0;
};

// Decodes the FDE at `fde_addr` and its CIE. Signal safety: async-signal-safe.
CfiError ParseFde(const EhFrameSection& section, uint64_t fde_addr, Fde* out);

// Decodes the CIE at `cie_addr`. Signal safety: async-signal-safe.
CfiError ParseCie(const EhFrameSection& section, uint64_t cie_addr, Cie* out);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_CFI_PARSER_H_
