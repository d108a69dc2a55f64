// symbolizer.h — function, file:line:column and inline frames for captured PCs, from the DWARF
// of the loaded objects (or their separate debug files) through elfutils' libdw. Built where
// libdw and abseil are installed (native builds); link stackwalk::symbolize.
//
// Example:
//
//   void* pcs[64];
//   int n = stackwalk_backtrace(pcs, 64, STACKWALK_AUTO);
//   stackwalk::Symbolizer symbolizer;
//   std::printf("%s", stackwalk::FormatFrames(symbolizer.SymbolizeTrace(pcs, n)).c_str());
//
//   #0 0x0000562e184ee752 in geo::Field::Total(int) const at /src/demo.cc:43:32 (stackwalk_demo+0x2752)
//   #1 0x0000562e184ee298 in main at /src/demo.cc:89:29 (stackwalk_demo+0x2298)
//
// (the file as DWARF names it, usually a full path). An inlined call prints "(inlined)" after
// its function, and the function it was inlined into follows with the same #index.
//
// Not async-signal-safe (reads files, allocates): crash handlers use crash_handler.h, which
// names frames on a signal-safe path.
//
// Nothing here throws, std::bad_alloc included. When memory runs out (an allocation of ours,
// abseil's or libdw's/libelf's fails), a call answers as its comment says (ResourceExhausted,
// or an empty result) and forgets the object it was reading, which the next call opens afresh.
// libdw itself does not survive every failed allocation: its internal allocator ends the
// process with exit(1), and a failure inside its hash tables can crash it (elfutils 0.188).
#ifndef STACKWALK_SYMBOLIZER_H_
#define STACKWALK_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace stackwalk {

struct SymbolizedFrame {
  uint64_t pc = 0;
  int index = 0;            // the trace frame it belongs to (inlined frames share it)
  std::string function;     // demangled; empty if unknown
  std::string file;         // empty if unknown
  int line = 0;
  int column = 0;
  bool inlined = false;     // an inlined call; the next frame with the same index is its caller
  std::string module;       // the object's path; empty if the PC is in none (or in the vDSO)
  uint64_t module_offset = 0;  // pc minus the object's load bias (SymbolizeFile: the address)
};

class Symbolizer {
 public:
  // Never throws; without memory for its state, every call answers "out of memory".
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Symbolize()
  //
  // The frames at `pc` of this process, innermost (inlined) first: at least one, with as much
  // as is known (a missing debug file still gives the symbol table's name; a PC in no object
  // gives one frame with no name and no module), or none if memory ran out. The caller says
  // whether `pc` is a return address (every trace frame but an interrupted one): then the
  // lookup is at pc - 1, inside the call, while each frame's `pc` and `module_offset` stay
  // those of `pc`. A PC in no known object rebuilds the module map once if a library was
  // loaded or unloaded since its snapshot; a PC of an object dlclose'd since is named only if
  // a rebuild saw it loaded.
  //
  // Thread safety: thread-safe. Signal safety: NOT async-signal-safe.
  std::vector<SymbolizedFrame> Symbolize(const void* pc, bool is_return_address);

  // SymbolizeTrace(): Symbolize() of pcs[0..n) in trace order, each frame's `index` its
  // position in `pcs`; empty if memory ran out. Every PC is taken as a return address, except
  // pcs[0] when `first_is_interrupted` (traces from a signal context).
  std::vector<SymbolizedFrame> SymbolizeTrace(void* const* pcs, int n,
                                              bool first_is_interrupted = false);

  // SymbolizeFile(): offline, a link-time address of an ELF file (taken as is, not as a return
  // address). Fails with NotFound if the file cannot be read as ELF of this word size (the
  // message says why: no such file, a directory, not ELF, truncated...), ResourceExhausted if
  // memory ran out.
  absl::StatusOr<std::vector<SymbolizedFrame>> SymbolizeFile(const std::string& path,
                                                             uint64_t address);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// FormatFrames(): one line per frame, "#<index> 0x<pc> in <function> [(inlined)] at
// <file>:<line>:<column> (<module>+0x<offset>)", <module> being the object's file name,
// unknown parts left out; "" if memory ran out.
std::string FormatFrames(const std::vector<SymbolizedFrame>& frames);

// FormatFramesJson(): a JSON array of objects with the fields of SymbolizedFrame (index, pc,
// function, file, line, column, inlined, module as the full path, module_offset; pc and
// module_offset as "0x..." strings); "" if memory ran out.
std::string FormatFramesJson(const std::vector<SymbolizedFrame>& frames);

}  // namespace stackwalk

#endif  // STACKWALK_SYMBOLIZER_H_
