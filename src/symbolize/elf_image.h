// ElfImage: an ELF file mapped read-only, with what symbolization needs of it: the symbol
// tables (.symtab, else .dynsym), the build-id note and the .gnu_debuglink. Every field read is
// checked against the file's size, so a truncated or hostile file gives "nothing found", never
// a crash. Usable in a signal handler: open, fstat, mmap, close and no allocation.
#ifndef STACKWALK_SRC_SYMBOLIZE_ELF_IMAGE_H_
#define STACKWALK_SRC_SYMBOLIZE_ELF_IMAGE_H_

#include <elf.h>

#include <cstddef>
#include <cstdint>

namespace stackwalk::internal {

// Why ElfImage::Open failed (kNone after a success).
enum class ElfOpenError {
  kNone,
  kCannotOpen,     // open() or fstat() failed: ElfImage::open_errno() says why
  kDirectory,      // a directory
  kNotRegular,     // a device, FIFO or socket
  kEmpty,          // zero bytes
  kCannotMap,      // mmap() failed: open_errno() says why
  kNotElf,         // no ELF magic
  kWrongClass,     // EI_CLASS neither ELFCLASS32 nor ELFCLASS64
  kTruncated,      // ELF header, program or section headers past the end of the file
};
// A static description ("not an ELF file", "truncated ELF file", ...); for kCannotOpen and
// kCannotMap, strerror(open_errno()) says more. Signal safety: async-signal-safe.
const char* ElfOpenErrorString(ElfOpenError error);

struct SymbolHit {
  const char* name = nullptr;  // inside the mapping, NUL-terminated; valid while the image is
  uint64_t value = 0;          // link-time address of the symbol
  uint64_t size = 0;
  const char* file = nullptr;  // for a local symbol, the STT_FILE symbol it follows, if any
};

class ElfImage {
 public:
  static constexpr int kMaxBuildIdSize = 32;

  ElfImage() = default;
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;
  ~ElfImage() { Close(); }

  // Maps the file and indexes its sections. Returns false if it is not a readable ELF file of
  // this process's class; open_error() (and open_errno()) then say why.
  // Signal safety: async-signal-safe (errno is left as it was).
  bool Open(const char* path);
  ElfOpenError open_error() const { return open_error_; }
  int open_errno() const { return open_errno_; }
  // Indexes an ELF image already in memory (tests, fuzzing); the bytes must outlive this.
  bool OpenMemory(const uint8_t* bytes, size_t size);
  void Close();
  bool is_open() const { return base_ != nullptr; }

  // The function (or object) symbol covering link-time address `addr`: the smallest sized
  // symbol containing it ([value, value + size)), preferring global over weak over local names
  // among aliases; failing that, a function without a size (assembly) starting below it in the
  // same section, if no sized function starts between them and, where .eh_frame describes
  // the code, the FDE holding the symbol's start reaches `addr` (see ZeroSizeSymbolReaches).
  // An address past a sized symbol's end (a local function a stripped object no longer
  // names) has no symbol.
  // Linear in the table's size (SymbolIndex answers the same in logarithmic time).
  // Signal safety: async-signal-safe.
  bool Lookup(uint64_t addr, SymbolHit* out) const;

  // A symbol Lookup can return, decoded: a function or object with a name, in a section.
  struct Candidate {
    uint64_t value = 0;  // link-time address (Thumb bit cleared)
    uint64_t size = 0;
    const char* name = nullptr;  // nullptr if its name is out of the string table
    const char* file = nullptr;  // for a local symbol, the STT_FILE symbol it follows, if any
    uint32_t section = 0;
    int rank = 0;  // binding: global 3, weak 2, local 1
    bool is_object = false;
    uint32_t file_offset = 0;  // `file` in the string table (0: none)
  };
  // Calls visit(context, table, candidate) for every candidate of .symtab (table 0) and then
  // .dynsym (table 1), each in table order; for SymbolIndex, whose lookups answer as Lookup's.
  // Signal safety: async-signal-safe if `visit` is.
  void ForEachCandidate(void (*visit)(void* context, int table, const Candidate& c),
                        void* context) const;
  // The link-time address and size of the section named `name`; false if there is none.
  bool FindSection(const char* name, uint64_t* addr, uint64_t* size) const;
  // True if section `index` holds link-time address `addr`.
  bool SectionContains(uint32_t index, uint64_t addr) const;
  // The [lo, hi) link-time range of the .eh_frame FDE covering `addr`, through
  // .eh_frame_hdr's search table; false without one.
  // Signal safety: async-signal-safe.
  bool FdeRange(uint64_t addr, uint64_t* lo, uint64_t* hi) const;
  // Whether a function symbol without a size starting at `start` may name `addr` (> start):
  // not if an FDE covers `start` and ends at or below `addr`, nor if an FDE covering `addr`
  // starts after `start` (another function); yes where no FDE tells.
  bool ZeroSizeSymbolReaches(uint64_t start, uint64_t addr) const;

  // The NT_GNU_BUILD_ID note's bytes; 0 if none.
  int build_id_size() const { return build_id_size_; }
  const uint8_t* build_id() const { return build_id_; }
  // The .gnu_debuglink file name (nullptr if none) and its CRC-32.
  const char* debuglink() const { return debuglink_; }
  uint32_t debuglink_crc() const { return debuglink_crc_; }
  // True if the file has DWARF line information (.debug_line), i.e. is worth handing to libdw.
  bool has_debug_info() const { return has_debug_info_; }
  uint16_t type() const { return type_; }  // ET_EXEC, ET_DYN, ...
  // The .gnu_debugdata section (MiniDebugInfo: an xz-compressed ELF file holding the symbols a
  // stripped object dropped); false if there is none.
  bool mini_debuginfo(const uint8_t** bytes, size_t* size) const {
    if (mini_debuginfo_size_ == 0) return false;
    *bytes = base_ + mini_debuginfo_offset_;
    *size = mini_debuginfo_size_;
    return true;
  }
  bool has_symtab() const { return symtab_.count != 0; }

  // The link-time address of file offset `offset`, through the PT_LOAD segment holding it (how
  // an address in a process's maps becomes one this file's tables know). Signal-safe.
  bool FileOffsetToAddress(uint64_t offset, uint64_t* address) const;

 private:
  struct Table {
    uint64_t symbols = 0;  // file offsets
    uint64_t count = 0;
    uint64_t strings = 0;
    uint64_t strings_size = 0;
  };
  bool Index();
  bool Fail(ElfOpenError error, int err = 0);
  bool LookupIn(const Table& table, uint64_t addr, SymbolHit* out) const;
  // Decodes symbol i of `table` into *c if it is a candidate, its name's string-table offset
  // into *name (c->name and c->file are left unresolved); tracks the STT_FILE symbol that local
  // symbols follow in *file (start at 0 and visit in order).
  bool DecodeCandidate(const Table& table, uint64_t i, uint32_t* file, Candidate* c,
                       uint32_t* name) const;
  const char* NameAt(const Table& table, uint32_t offset) const;  // nullptr for 0 or out of range

  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  Table symtab_;
  Table dynsym_;
  uint8_t build_id_[kMaxBuildIdSize] = {};
  int build_id_size_ = 0;
  const char* debuglink_ = nullptr;
  uint32_t debuglink_crc_ = 0;
  bool has_debug_info_ = false;
  uint64_t mini_debuginfo_offset_ = 0;
  uint64_t mini_debuginfo_size_ = 0;
  uint16_t type_ = 0;
  ElfOpenError open_error_ = ElfOpenError::kNone;
  int open_errno_ = 0;
  // .eh_frame_hdr and .eh_frame: file offsets, sizes and link-time addresses (0 size: none).
  uint64_t eh_frame_hdr_offset_ = 0, eh_frame_hdr_size_ = 0, eh_frame_hdr_addr_ = 0;
  uint64_t eh_frame_offset_ = 0, eh_frame_size_ = 0, eh_frame_addr_ = 0;
  uint64_t section_headers_ = 0;  // file offset
  uint32_t section_count_ = 0;
  // The image's class and machine: either class is read (a 32-bit target's objects on a 64-bit
  // host), its headers widened to the 64-bit layouts.
  bool elf32_ = false;
  uint64_t shdr_size_ = sizeof(Elf64_Shdr);
  uint64_t sym_size_ = sizeof(Elf64_Sym);
  uint16_t machine_ = 0;
};

// CRC-32 as .gnu_debuglink uses it (IEEE 802.3, reflected). Signal safety: async-signal-safe.
uint32_t DebuglinkCrc(uint32_t crc, const uint8_t* data, size_t size);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_ELF_IMAGE_H_
