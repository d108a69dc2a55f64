// SafeSymbolizer: names a PC from the symbol tables of the loaded objects (or of their separate
// debug files found by build-id), with no allocation and no lock, for crash handlers. File and
// line need DWARF and come from the full symbolizer, which is not signal-safe.
#ifndef STACKWALK_SRC_SYMBOLIZE_SAFE_SYMBOLIZER_H_
#define STACKWALK_SRC_SYMBOLIZE_SAFE_SYMBOLIZER_H_

#include <cstdint>

#include "symbolize/elf_image.h"

namespace stackwalk::internal {

struct SafeFrame {
  char function[512] = {};     // demangled; empty if unknown
  uint64_t function_offset = 0;
  const char* module = "";     // path as the loader knows it; "" if unknown
  uint64_t module_offset = 0;  // pc - load bias
  bool has_module = false;
};

class SafeSymbolizer {
 public:
  static constexpr int kMaxImages = 32;

  static SafeSymbolizer& Global();

  // Fills `out` for `pc`; a return address (every frame but an interrupted one) is looked up
  // at pc - 1. Signal safety: async-signal-safe (opens and maps files on first use of an
  // object, then reuses them), but not reentrant: callers serialize.
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
