// DebugImage: a file holding DWARF, laid out in memory for libdw to read, and the libelf handle
// over it.
//
// Why not dwarf_begin(fd): it maps the file and inflates every SHF_COMPRESSED debug section with
// zlib, page by page. On libc's debug file (Debian's libc6-dbg: 4 MB compressed, 10 MB inflated)
// that is ~75 ms of a cold lookup: ~40 ms of zlib and ~28 ms of page faults on the inflated
// buffers (a fault costs ~10 us on this kind of virtual machine). Here:
//   - only the sections a lookup reads are inflated (kept: info, abbrev, str, str_offsets, addr,
//     line, line_str, ranges, rnglists, aranges, types); location lists, macros, call frame
//     information and name indexes are left out (SHT_NOBITS);
//   - libdeflate inflates them (about 2.5x zlib's speed on whole buffers);
//   - the new image is one anonymous mapping populated in a single call, and an image without
//     compressed sections is the file's own mapping with the kept sections populated up front.
// Anything this does not handle (another ELF class or byte order, extended section numbering,
// GNU .zdebug sections, zstd, a dwz supplementary file, a relocatable object) is reported as
// kUnimplemented, for the caller to fall back to dwarf_begin(fd). A compressed section that does
// not inflate is left out (the rest of the DWARF still serves).
//
// Not signal-safe: maps memory, allocates.
#ifndef STACKWALK_SRC_SYMBOLIZE_DEBUG_IMAGE_H_
#define STACKWALK_SRC_SYMBOLIZE_DEBUG_IMAGE_H_

#include <libelf.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace stackwalk::internal {

class DebugImage {
 public:
  // Maps `path` and prepares its DWARF sections. kNotFound if it cannot be opened,
  // kInvalidArgument if it is not an ELF file, kUnimplemented for what is left to libdw itself.
  static absl::StatusOr<std::unique_ptr<DebugImage>> Load(const std::string& path);
  // The same from bytes in memory (copied: the image never points into them).
  static absl::StatusOr<std::unique_ptr<DebugImage>> LoadMemory(const uint8_t* bytes, size_t size);
  ~DebugImage();
  DebugImage(const DebugImage&) = delete;
  DebugImage& operator=(const DebugImage&) = delete;

  // libelf's handle over the image; lives as long as this object.
  Elf* elf() const { return elf_; }
  // Sections inflated, and compressed sections that did not inflate (left out).
  int inflated_sections() const { return inflated_; }
  int corrupt_sections() const { return corrupt_; }
  // The image's size in bytes (the file's size when it had nothing to inflate).
  size_t size() const { return size_; }

  // Whether libdw's symbolization lookups read section `name` (".debug_info", ...).
  static bool IsLookupSection(const char* name);

 private:
  struct Mapping;
  DebugImage() = default;
  // `file`, if given, maps `bytes` and may become the image when nothing needs inflating.
  static absl::StatusOr<std::unique_ptr<DebugImage>> Build(const std::string& path,
                                                          const uint8_t* bytes, size_t size,
                                                          Mapping* file);

  void* map_ = nullptr;
  size_t size_ = 0;
  Elf* elf_ = nullptr;
  int inflated_ = 0;
  int corrupt_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_DEBUG_IMAGE_H_
