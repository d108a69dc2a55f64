// DemangleSignalSafe(): Itanium C++ names into a caller's buffer with no allocation, through
// abseil's signal-safe demangler where the build has it (it leaves parameter types out:
// "geo::Field::Total()"); the mangled name otherwise.
#ifndef STACKWALK_SRC_SYMBOLIZE_DEMANGLE_H_
#define STACKWALK_SRC_SYMBOLIZE_DEMANGLE_H_

#include <cstddef>
#include <string>

namespace stackwalk::internal {

// Whether `name` is an Itanium C++ mangled name ("_Z..."), the one test of it: what the
// demanglers below accept, and what the symbolizer's FrameNaming::kStackwalk requires of a
// symbol before it renames a function DWARF names only by its bare DW_AT_name (an extern "C"
// function or a versioned alias such as "__libc_start_main@@GLIBC_2.34" keeps DWARF's name).
// Signal safety: async-signal-safe.
inline bool IsItaniumMangled(const char* name) { return name[0] == '_' && name[1] == 'Z'; }

// Writes the demangled `name` (or `name` itself if it is not a C++ name or does not fit) to
// out[0..size), NUL-terminated, truncating if needed. Signal safety: async-signal-safe.
void DemangleSignalSafe(const char* name, char* out, size_t size);

// The demangled `name`, with parameter types, through the C++ runtime; `name` itself if it is not
// an Itanium C++ name ("_Z..."; a C function "f" stays "f", not "float"). Allocates.
std::string Demangle(const char* name);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_DEMANGLE_H_
