// format.h — turn captured PCs into readable lines, e.g.
//   #1 0x000055d0c0a01234 in demo::Parse(int) (/home/me/demo+0x1234)
//
// Names come from the dynamic symbol table (dladdr): link executables with -rdynamic for their
// own functions to be named. For file:line and inline frames use the DWARF symbolizer
// (symbolizer.h, native builds); for a crash handler, crash_handler.h.
#ifndef STACKWALK_FORMAT_H_
#define STACKWALK_FORMAT_H_

#include <string>

namespace stackwalk {

// What is known about one PC.
struct FrameInfo {
  const void* pc = nullptr;
  std::string function;     // demangled; empty if unknown
  std::string module_path;  // the object's path (dladdr's, else the module map's); empty if unknown
  unsigned long long module_offset = 0;  // pc minus the module's load bias; 0 if the module map
                                         // knows no object at pc. For a return address addr2line
                                         // wants module_offset - 1 (the call).
};

// DescribePc()
//
// Looks `pc` up. `is_return_address` says the PC follows a call (every frame but the
// interrupted one of a signal context), so the lookup uses pc - 1, inside the call; the
// returned pc and module_offset are still those of `pc`. A PC in no known object rebuilds
// the module map once if a library was loaded or unloaded since its last snapshot.
//
// Signal safety: NOT async-signal-safe (dladdr, allocation, demangling, module map rebuild).
FrameInfo DescribePc(const void* pc, bool is_return_address);

// FormatFrame(): one line without a newline, "#<index> 0x<pc> in <function> (<module>+0x<off>)",
// the layout every frame line of the library has (the symbolizer's, the leak and crash reports'):
// the pc padded to a pointer's width, the module's full path. An unknown function is left out;
// an unknown module reads "(in no known object)". Signal safety: NOT async-signal-safe.
std::string FormatFrame(int index, const FrameInfo& frame);

// FormatTrace(): the lines of pcs[0..n), one per frame, each ending in '\n'. Set
// `first_is_interrupted_pc` for traces from a signal context.
// Signal safety: NOT async-signal-safe.
std::string FormatTrace(void* const* pcs, int n, bool first_is_interrupted_pc = false);

}  // namespace stackwalk

#endif  // STACKWALK_FORMAT_H_
