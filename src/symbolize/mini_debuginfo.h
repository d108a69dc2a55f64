// MiniDebugInfo: the .gnu_debugdata section some distributions (Fedora, RHEL, Android) put in
// stripped objects — an xz-compressed ELF file holding the function symbols that .dynsym lacks,
// so that stacks through static functions are named without the debug package. Not signal-safe
// (decompression allocates).
#ifndef STACKWALK_SRC_SYMBOLIZE_MINI_DEBUGINFO_H_
#define STACKWALK_SRC_SYMBOLIZE_MINI_DEBUGINFO_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace stackwalk::internal {

// Decompresses an xz stream, refusing output beyond `limit` bytes (a hostile file cannot make
// it allocate without bound).
absl::StatusOr<std::vector<uint8_t>> DecompressXz(const uint8_t* bytes, size_t size,
                                                  size_t limit = size_t{256} << 20);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_MINI_DEBUGINFO_H_
