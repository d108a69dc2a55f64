// A .debug_frame section found in an ELF file's bytes, and the index of its FDEs by the code they
// cover: built once per object (allocates), then searched without locks or allocation. Shared by
// this process's DebugFrameRegistry and another process's TargetModules (stackwalk-dump).
#ifndef STACKWALK_SRC_EHFRAME_DEBUG_FRAME_INDEX_H_
#define STACKWALK_SRC_EHFRAME_DEBUG_FRAME_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/address_range.h"
#include "ehframe/eh_frame_hdr.h"

namespace stackwalk::internal {

struct DebugFrameEntry {
  uint64_t pc_begin;  // runtime addresses: the section's load_bias applied
  uint64_t pc_end;
  uint64_t fde;       // the FDE's address in the section's bytes
};

// The bytes of the uncompressed .debug_frame section of the ELF file at file[0, size), as an
// address range of this process. False if there is none (or it is compressed, or out of bounds).
// Signal safety: async-signal-safe (reads the bytes only).
bool FindDebugFrameSection(const uint8_t* file, size_t size, AddressRange* out);

// Every FDE of `section` (debug_frame = true) with a non-empty range, sorted by pc_begin.
// Signal safety: NOT async-signal-safe (allocates).
std::vector<DebugFrameEntry> IndexDebugFrame(const EhFrameSection& section);

// The entry of index[0, count) covering `pc`, or nullptr. Signal safety: async-signal-safe.
const DebugFrameEntry* FindDebugFrameEntry(const DebugFrameEntry* index, size_t count,
                                           uint64_t pc);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_DEBUG_FRAME_INDEX_H_
