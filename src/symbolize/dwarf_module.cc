#include "symbolize/dwarf_module.h"

#include <dwarf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "symbolize/debug_image.h"
#include "symbolize/elf_image.h"
#include "symbolize/demangle.h"

namespace stackwalk::internal {
namespace {

std::string Hex(const uint8_t* bytes, int n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += kHex[bytes[i] >> 4];
    s += kHex[bytes[i] & 15];
  }
  return s;
}

bool FileCrcMatches(const std::string& path, uint32_t want) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = false;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      ok = DebuglinkCrc(0, static_cast<const uint8_t*>(map), static_cast<size_t>(st.st_size)) == want;
      munmap(map, static_cast<size_t>(st.st_size));
    }
  }
  close(fd);
  return ok;
}

bool HasDebugInfo(const std::string& path) {
  ElfImage image;
  return image.Open(path.c_str()) && image.has_debug_info();
}

// The file holding the DWARF for `path`, or "" if there is none.
std::string FindDebugFile(const std::string& path, const std::string& debug_root) {
  ElfImage image;
  if (!image.Open(path.c_str())) return "";
  if (image.has_debug_info()) return path;
  if (image.build_id_size() >= 2) {
    std::string id = Hex(image.build_id(), image.build_id_size());
    std::string by_id = debug_root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
    if (HasDebugInfo(by_id)) return by_id;
  }
  if (image.debuglink() != nullptr) {
    std::string dir = path.substr(0, path.rfind('/') + 1);
    for (const std::string& candidate :
         {dir + image.debuglink(), dir + ".debug/" + image.debuglink(),
          debug_root + dir + image.debuglink()}) {
      if (candidate != path && FileCrcMatches(candidate, image.debuglink_crc()) &&
          HasDebugInfo(candidate)) {
        return candidate;
      }
    }
  }
  return "";
}

bool IsScopeTag(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine; }

}  // namespace

absl::StatusOr<std::unique_ptr<DwarfModule>> DwarfModule::Open(const std::string& path,
                                                                const std::string& debug_root) {
  std::string debug = FindDebugFile(path, debug_root);
  if (debug.empty()) return absl::NotFoundError(absl::StrCat("no DWARF for ", path));
  std::unique_ptr<DwarfModule> m(new DwarfModule());
  m->debug_path_ = debug;
  auto image = DebugImage::Load(debug);
  if (image.ok()) {
    m->dwarf_ = dwarf_begin_elf((*image)->elf(), DWARF_C_READ, nullptr);
    if (m->dwarf_ == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(debug, ": ", dwarf_errmsg(-1)));
    }
    m->image_ = std::move(*image);
    return m;
  }
  if (!absl::IsUnimplemented(image.status())) return image.status();
  // A layout DebugImage leaves to libdw (zstd, .zdebug, a dwz file, ...).
  int fd = open(debug.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open ", debug));
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  if (dwarf == nullptr) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(debug, ": ", dwarf_errmsg(-1)));
  }
  m->fd_ = fd;
  m->dwarf_ = dwarf;
  return m;
}

DwarfModule::~DwarfModule() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
  if (fd_ >= 0) close(fd_);
}

void DwarfModule::Collect(Dwarf_Die* die, int depth, std::vector<Scope>* out) {
  Dwarf_Die child;
  if (dwarf_child(die, &child) != 0) return;
  do {
    const int tag = dwarf_tag(&child);
    int child_depth = depth;
    if (IsScopeTag(tag)) {
      child_depth = depth + 1;
      Dwarf_Addr base, low, high;
      ptrdiff_t offset = 0;
      while ((offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0) {
        if (high > low) out->push_back({low, high, 0, dwarf_dieoffset(&child), child_depth});
      }
    }
    // Scopes nest in functions, lexical blocks, namespaces and classes (member functions); the
    // rest (parameters, variables, enumerations, type details) holds no code.
    const bool may_hold_code = IsScopeTag(tag) || tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
                               tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                               tag == DW_TAG_union_type || tag == DW_TAG_try_block ||
                               tag == DW_TAG_catch_block || tag == DW_TAG_module;
    if (may_hold_code && dwarf_haschildren(&child)) Collect(&child, child_depth, out);
  } while (dwarf_siblingof(&child, &child) == 0);
}

DwarfModule::CuIndex* DwarfModule::IndexFor(Dwarf_Die* cu) {
  Dwarf_Off key = dwarf_dieoffset(cu);
  auto it = cus_.find(key);
  if (it != cus_.end()) return it->second.get();
  auto index = std::make_unique<CuIndex>();
  index->cu = *cu;
  Dwarf_Attribute comp_dir;
  if (const char* dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &comp_dir))) {
    index->comp_dir = dir;
  }
  Collect(cu, 0, &index->scopes);
  std::sort(index->scopes.begin(), index->scopes.end(),
            [](const Scope& a, const Scope& b) { return a.low < b.low; });
  uint64_t running = 0;
  for (Scope& s : index->scopes) {
    running = std::max(running, s.high);
    s.max_high = running;
  }
  CuIndex* raw = index.get();
  cus_.emplace(key, std::move(index));
  return raw;
}

// libdw joins a file with its line-table directory; a directory that is itself relative is
// relative to the unit's DW_AT_comp_dir, which binutils and LLVM put in front too (glibc's
// "./stdio-common" + "./stdio-common/vfscanf-internal.c").
std::string DwarfModule::SourcePath(const char* file, const CuIndex& index) const {
  if (file[0] == '/' || index.comp_dir.empty()) return file;
  return index.comp_dir + "/" + file;
}

const DwarfModule::ScopeInfo* DwarfModule::InfoFor(Dwarf_Off offset, const CuIndex& index) {
  auto it = scopes_.find(offset);
  if (it != scopes_.end()) return &it->second;
  Dwarf_Die die;
  if (dwarf_offdie(dwarf_, offset, &die) == nullptr) return nullptr;
  ScopeInfo info;
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    const char* linkage = dwarf_formstring(dwarf_attr_integrate(&die, at, &attr));
    if (linkage != nullptr) {
      info.function = Demangle(linkage);
      info.linkage = linkage;
      info.has_linkage = true;
      break;
    }
  }
  if (!info.has_linkage) {
    const char* plain = dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_name, &attr));
    info.function = plain != nullptr ? plain : "";
    info.linkage = info.function;
    // In a language without name mangling (C, assembly) the plain name is the linkage name,
    // as binutils counts it: the symbol table is not asked for a better one.
    if (plain != nullptr) {
      Dwarf_Die unit = index.cu;
      const int lang = dwarf_srclang(&unit);
      const bool mangled = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
                           lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14 ||
                           lang == DW_LANG_ObjC_plus_plus || lang == DW_LANG_D ||
                           lang == DW_LANG_Rust || lang < 0;
      info.has_linkage = !mangled;
    }
  }
  // The function's lowest address, as binutils keys functions (its first range for functions
  // split into hot and cold parts).
  Dwarf_Addr low, base, begin, end;
  if (dwarf_lowpc(&die, &low) == 0) {
    info.entry = low;
    info.entry_is_low_pc = true;
  } else if (dwarf_ranges(&die, 0, &base, &begin, &end) > 0) {
    info.entry = begin;
  }
  if (const char* decl = dwarf_decl_file(&die)) info.decl_file = SourcePath(decl, index);
  dwarf_decl_line(&die, &info.decl_line);
  info.inlined = dwarf_tag(&die) == DW_TAG_inlined_subroutine;
  if (info.inlined) {
    Dwarf_Word value;
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    Dwarf_Die unit = index.cu;
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &attr), &value) == 0 &&
        dwarf_getsrcfiles(&unit, &files, &nfiles) == 0 && value < nfiles) {
      const char* file = dwarf_filesrc(files, value, nullptr, nullptr);
      if (file != nullptr) info.call_file = SourcePath(file, index);
    }
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &attr), &value) == 0) {
      info.call_line = static_cast<int>(value);
    }
    if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_column, &attr), &value) == 0) {
      info.call_column = static_cast<int>(value);
    }
  }
  return &scopes_.emplace(offset, std::move(info)).first->second;
}

bool DwarfModule::FindCuByRanges(uint64_t addr, Dwarf_Die* cu) {
  if (!cu_ranges_built_) {
    cu_ranges_built_ = true;
    Dwarf_Off offset = 0, next;
    size_t header;
    while (dwarf_nextcu(dwarf_, offset, &next, &header, nullptr, nullptr, nullptr) == 0) {
      Dwarf_Die die;
      if (dwarf_offdie(dwarf_, offset + header, &die) != nullptr) {
        Dwarf_Addr base, begin, end;
        for (ptrdiff_t at = 0; (at = dwarf_ranges(&die, at, &base, &begin, &end)) > 0;) {
          if (begin < end) cu_ranges_.push_back({begin, end, offset + header});
        }
      }
      offset = next;
    }
    std::sort(cu_ranges_.begin(), cu_ranges_.end(),
              [](const CuRange& a, const CuRange& b) { return a.low < b.low; });
  }
  // The last range starting at or below addr, and a few before it (units may overlap).
  auto it = std::upper_bound(cu_ranges_.begin(), cu_ranges_.end(), addr,
                             [](uint64_t a, const CuRange& r) { return a < r.low; });
  for (int tries = 0; it != cu_ranges_.begin() && tries < 8; ++tries) {
    --it;
    if (addr < it->high) return dwarf_offdie(dwarf_, it->cu, cu) != nullptr;
  }
  return false;
}

std::vector<DwarfFrame> DwarfModule::Lookup(uint64_t addr) {
  std::vector<DwarfFrame> frames;
  Dwarf_Die cu;
  if (dwarf_addrdie(dwarf_, addr, &cu) == nullptr && !FindCuByRanges(addr, &cu)) return frames;
  CuIndex* index = IndexFor(&cu);

  // Every scope containing addr: those starting at or below it, back to where no earlier
  // scope reaches past it.
  std::vector<const Scope*> containing;
  auto upper = std::upper_bound(index->scopes.begin(), index->scopes.end(), addr,
                                [](uint64_t a, const Scope& s) { return a < s.low; });
  for (auto it = upper; it != index->scopes.begin();) {
    --it;
    if (it->max_high <= addr) break;
    if (addr < it->high) containing.push_back(&*it);
  }
  std::sort(containing.begin(), containing.end(),
            [](const Scope* a, const Scope* b) { return a->depth > b->depth; });

  DwarfFrame innermost;
  if (Dwarf_Line* line = dwarf_getsrc_die(&cu, addr)) {
    const char* file = dwarf_linesrc(line, nullptr, nullptr);
    if (file != nullptr) innermost.file = SourcePath(file, *index);
    dwarf_lineno(line, &innermost.line);
    dwarf_linecol(line, &innermost.column);
    dwarf_linediscriminator(line, &innermost.discriminator);
  } else if (const char* name = dwarf_diename(&cu)) {
    innermost.file = name;  // no line row here: at least the source file it came from
  }

  DwarfFrame current = innermost;
  for (size_t i = 0; i < containing.size(); ++i) {
    const ScopeInfo* info = InfoFor(containing[i]->die, *index);
    if (info == nullptr) break;
    current.function = info->function;
    current.linkage = info->linkage;
    current.has_linkage = info->has_linkage;
    current.die = containing[i]->die;
    current.function_entry = info->entry;
    current.entry_is_low_pc = info->entry_is_low_pc;
    current.decl_file = info->decl_file;
    current.decl_line = info->decl_line;
    if (!info->inlined) {
      frames.push_back(current);
      break;  // the real function: its callers are other frames of the stack
    }
    current.inlined = true;
    frames.push_back(current);
    // The caller continues at the call site.
    DwarfFrame caller;
    caller.file = info->call_file;
    caller.line = info->call_line;
    caller.column = info->call_column;
    current = caller;
    if (i + 1 == containing.size()) frames.push_back(current);  // caller without a scope
  }
  if (containing.empty()) frames.push_back(innermost);
  return frames;
}

}  // namespace stackwalk::internal
