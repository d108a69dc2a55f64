// SafeSymbolizer: names a PC from the symbol tables of the loaded objects (or of their separate
// debug files found by build-id), with no allocation and no lock, for crash handlers. File and
// line need DWARF and come from the full symbolizer, which is not signal-safe.
#ifndef STACKWALK_SRC_SYMBOLIZE_SAFE_SYMBOLIZER_H_
#define STACKWALK_SRC_SYMBOLIZE_SAFE_SYMBOLIZER_H_

#include <cstdint>

#include "symbolize/elf_image.h"

namespace stackwalk::internal {

// What the symbol tables say of one PC. Offsets are of the address looked up: the PC itself,
// or pc - 1 (inside the call) for a return address.
struct SafeFrame {
  char function[512] = {};     // demangled, symbol version cut; empty if unknown
  uint64_t function_offset = 0;
  const char* module = "";     // full path (the main executable's from /proc/self/exe; "[vdso]");
                               // "" if unknown. Lives while the module map snapshot does (hold a
                               // ModuleMap::Reader) or, for objects loaded since, until dlclose.
  uint64_t module_offset = 0;  // looked-up address - load bias: the link-time address
  uint64_t object_start = 0;   // the object's lowest mapped address: tells objects apart
  uint64_t load_bias = 0;
  uint8_t build_id[ElfImage::kMaxBuildIdSize] = {};
  int build_id_size = 0;       // 0: none known (see build_id_known)
  bool build_id_known = false; // false if neither the module map nor the file could say
  bool has_module = false;
};

class SafeSymbolizer {
 public:
  static constexpr int kMaxImages = 32;

  static SafeSymbolizer& Global();

  // Fills `out` for `pc`; a return address (every frame but an interrupted one) is looked up
  // at pc - 1, and out's offsets are those of pc - 1. Signal safety: async-signal-safe (opens
  // and maps files on first use of an object, then reuses them), but not reentrant: callers
  // serialize (the crash handler lets one thread report).
  void Describe(uint64_t pc, bool is_return_address, SafeFrame* out);

 private:
  struct Slot {
    uint64_t object_start = 0;  // the module's extent.lo; 0 for a free slot
    bool opened = false;
    bool is_debug_file = false;  // the image is a separate debug file, not the object itself
    ElfImage image;
  };
  // The cached image for an object (opened on first use); *is_debug_file tells which file it is.
  ElfImage* ImageFor(uint64_t object_start, const char* path, const uint8_t* build_id,
                     int build_id_size, bool in_memory, uint64_t memory_size, bool* is_debug_file);

  Slot slots_[kMaxImages];
  int next_victim_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_SAFE_SYMBOLIZER_H_
