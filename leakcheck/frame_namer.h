// FrameNamer: the symbolizer as the leak report reaches it, through a table of functions.
//
// The preloaded checker takes the table from libstackwalk_leakcheck_names.so, which it loads
// (dlopen, beside itself) the first time a report has stacks to name. The symbolizer brings
// libdw, libelf, zlib, liblzma, libdeflate and some 25 abseil libraries: linked into the
// preloaded library, every checked process loaded them at start, leaking or not. The in-process
// library links the table in.
//
// Not signal-safe: loads libraries, allocates.
#ifndef STACKWALK_LEAKCHECK_FRAME_NAMER_H_
#define STACKWALK_LEAKCHECK_FRAME_NAMER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stackwalk/symbolizer.h"  // SymbolizedFrame only: no symbol of the library is used here

namespace stackwalk::leakcheck {

// Versioned by name: a names library of another build is refused rather than misread.
#define STACKWALK_FRAME_NAMER_TABLE "stackwalk_leakcheck_frame_namer_v2"

struct FrameNamerTable {
  void* (*create)();  // a Symbolizer
  void (*destroy)(void* namer);
  std::vector<SymbolizedFrame> (*symbolize_trace)(void* namer, void* const* pcs, int n);
  // The frames at a link-time address of an ELF file; false if the file cannot be read.
  bool (*symbolize_file)(void* namer, const std::string& path, uint64_t address,
                         std::vector<SymbolizedFrame>* frames);
  std::string (*format)(const std::vector<SymbolizedFrame>& frames);
};

// The table, or nullptr with *error saying why (the names library could not be loaded).
const FrameNamerTable* FrameNamers(std::string* error);

// A report's symbolizer: named frames where the table is there, and otherwise each PC with its
// object and offset (from the loader), so that a report is never lost for want of names.
class FrameNamer {
 public:
  FrameNamer();
  ~FrameNamer();
  FrameNamer(const FrameNamer&) = delete;
  FrameNamer& operator=(const FrameNamer&) = delete;

  std::vector<SymbolizedFrame> SymbolizeTrace(void* const* pcs, int n);
  bool SymbolizeFile(const std::string& path, uint64_t address, std::vector<SymbolizedFrame>* out);
  std::string Format(const std::vector<SymbolizedFrame>& frames) const;
  // Why frames are unnamed (empty when they are named).
  const std::string& error() const { return error_; }

 private:
  const FrameNamerTable* table_ = nullptr;
  void* namer_ = nullptr;
  std::string error_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_FRAME_NAMER_H_
