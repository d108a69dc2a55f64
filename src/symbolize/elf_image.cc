#include "symbolize/elf_image.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "core/build_id.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/eh_frame_hdr.h"

namespace stackwalk::internal {
namespace {

// Reads a T at `offset` of an image of `size` bytes, if it fits.
template <class T>
bool Get(const uint8_t* base, size_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, base + offset, sizeof(T));
  return true;
}

// A NUL-terminated string at `offset` within [lo, lo + room) of the image, or nullptr.
const char* StringAt(const uint8_t* base, size_t size, uint64_t lo, uint64_t room,
                     uint64_t offset) {
  if (lo > size || room > size - lo || offset >= room) return nullptr;
  const char* s = reinterpret_cast<const char*>(base + lo + offset);
  return memchr(s, '\0', room - offset) != nullptr ? s : nullptr;
}

// The headers of either ELF class read into the 64-bit layouts, each field widened: one reader
// for the objects of this process and of a 32-bit target's snapshot (stackwalk-dump --snapshot
// of an arm32 crash on an x86_64 host).
bool GetEhdr(const uint8_t* base, size_t size, bool elf32, Elf64_Ehdr* out) {
  if (!elf32) return Get(base, size, 0, out);
  Elf32_Ehdr h;
  if (!Get(base, size, 0, &h)) return false;
  std::memcpy(out->e_ident, h.e_ident, EI_NIDENT);
  out->e_type = h.e_type;
  out->e_machine = h.e_machine;
  out->e_version = h.e_version;
  out->e_entry = h.e_entry;
  out->e_phoff = h.e_phoff;
  out->e_shoff = h.e_shoff;
  out->e_flags = h.e_flags;
  out->e_ehsize = h.e_ehsize;
  out->e_phentsize = h.e_phentsize;
  out->e_phnum = h.e_phnum;
  out->e_shentsize = h.e_shentsize;
  out->e_shnum = h.e_shnum;
  out->e_shstrndx = h.e_shstrndx;
  return true;
}

bool GetShdr(const uint8_t* base, size_t size, bool elf32, uint64_t offset, Elf64_Shdr* out) {
  if (!elf32) return Get(base, size, offset, out);
  Elf32_Shdr h;
  if (!Get(base, size, offset, &h)) return false;
  *out = {h.sh_name, h.sh_type, h.sh_flags, h.sh_addr, h.sh_offset, h.sh_size, h.sh_link,
          h.sh_info, h.sh_addralign, h.sh_entsize};
  return true;
}

bool GetPhdr(const uint8_t* base, size_t size, bool elf32, uint64_t offset, Elf64_Phdr* out) {
  if (!elf32) return Get(base, size, offset, out);
  Elf32_Phdr h;
  if (!Get(base, size, offset, &h)) return false;
  *out = {h.p_type, h.p_flags, h.p_offset, h.p_vaddr, h.p_paddr, h.p_filesz, h.p_memsz,
          h.p_align};
  return true;
}

void GetSym(const uint8_t* at, bool elf32, Elf64_Sym* out) {
  if (!elf32) {
    std::memcpy(out, at, sizeof(*out));
    return;
  }
  Elf32_Sym h;
  std::memcpy(&h, at, sizeof(h));
  *out = {h.st_name, h.st_info, h.st_other, h.st_shndx, h.st_value, h.st_size};
}

int BindingRank(unsigned char info) {
  switch (ELF64_ST_BIND(info)) {  // same for ELF32
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    default:
      return 1;
  }
}

}  // namespace

uint32_t DebuglinkCrc(uint32_t crc, const uint8_t* data, size_t size) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

const char* ElfOpenErrorString(ElfOpenError error) {
  switch (error) {
    case ElfOpenError::kNone:
      return "no error";
    case ElfOpenError::kCannotOpen:
      return "cannot open";
    case ElfOpenError::kDirectory:
      return "is a directory";
    case ElfOpenError::kNotRegular:
      return "not a regular file";
    case ElfOpenError::kEmpty:
      return "empty file";
    case ElfOpenError::kCannotMap:
      return "cannot map";
    case ElfOpenError::kNotElf:
      return "not an ELF file";
    case ElfOpenError::kWrongClass:
      return "an ELF file of neither class (32-bit, 64-bit)";
    case ElfOpenError::kTruncated:
      return "truncated ELF file (headers past its end)";
  }
  return "unknown error";
}

bool ElfImage::Fail(ElfOpenError error, int err) {
  open_error_ = error;
  open_errno_ = err;
  return false;
}

bool ElfImage::Open(const char* path) {
  Close();
  int saved_errno = errno;
  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  bool ok = false;
  if (fd < 0) {
    Fail(ElfOpenError::kCannotOpen, errno);
  } else {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      Fail(ElfOpenError::kCannotOpen, errno);
    } else if (S_ISDIR(st.st_mode)) {
      Fail(ElfOpenError::kDirectory);
    } else if (!S_ISREG(st.st_mode)) {
      Fail(ElfOpenError::kNotRegular);
    } else if (st.st_size <= 0) {
      Fail(ElfOpenError::kEmpty);
    } else {
      void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (map == MAP_FAILED) {
        Fail(ElfOpenError::kCannotMap, errno);
      } else {
        base_ = static_cast<const uint8_t*>(map);
        size_ = static_cast<size_t>(st.st_size);
        mapped_ = true;
        ok = Index();
        if (!ok) {
          const ElfOpenError error = open_error_;
          Close();
          open_error_ = error;
        }
      }
    }
    close(fd);
  }
  errno = saved_errno;
  return ok;
}

bool ElfImage::OpenMemory(const uint8_t* bytes, size_t size) {
  Close();
  base_ = bytes;
  size_ = size;
  mapped_ = false;
  if (!Index()) {
    const ElfOpenError error = open_error_;
    Close();
    open_error_ = error;
    return false;
  }
  return true;
}

void ElfImage::Close() {
  if (base_ != nullptr && mapped_) munmap(const_cast<uint8_t*>(base_), size_);
  base_ = nullptr;
  size_ = 0;
  mapped_ = false;
  symtab_ = dynsym_ = Table();
  section_headers_ = 0;
  section_count_ = 0;
  elf32_ = false;
  machine_ = 0;
  build_id_size_ = 0;
  debuglink_ = nullptr;
  debuglink_crc_ = 0;
  has_debug_info_ = false;
  mini_debuginfo_offset_ = mini_debuginfo_size_ = 0;
  eh_frame_hdr_offset_ = eh_frame_hdr_size_ = eh_frame_hdr_addr_ = 0;
  eh_frame_offset_ = eh_frame_size_ = eh_frame_addr_ = 0;
  open_error_ = ElfOpenError::kNone;
  open_errno_ = 0;
}

bool ElfImage::Index() {
  if (size_ < SELFMAG || std::memcmp(base_, ELFMAG, SELFMAG) != 0) {
    return Fail(ElfOpenError::kNotElf);
  }
  if (size_ <= EI_CLASS) return Fail(ElfOpenError::kTruncated);
  if (base_[EI_CLASS] != ELFCLASS64 && base_[EI_CLASS] != ELFCLASS32) {
    return Fail(ElfOpenError::kWrongClass);
  }
  elf32_ = base_[EI_CLASS] == ELFCLASS32;
  shdr_size_ = elf32_ ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
  sym_size_ = elf32_ ? sizeof(Elf32_Sym) : sizeof(Elf64_Sym);
  Elf64_Ehdr eh;
  if (!GetEhdr(base_, size_, elf32_, &eh)) return Fail(ElfOpenError::kTruncated);
  machine_ = eh.e_machine;
  // The header tables must lie inside the file: a file cut short (an interrupted copy) is
  // refused rather than read as an object without symbols.
  auto fits = [this](uint64_t offset, uint64_t count, uint64_t entry) {
    return count == 0 || (offset <= size_ && entry != 0 && count <= (size_ - offset) / entry);
  };
  if (!fits(eh.e_phoff, eh.e_phnum, eh.e_phentsize) ||
      !fits(eh.e_shoff, eh.e_shnum, eh.e_shentsize)) {
    return Fail(ElfOpenError::kTruncated);
  }
  type_ = eh.e_type;
  if (eh.e_shentsize != shdr_size_) return eh.e_shnum == 0 || Fail(ElfOpenError::kNotElf);
  section_headers_ = eh.e_shoff;
  section_count_ = eh.e_shnum;
  Elf64_Shdr names;
  if (!GetShdr(base_, size_, elf32_, eh.e_shoff + uint64_t{eh.e_shstrndx} * shdr_size_, &names)) {
    return true;  // no section headers to speak of: an image without symbols
  }
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!GetShdr(base_, size_, elf32_, eh.e_shoff + static_cast<uint64_t>(i) * shdr_size_, &sh)) {
      break;
    }
    const char* name = StringAt(base_, size_, names.sh_offset, names.sh_size, sh.sh_name);
    if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size_ || sh.sh_size > size_ - sh.sh_offset) {
      continue;
    }
    if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
        sh.sh_entsize == sym_size_) {
      Elf64_Shdr strings;
      if (!GetShdr(base_, size_, elf32_, eh.e_shoff + uint64_t{sh.sh_link} * shdr_size_,
                   &strings) ||
          strings.sh_offset > size_ || strings.sh_size > size_ - strings.sh_offset) {
        continue;
      }
      Table& t = sh.sh_type == SHT_SYMTAB ? symtab_ : dynsym_;
      t.symbols = sh.sh_offset;
      t.count = sh.sh_size / sym_size_;
      t.strings = strings.sh_offset;
      t.strings_size = strings.sh_size;
    } else if (sh.sh_type == SHT_NOTE && build_id_size_ == 0) {
      const int n = FindGnuBuildId(base_ + sh.sh_offset, sh.sh_size, build_id_, kMaxBuildIdSize);
      if (n > 0) build_id_size_ = n;
    } else if (name != nullptr && std::strcmp(name, ".gnu_debuglink") == 0) {
      const char* link = StringAt(base_, size_, sh.sh_offset, sh.sh_size, 0);
      if (link != nullptr) {
        uint64_t crc_at = (std::strlen(link) + 1 + 3) & ~uint64_t{3};
        uint32_t crc;
        if (crc_at + 4 <= sh.sh_size && Get(base_, size_, sh.sh_offset + crc_at, &crc)) {
          debuglink_ = link;
          debuglink_crc_ = crc;
        }
      }
    } else if (name != nullptr && std::strcmp(name, ".debug_line") == 0) {
      has_debug_info_ = true;
    } else if (name != nullptr && std::strcmp(name, ".gnu_debugdata") == 0) {
      mini_debuginfo_offset_ = sh.sh_offset;
      mini_debuginfo_size_ = sh.sh_size;
    } else if (name != nullptr && std::strcmp(name, ".eh_frame_hdr") == 0) {
      eh_frame_hdr_offset_ = sh.sh_offset;
      eh_frame_hdr_size_ = sh.sh_size;
      eh_frame_hdr_addr_ = sh.sh_addr;
    } else if (name != nullptr && std::strcmp(name, ".eh_frame") == 0) {
      eh_frame_offset_ = sh.sh_offset;
      eh_frame_size_ = sh.sh_size;
      eh_frame_addr_ = sh.sh_addr;
    }
  }
  return true;
}

bool ElfImage::DecodeCandidate(const Table& t, uint64_t i, uint32_t* file, Candidate* c,
                               uint32_t* name) const {
  Elf64_Sym sym;
  GetSym(base_ + t.symbols + i * sym_size_, elf32_, &sym);
  const int type = ELF64_ST_TYPE(sym.st_info);
  if (type == STT_FILE) {
    *file = sym.st_name;
    return false;
  }
  // An ARM Thumb function's value has bit 0 set; its code starts at the even address.
  if (type == STT_FUNC && machine_ == EM_ARM) sym.st_value &= ~uint64_t{1};
  if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT) ||
      sym.st_shndx == SHN_UNDEF || sym.st_name == 0) {
    return false;
  }
  // Names stay string-table offsets here (NameAt resolves them): a lookup resolves only the few it
  // keeps.
  *name = sym.st_name;
  c->value = sym.st_value;
  c->size = sym.st_size;
  c->name = nullptr;
  c->file = nullptr;
  c->section = sym.st_shndx;
  c->rank = BindingRank(sym.st_info);
  c->is_object = type == STT_OBJECT;
  c->file_offset = ELF64_ST_BIND(sym.st_info) == STB_LOCAL ? *file : 0;
  return true;
}

const char* ElfImage::NameAt(const Table& t, uint32_t offset) const {
  return offset != 0 ? StringAt(base_, size_, t.strings, t.strings_size, offset) : nullptr;
}

bool ElfImage::LookupIn(const Table& t, uint64_t addr, SymbolHit* out) const {
  // The smallest symbol containing addr; among aliases (same size), the best binding; the
  // first in table order among equals.
  bool found = false;
  Candidate best;
  // Fallback for functions without a size (assembly): the nearest function starting below
  // addr in the same section, if every function starting there has no size.
  bool below_found = false;
  bool below_sized = false;
  Candidate below;
  uint32_t below_name = 0;
  uint32_t file = 0;
  for (uint64_t i = 0; i < t.count; ++i) {
    Candidate c;
    uint32_t name = 0;
    if (!DecodeCandidate(t, i, &file, &c, &name) || c.value > addr) continue;
    if (!c.is_object) {
      if (!below_found || c.value > below.value) {
        below = c;
        below_name = name;
        below_found = true;
        below_sized = c.size != 0;
      } else if (c.value == below.value) {
        below_sized = below_sized || c.size != 0;
        if (c.rank > below.rank) {
          below = c;
          below_name = name;
        }
      }
    }
    if (c.size == 0 || addr - c.value >= c.size) continue;
    if (!found || c.size < best.size || (c.size == best.size && c.rank > best.rank)) {
      c.name = NameAt(t, name);
      if (c.name == nullptr || c.name[0] == '\0') continue;
      best = c;
      found = true;
    }
  }
  if (!found && below_found && !below_sized && SectionContains(below.section, addr) &&
      ZeroSizeSymbolReaches(below.value, addr)) {
    below.name = NameAt(t, below_name);
    if (below.name != nullptr && below.name[0] != '\0') {
      best = below;
      found = true;
    }
  }
  if (found) {
    out->name = best.name;
    out->value = best.value;
    out->size = best.size;
    out->file = NameAt(t, best.file_offset);
  }
  return found;
}

bool ElfImage::FdeRange(uint64_t addr, uint64_t* lo, uint64_t* hi) const {
  if (base_ == nullptr || eh_frame_hdr_size_ == 0 || eh_frame_size_ == 0) return false;
  // 4-byte pointers are decoded modulo 2^32, which only this process's own addresses may be.
  if ((elf32_ ? 4 : 8) != sizeof(void*)) return false;
  // The tables are read where the file is mapped: their pc-relative and data-relative
  // pointers hold if both sections sit at the same distance from their link-time addresses
  // (one segment), and load_bias takes them from the mapping back to link-time addresses, which
  // absolute ones (a non-PIE object's FDEs) already are.
  if (eh_frame_hdr_addr_ - eh_frame_hdr_offset_ != eh_frame_addr_ - eh_frame_offset_) return false;
  const uint64_t mem = reinterpret_cast<uintptr_t>(base_);
  EhFrameSection section;
  section.hdr = mem + eh_frame_hdr_offset_;
  section.bounds = {mem, mem + size_};
  section.address_size = elf32_ ? 4 : 8;
  section.load_bias = eh_frame_hdr_addr_ - (mem + eh_frame_hdr_offset_);
  const uint64_t fde_at = FindFde(section, addr);
  Fde fde;
  if (fde_at == 0 || ParseFde(section, fde_at, &fde) != CfiError::kOk || addr < fde.pc_begin ||
      addr >= fde.pc_end) {
    return false;
  }
  *lo = fde.pc_begin;
  *hi = fde.pc_end;
  return true;
}

bool ElfImage::ZeroSizeSymbolReaches(uint64_t start, uint64_t addr) const {
  if (addr == start) return true;
  uint64_t lo, hi;
  if (FdeRange(start, &lo, &hi)) return addr < hi;
  // The symbol's code has no FDE: an FDE at addr belongs to another function.
  return !FdeRange(addr, &lo, &hi);
}

void ElfImage::ForEachCandidate(void (*visit)(void* context, int table, const Candidate& c),
                                void* context) const {
  if (base_ == nullptr) return;
  const Table* tables[2] = {&symtab_, &dynsym_};
  for (int table = 0; table < 2; ++table) {
    const Table& t = *tables[table];
    uint32_t file = 0;
    for (uint64_t i = 0; i < t.count; ++i) {
      Candidate c;
      uint32_t name = 0;
      if (!DecodeCandidate(t, i, &file, &c, &name)) continue;
      c.name = NameAt(t, name);
      c.file = NameAt(t, c.file_offset);
      visit(context, table, c);
    }
  }
}

bool ElfImage::FileOffsetToAddress(uint64_t offset, uint64_t* address) const {
  if (base_ == nullptr) return false;
  Elf64_Ehdr eh;
  if (!GetEhdr(base_, size_, elf32_, &eh)) return false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!GetPhdr(base_, size_, elf32_, eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize,
                 &ph)) {
      return false;
    }
    if (ph.p_type == PT_LOAD && offset >= ph.p_offset && offset - ph.p_offset < ph.p_memsz) {
      *address = ph.p_vaddr + (offset - ph.p_offset);
      return true;
    }
  }
  return false;
}

bool ElfImage::FindSection(const char* name, uint64_t* addr, uint64_t* size) const {
  if (base_ == nullptr || section_count_ == 0) return false;
  Elf64_Ehdr eh;
  Elf64_Shdr names;
  if (!GetEhdr(base_, size_, elf32_, &eh) ||
      !GetShdr(base_, size_, elf32_, section_headers_ + uint64_t{eh.e_shstrndx} * shdr_size_,
               &names)) {
    return false;
  }
  for (uint32_t i = 0; i < section_count_; ++i) {
    Elf64_Shdr sh;
    if (!GetShdr(base_, size_, elf32_, section_headers_ + uint64_t{i} * shdr_size_, &sh)) break;
    const char* n = StringAt(base_, size_, names.sh_offset, names.sh_size, sh.sh_name);
    if (n != nullptr && std::strcmp(n, name) == 0) {
      *addr = sh.sh_addr;
      *size = sh.sh_size;
      return true;
    }
  }
  return false;
}

bool ElfImage::SectionContains(uint32_t index, uint64_t addr) const {
  if (index == SHN_UNDEF || index >= section_count_) return false;
  Elf64_Shdr sh;
  if (!GetShdr(base_, size_, elf32_, section_headers_ + uint64_t{index} * shdr_size_, &sh)) {
    return false;
  }
  return addr >= sh.sh_addr && addr - sh.sh_addr < sh.sh_size;
}

bool ElfImage::Lookup(uint64_t addr, SymbolHit* out) const {
  if (base_ == nullptr) return false;
  return LookupIn(symtab_, addr, out) || LookupIn(dynsym_, addr, out);
}

}  // namespace stackwalk::internal
