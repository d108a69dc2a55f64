// ObjectFile: what symbolization reads of one ELF object, opened once: its DWARF (its own or a
// separate debug file's), its symbol table (the debug file's where there is one: a stripped
// object may have lost its source-file entries) and the object itself (whose segments turn file
// offsets into addresses). Not signal-safe.
#ifndef STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_
#define STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"
#include "symbolize/mini_debuginfo.h"
#include "symbolize/symbol_index.h"

namespace stackwalk::internal {

struct ObjectFile {
  std::unique_ptr<DwarfModule> dwarf;  // null without DWARF
  ElfImage symbols;
  bool has_symbols = false;
  ElfImage file;
  bool has_file = false;
  // MiniDebugInfo (.gnu_debugdata), decompressed, when the symbol table in use has no .symtab.
  std::vector<uint8_t> mini_bytes;
  ElfImage mini;
  bool has_mini = false;
  // The two symbol sources sorted by address, for lookups in batches.
  SymbolIndex symbols_index;
  SymbolIndex mini_index;
  // binutils' naming state (FrameNaming::kAddr2line): the DWARF entries already looked up as
  // the innermost function, and those a symbol renamed for good.
  std::set<uint64_t> looked_up;
  std::map<uint64_t, std::string> renamed;
  // Why the object itself could not be read ("No such file or directory", "not an ELF file",
  // "truncated ELF file ...", ...); empty if it could.
  std::string error;

  // Opens everything there is for `path`; what is missing stays empty.
  void Load(const std::string& path, const std::string& debug_root = "/usr/lib/debug") {
    auto opened = DwarfModule::Open(path, debug_root);
    if (opened.ok()) dwarf = std::move(*opened);
    has_symbols = (dwarf && dwarf->debug_path() != path &&
                   symbols.Open(dwarf->debug_path().c_str())) ||
                  symbols.Open(path.c_str());
    has_file = file.Open(path.c_str());
    const uint8_t* packed = nullptr;
    size_t packed_size = 0;
    if (has_file && !(has_symbols && symbols.has_symtab()) &&
        file.mini_debuginfo(&packed, &packed_size)) {
      auto unpacked = DecompressXz(packed, packed_size);
      if (unpacked.ok()) {
        mini_bytes = std::move(*unpacked);
        has_mini = mini.OpenMemory(mini_bytes.data(), mini_bytes.size());
      }
    }
    if (!has_file) {
      error = file.open_error() == ElfOpenError::kCannotOpen ||
                      file.open_error() == ElfOpenError::kCannotMap
                  ? std::strerror(file.open_errno())
                  : ElfOpenErrorString(file.open_error());
    }
    // Functions without a size end where the object's FDEs say (a debug file has none).
    const ElfImage* frames = has_file ? &file : nullptr;
    if (has_symbols) symbols_index.Build(symbols, frames);
    if (has_mini) mini_index.Build(mini, frames);
  }

  // The symbol at link-time address `addr`: from the MiniDebugInfo and the symbol table, the
  // one containing it (the smaller if both do), else the nearer function below it.
  bool LookupSymbol(uint64_t addr, SymbolHit* out) const {
    SymbolHit a, b;
    const bool in_mini = has_mini && mini_index.Lookup(addr, &a);
    const bool in_table = has_symbols && symbols_index.Lookup(addr, &b);
    if (!in_mini || !in_table) {
      if (in_mini) *out = a;
      if (in_table) *out = b;
      return in_mini || in_table;
    }
    auto contains = [addr](const SymbolHit& h) { return h.size != 0 && addr - h.value < h.size; };
    if (contains(a) != contains(b)) {
      *out = contains(a) ? a : b;
    } else if (contains(a)) {
      *out = a.size <= b.size ? a : b;
    } else {
      *out = a.value >= b.value ? a : b;
    }
    return true;
  }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_
