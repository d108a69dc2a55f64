#include "symbolize/debug_image.h"

#include <elf.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older kernels refuse it, which only costs speed
#endif

namespace stackwalk::internal {
namespace {

// deflate cannot expand data more than 1032:1; a larger claimed size is a corrupt header.
constexpr uint64_t kMaxInflateRatio = 1032;

template <class T>
bool Get(const uint8_t* base, size_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, base + offset, sizeof(T));
  return true;
}

// The sections dwarf_addrdie, dwarf_getsrc_die, DIE attributes and dwarf_ranges read.
constexpr const char* kLookupSections[] = {
    ".debug_info",    ".debug_abbrev",   ".debug_str",      ".debug_str_offsets",
    ".debug_addr",    ".debug_line",     ".debug_line_str", ".debug_ranges",
    ".debug_rnglists", ".debug_aranges", ".debug_types",
};

// How one section of the file goes into the image.
struct Placement {
  bool keep = false;        // a lookup section with bytes
  bool compressed = false;  // SHF_COMPRESSED, zlib
  const uint8_t* source = nullptr;
  uint64_t source_size = 0;  // the compressed stream (after the header), or the bytes
  uint64_t size = 0;         // in the image
  uint64_t align = 1;
  uint64_t offset = 0;       // in the image
};

void PopulateRange(const uint8_t* base, uint64_t offset, uint64_t size) {
  if (size == 0) return;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset & ~(page - 1);
  madvise(const_cast<uint8_t*>(base) + start, offset + size - start, MADV_POPULATE_READ);
}

void InitLibelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

}  // namespace

struct DebugImage::Mapping {
  void* base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, size);
  }
  void* Release() {
    void* b = base;
    base = MAP_FAILED;
    return b;
  }
};

bool DebugImage::IsLookupSection(const char* name) {
  for (const char* s : kLookupSections) {
    if (std::strcmp(name, s) == 0) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<DebugImage>> DebugImage::Load(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  struct stat st;
  Mapping file;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) >= sizeof(ElfW(Ehdr))) {
    file.size = static_cast<size_t>(st.st_size);
    // Writable and private: libelf may write to an image from memory; nothing reaches the file.
    file.base = mmap(nullptr, file.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (file.base == MAP_FAILED) return absl::InvalidArgumentError(absl::StrCat(path, ": not ELF"));
  return Build(path, static_cast<const uint8_t*>(file.base), file.size, &file);
}

absl::StatusOr<std::unique_ptr<DebugImage>> DebugImage::LoadMemory(const uint8_t* bytes,
                                                                   size_t size) {
  return Build("(memory)", bytes, size, nullptr);
}

absl::StatusOr<std::unique_ptr<DebugImage>> DebugImage::Build(const std::string& path,
                                                              const uint8_t* bytes, size_t size,
                                                              Mapping* file) {
  if (size < sizeof(ElfW(Ehdr))) return absl::InvalidArgumentError(absl::StrCat(path, ": not ELF"));

  ElfW(Ehdr) eh;
  std::memcpy(&eh, bytes, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not ELF"));
  }
  const unsigned char native_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  const unsigned char native_data =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  auto unhandled = [&path](const char* why) {
    return absl::UnimplementedError(absl::StrCat(path, ": ", why));
  };
  if (eh.e_ident[EI_CLASS] != native_class || eh.e_ident[EI_DATA] != native_data) {
    return unhandled("another ELF class or byte order");
  }
  if (eh.e_type == ET_REL) return unhandled("a relocatable object");
  if (eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE ||
      eh.e_shstrndx >= eh.e_shnum) {
    return unhandled("no plain section header table");
  }
  const uint64_t table_size = static_cast<uint64_t>(eh.e_shnum) * sizeof(ElfW(Shdr));
  if (eh.e_shoff > size || table_size > size - eh.e_shoff) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": section headers outside the file"));
  }
  std::vector<ElfW(Shdr)> headers(eh.e_shnum);
  std::memcpy(headers.data(), bytes + eh.e_shoff, table_size);
  const ElfW(Shdr)& names = headers[eh.e_shstrndx];
  if (names.sh_type == SHT_NOBITS || names.sh_offset > size || names.sh_size > size - names.sh_offset) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": section names outside the file"));
  }
  auto name_of = [&](const ElfW(Shdr)& sh) -> const char* {
    if (sh.sh_name >= names.sh_size) return nullptr;
    const char* s = reinterpret_cast<const char*>(bytes + names.sh_offset + sh.sh_name);
    return memchr(s, '\0', names.sh_size - sh.sh_name) != nullptr ? s : nullptr;
  };

  std::vector<Placement> plan(eh.e_shnum);
  bool any_compressed = false;
  for (size_t i = 1; i < headers.size(); ++i) {
    const ElfW(Shdr)& sh = headers[i];
    const char* name = name_of(sh);
    if (name == nullptr) continue;
    if (std::strncmp(name, ".zdebug", 7) == 0) return unhandled("GNU .zdebug sections");
    if (std::strcmp(name, ".gnu_debugaltlink") == 0 || std::strcmp(name, ".debug_sup") == 0) {
      return unhandled("a supplementary (dwz) debug file");
    }
    Placement& p = plan[i];
    const bool is_names = i == eh.e_shstrndx;
    if (!(is_names || IsLookupSection(name)) || sh.sh_type == SHT_NOBITS ||
        sh.sh_offset > size || sh.sh_size > size - sh.sh_offset) {
      continue;
    }
    p.keep = true;
    p.source = bytes + sh.sh_offset;
    p.source_size = sh.sh_size;
    p.size = sh.sh_size;
    p.align = sh.sh_addralign > 1 ? sh.sh_addralign : 1;
    if ((sh.sh_flags & SHF_COMPRESSED) != 0) {
      ElfW(Chdr) ch;
      if (!Get(bytes, size, sh.sh_offset, &ch) || sh.sh_size < sizeof(ch)) {
        p.keep = false;  // a header that does not fit: corrupt
        continue;
      }
      if (ch.ch_type != ELFCOMPRESS_ZLIB) return unhandled("a section compressed other than with zlib");
      p.compressed = true;
      p.source += sizeof(ch);
      p.source_size -= sizeof(ch);
      p.size = ch.ch_size;
      p.align = ch.ch_addralign > 1 ? ch.ch_addralign : 1;
      if (p.size > p.source_size * kMaxInflateRatio + 1024) {
        p.keep = false;
        continue;
      }
      any_compressed = true;
    }
    if (p.align > 4096 || (p.align & (p.align - 1)) != 0) p.align = 8;
  }

  std::unique_ptr<DebugImage> image(new DebugImage());
  InitLibelf();
  if (!any_compressed && file != nullptr) {
    // Nothing to inflate: the file's mapping is the image; fault the kept sections in at once.
    for (size_t i = 1; i < plan.size(); ++i) {
      if (plan[i].keep) PopulateRange(bytes, headers[i].sh_offset, headers[i].sh_size);
    }
    image->size_ = file->size;
    image->map_ = file->Release();
  } else {
    uint64_t offset = sizeof(ElfW(Ehdr));
    for (Placement& p : plan) {
      if (!p.keep) continue;
      offset = (offset + p.align - 1) & ~(p.align - 1);
      p.offset = offset;
      offset += p.size;
    }
    const uint64_t table_offset = (offset + 7) & ~uint64_t{7};
    const uint64_t total = table_offset + table_size;
    Mapping out;
    out.size = static_cast<size_t>(total);
    if (out.size == total) {
      out.base = mmap(nullptr, out.size, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    }
    if (out.base == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat(path, ": no memory for ", total, " bytes"));
    }
    uint8_t* dst = static_cast<uint8_t*>(out.base);
    libdeflate_decompressor* inflater = libdeflate_alloc_decompressor();
    if (inflater == nullptr) return absl::ResourceExhaustedError("libdeflate: no memory");
    for (size_t i = 1; i < plan.size(); ++i) {
      Placement& p = plan[i];
      if (!p.keep) continue;
      if (!p.compressed) {
        std::memcpy(dst + p.offset, p.source, p.size);
        continue;
      }
      size_t got = 0;
      if (libdeflate_zlib_decompress(inflater, p.source, p.source_size, dst + p.offset, p.size,
                                     &got) == LIBDEFLATE_SUCCESS &&
          got == p.size) {
        ++image->inflated_;
      } else {
        ++image->corrupt_;
        p.keep = false;
      }
    }
    libdeflate_free_decompressor(inflater);
    ElfW(Ehdr) new_eh = eh;
    new_eh.e_phoff = 0;
    new_eh.e_phnum = 0;
    new_eh.e_shoff = table_offset;
    std::memcpy(dst, &new_eh, sizeof(new_eh));
    for (size_t i = 1; i < headers.size(); ++i) {
      ElfW(Shdr)& sh = headers[i];
      const Placement& p = plan[i];
      if (p.keep) {
        sh.sh_offset = p.offset;
        sh.sh_size = p.size;
        sh.sh_addralign = p.align;
        sh.sh_flags &= ~static_cast<decltype(sh.sh_flags)>(SHF_COMPRESSED);
      } else {
        // Left out: a section without bytes, so that section numbers stay as they were.
        sh.sh_type = SHT_NOBITS;
        sh.sh_offset = sizeof(ElfW(Ehdr));
        sh.sh_flags &= ~static_cast<decltype(sh.sh_flags)>(SHF_COMPRESSED);
      }
    }
    std::memcpy(dst + table_offset, headers.data(), table_size);
    image->size_ = out.size;
    image->map_ = out.Release();
  }
  image->elf_ = elf_memory(static_cast<char*>(image->map_), image->size_);
  if (image->elf_ == nullptr) {
    return unhandled(elf_errmsg(-1));
  }
  return image;
}

DebugImage::~DebugImage() {
  if (elf_ != nullptr) elf_end(elf_);
  if (map_ != nullptr) munmap(map_, size_);
}

}  // namespace stackwalk::internal
