// symbolizer.h — function, file:line:column and inline frames for captured PCs of this process,
// or offline for addresses of an ELF file (SymbolizeFile, which stackwalk-symbolize is built on),
// from DWARF (the object's or its separate debug file's) through elfutils' libdw and from the
// symbol tables. Built where libdw, abseil and nlohmann-json are installed (native builds); link
// stackwalk::symbolize.
//
// Example:
//
//   void* pcs[64];
//   int n = stackwalk_backtrace(pcs, 64, STACKWALK_AUTO);
//   stackwalk::Symbolizer symbolizer;
//   std::printf("%s", stackwalk::FormatFrames(symbolizer.SymbolizeTrace(pcs, n)).c_str());
//
//   #0 0x0000562e184ee752 in geo::Field::Total(int) const at /src/demo.cc:43:32 (/src/build/demo/stackwalk_demo+0x2752)
//   #1 0x0000562e184ee298 in main at /src/demo.cc:89:29 (/src/build/demo/stackwalk_demo+0x2298)
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

  // What tools that print as binutils' addr2line or llvm-symbolizer do need besides
  // (stackwalk-symbolize): filled where DWARF or the symbol table says, else left as here.
  std::string linkage_name;    // the mangled name if the function has one, else its plain name
  uint64_t function_start = 0;  // link-time address where the function (or inlined call) starts
  bool function_start_is_low_pc = false;  // function_start is its DW_AT_low_pc, not a range's start
  unsigned discriminator = 0;  // of the line, on the innermost frame
  std::string decl_file;       // where the function is declared (DW_AT_decl_file); empty if unknown
  int decl_line = 0;
};

// How SymbolizeFile() names frames.
enum class FrameNaming {
  // Symbolize()'s rule: DWARF's names; the symbol table names the outermost frame where DWARF
  // has no name, or only a bare name for a C++ function.
  kStackwalk,
  // As binutils' addr2line: the symbol table names the innermost function without a DWARF
  // linkage name the first time it is looked up (and what started where its symbol does keeps
  // that name afterwards, in callers too): the answer depends on the lookups before it, per
  // object, as addr2line's does. A location without a line takes the symbol's STT_FILE name.
  kAddr2line,
  // As llvm-symbolizer 14: DWARF's names, and the outermost frame returned is named by the
  // symbol table where one covers the address (with its start address and STT_FILE name).
  kLlvmSymbolizer,
};

struct FileQuery {
  FrameNaming naming = FrameNaming::kStackwalk;
  bool innermost_only = false;  // the innermost frame alone, without its inline callers
  bool name_functions = true;   // false: kLlvmSymbolizer does not ask the symbol table
};

struct SymbolizerOptions {
  // Where separate debug files are looked for (.build-id/xx/yyyy.debug and debuglink paths).
  std::string debug_root = "/usr/lib/debug";
};

class Symbolizer {
 public:
  // Never throws; without memory for its state, every call answers "out of memory".
  Symbolizer();
  explicit Symbolizer(const SymbolizerOptions& options);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Symbolize()
  //
  // The frames at `pc` of this process, innermost (inlined) first: at least one, with as much
  // as is known (a missing debug file still gives the symbol table's name; a PC in no object
  // gives one frame with only pc set), or none if memory ran out. Names are DWARF's; the symbol
  // table names the outermost frame where DWARF has no name, or only a bare name for a C++
  // function. The caller says whether `pc` is a return address (every trace frame but an
  // interrupted one): then the lookup is at pc - 1, inside the call, while each frame's `pc` and
  // `module_offset` stay those of `pc`. A PC in no known object rebuilds the module map once if a
  // library was loaded or unloaded since its snapshot; an object dlclose'd since is read from its
  // file, as the module map remembers it (if a snapshot saw it loaded).
  //
  // Thread safety: thread-safe; its lock is the object's own, so a forked child must not use one
  // that another thread was using at the fork (it may be copied held): make a new one there.
  // Signal safety: NOT async-signal-safe.
  std::vector<SymbolizedFrame> Symbolize(const void* pc, bool is_return_address);

  // SymbolizeTrace(): Symbolize() of pcs[0..n) in trace order, each frame's `index` its
  // position in `pcs`; empty if memory ran out. Every PC is taken as a return address, except
  // pcs[0] when `first_is_interrupted` (traces from a signal context).
  std::vector<SymbolizedFrame> SymbolizeTrace(void* const* pcs, int n,
                                              bool first_is_interrupted = false);

  // SymbolizeFile(): offline, a link-time address of an ELF file: at least one frame, innermost
  // first, each with pc and module_offset the address and module the path. Fails with NotFound
  // ("PATH: why") if the file cannot be read as ELF, ResourceExhausted if memory ran out. Each
  // file is opened once and kept. Thread safety: thread-safe.
  absl::StatusOr<std::vector<SymbolizedFrame>> SymbolizeFile(const std::string& path,
                                                             uint64_t address);
  absl::StatusOr<std::vector<SymbolizedFrame>> SymbolizeFile(const std::string& path,
                                                             uint64_t address,
                                                             const FileQuery& query);

  // OpenFiles(): opens those of `paths` not open yet, several at once (a thread each, up to the
  // machine's cores), so that the SymbolizeFile() lookups after it find them open: what a caller
  // about to name frames of many files does first (stackwalk-report, the leak checker's
  // launcher). Opening is most of naming a few frames of a large object (its symbol table
  // sorted, its DWARF's index). A file that cannot be read, or whose opening ran out of memory,
  // is left to the lookup that needs it (which says why). Thread safety: thread-safe.
  void OpenFiles(const std::vector<std::string>& paths);
  // FileOffsetToAddress(): the link-time address that file offset `offset` of `path` is loaded
  // at (through its PT_LOAD segments), for addresses read through a process's maps. NotFound if
  // the file cannot be read or no segment holds the offset.
  absl::StatusOr<uint64_t> FileOffsetToAddress(const std::string& path, uint64_t offset);

  // FindSection(): the link-time address and size of section `name` of `path`; NotFound if the
  // file cannot be read or has no such section.
  absl::Status FindSection(const std::string& path, const std::string& name, uint64_t* address,
                           uint64_t* size);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// FormatFrames(): one line per frame, "#<index> 0x<pc> in <function> [(inlined)] at
// <file>:<line>:<column> (<module>+0x<offset>)" (format.h's layout: the module's full path, "(in
// no known object)" for a PC in none), other unknown parts left out; "" if memory ran out.
std::string FormatFrames(const std::vector<SymbolizedFrame>& frames);

// FormatFramesJson(): a JSON array of frame objects as docs/schema/frame.schema.json defines
// them (the fields above, pc and module_offset as "0x..." strings); "" if memory ran out.
std::string FormatFramesJson(const std::vector<SymbolizedFrame>& frames);

}  // namespace stackwalk

#endif  // STACKWALK_SYMBOLIZER_H_
