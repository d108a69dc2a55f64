// DwarfModule: file, line, column and the inline chain of an address in one ELF object, from
// its DWARF (in the object itself or in a separate debug file), through elfutils' libdw.
//
// libdw caches line tables per compilation unit; what it does not cache is which functions
// and inlined calls cover an address (dwarf_getscopes walks the CU's DIE tree on every call,
// which is why eu-addr2line is slow). DwarfModule walks each CU once, on first use, into a list
// of [low, high) ranges sorted by start with a running maximum of the ends, so a lookup is a
// binary search and a short backwards scan.
//
// Not signal-safe: allocates, opens files. Not thread-safe: Symbolizer serializes.
#ifndef STACKWALK_SRC_SYMBOLIZE_DWARF_MODULE_H_
#define STACKWALK_SRC_SYMBOLIZE_DWARF_MODULE_H_

#include <elfutils/libdw.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "symbolize/debug_image.h"

namespace stackwalk::internal {

struct DwarfFrame {
  std::string function;  // demangled; empty if unknown
  std::string linkage;   // the mangled name if the function has one, else its plain name
  // DWARF's name is the linkage name, as binutils counts it: a DW_AT_linkage_name, or a plain
  // name in a language that does not mangle (C, assembly). Else a symbol may name it better.
  bool has_linkage = false;
  uint64_t function_entry = 0;  // the function's (or inlined call's) lowest address
  bool entry_is_low_pc = false;  // function_entry is its DW_AT_low_pc (not a range's start)
  uint64_t die = 0;             // the DWARF entry naming the frame (0: none)
  std::string file;      // empty if unknown; the compilation unit's name if it has no line here
  int line = 0;
  int column = 0;
  unsigned discriminator = 0;  // of the line, for the innermost frame
  bool inlined = false;  // an inlined call, whose caller is the next frame
  std::string decl_file;  // where the function is declared (DW_AT_decl_file), empty if unknown
  int decl_line = 0;
};

class DwarfModule {
 public:
  // Opens `path` and the DWARF for it: its own, or a separate debug file found by build-id
  // (<debug_root>/.build-id/xx/yyyy.debug) or .gnu_debuglink (beside it, in .debug/, under
  // <debug_root>/<dir>) whose CRC matches.
  static absl::StatusOr<std::unique_ptr<DwarfModule>> Open(
      const std::string& path, const std::string& debug_root = "/usr/lib/debug");
  ~DwarfModule();

  // The frames at link-time address `addr`, innermost (inlined) first; empty if no CU covers it.
  std::vector<DwarfFrame> Lookup(uint64_t addr);

  // Where the DWARF came from (the object itself or its debug file).
  const std::string& debug_path() const { return debug_path_; }

 private:
  struct Scope {
    uint64_t low;
    uint64_t high;
    uint64_t max_high;  // the largest high of this and every earlier scope (sorted by low)
    Dwarf_Off die;      // a DW_TAG_subprogram or DW_TAG_inlined_subroutine
    int depth;
  };
  struct CuIndex {
    Dwarf_Die cu;
    std::vector<Scope> scopes;
    std::string comp_dir;  // DW_AT_comp_dir, empty if none
  };
  // What a lookup needs of a scope, read from its entry once: the same functions come up
  // address after address, and each libdw entry access takes locks and searches.
  struct ScopeInfo {
    std::string function;
    std::string linkage;
    bool has_linkage = false;
    bool inlined = false;
    uint64_t entry = 0;  // lowest address (first range)
    bool entry_is_low_pc = false;
    std::string call_file;  // of an inlined call: where its caller continues
    int call_line = 0;
    int call_column = 0;
    std::string decl_file;
    int decl_line = 0;
  };

  // Address ranges of every CU, from their DW_AT_low_pc/high_pc/ranges: for addresses that
  // .debug_aranges does not cover (glibc's assembly units), built at the first such miss.
  struct CuRange {
    uint64_t low;
    uint64_t high;
    Dwarf_Off cu;  // the unit's DIE offset
  };
  bool FindCuByRanges(uint64_t addr, Dwarf_Die* cu);

  DwarfModule() = default;
  CuIndex* IndexFor(Dwarf_Die* cu);
  void Collect(Dwarf_Die* die, int depth, std::vector<Scope>* out);
  const ScopeInfo* InfoFor(Dwarf_Off die, const CuIndex& index);
  std::string SourcePath(const char* file, const CuIndex& index) const;

  int fd_ = -1;  // with libdw's own reading of the file
  std::unique_ptr<DebugImage> image_;  // or with the file prepared in memory
  Dwarf* dwarf_ = nullptr;
  std::string debug_path_;
  std::unordered_map<Dwarf_Off, std::unique_ptr<CuIndex>> cus_;
  std::unordered_map<Dwarf_Off, ScopeInfo> scopes_;
  std::vector<CuRange> cu_ranges_;  // sorted by low
  bool cu_ranges_built_ = false;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_DWARF_MODULE_H_
