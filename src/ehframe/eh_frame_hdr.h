// FindFde(): the .eh_frame FDE covering a PC, through the binary-search table of
// .eh_frame_hdr (LSB "Exception Frames": .eh_frame_hdr), or a bounded linear walk of .eh_frame
// when the header has no table.
#ifndef STACKWALK_SRC_EHFRAME_EH_FRAME_HDR_H_
#define STACKWALK_SRC_EHFRAME_EH_FRAME_HDR_H_

#include <cstdint>

#include "core/address_range.h"

namespace stackwalk::internal {

// Where a module's unwind tables are: its .eh_frame_hdr and the readable range holding it and
// .eh_frame (every table read is checked against `bounds`).
struct EhFrameSection {
  uint64_t hdr = 0;
  AddressRange bounds;
  int address_size = 8;
  bool in_vdso = false;  // the kernel's vDSO (whose sigreturn CFI is incomplete on AArch64)
  // A .debug_frame section (DWARF 5 §6.4.1 proper) rather than .eh_frame: CIE ids are all
  // ones, CIE pointers are offsets from bounds.lo.
  bool debug_frame = false;
  // Added to every relative code address the tables give (FDE ranges, search-table entries,
  // DW_CFA_set_loc), so that they are the walked process's: another process's .eh_frame read
  // from a copy of its file here gives addresses relative to the copy, which this turns into the
  // target's (the target's address of the tables minus the copy's). 0 for this process's loaded
  // .eh_frame.
  uint64_t load_bias = 0;
  // Added instead to code addresses encoded as absolute values (DW_EH_PE_absptr and the plain
  // udata/sdata forms: a non-PIE object's FDEs, all of .debug_frame): those are link-time
  // addresses wherever the tables are read from, so this is the object's own bias. Equal to
  // load_bias for .debug_frame; 0 for this process's loaded .eh_frame (whose absolute pointers
  // were relocated, or are a non-PIE object's at its link-time address).
  uint64_t absolute_bias = 0;

  // The walked process's address of a code address DecodePointer gave for `encoding`.
  uint64_t CodeAddress(uint64_t decoded, uint8_t encoding) const {
    return decoded + ((encoding & 0x70) == 0 ? absolute_bias : load_bias);
  }
};

// Returns the address of an FDE whose table entry is the last one starting at or below `pc`,
// or 0. The caller still checks that the FDE's range covers `pc`.
// Signal safety: async-signal-safe.
uint64_t FindFde(const EhFrameSection& section, uint64_t pc);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_EH_FRAME_HDR_H_
