// ObjectFile: what symbolization reads of one ELF object, opened once: its DWARF (its own or a
// separate debug file's), its symbol table (the debug file's where there is one: a stripped
// object may have lost its source-file entries) and the object itself (whose segments turn file
// offsets into addresses). Not signal-safe.
#ifndef STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_
#define STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_

#include <memory>
#include <string>

#include "format/json_string.h"
#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"

namespace stackwalk::internal {

struct ObjectFile {
  std::unique_ptr<DwarfModule> dwarf;  // null without DWARF
  ElfImage symbols;
  bool has_symbols = false;
  ElfImage file;
  bool has_file = false;

  // Opens everything there is for `path`; what is missing stays empty.
  void Load(const std::string& path, const std::string& debug_root = "/usr/lib/debug") {
    auto opened = DwarfModule::Open(path, debug_root);
    if (opened.ok()) dwarf = std::move(*opened);
    has_symbols = (dwarf && dwarf->debug_path() != path &&
                   symbols.Open(dwarf->debug_path().c_str())) ||
                  symbols.Open(path.c_str());
    has_file = file.Open(path.c_str());
  }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_OBJECT_FILE_H_
