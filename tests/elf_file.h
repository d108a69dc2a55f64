// ElfFile: a whole ELF file mapped read-only, and its sections by name or type, for the table
// tests that decode system libraries from disk.
#ifndef STACKWALK_TESTS_ELF_FILE_H_
#define STACKWALK_TESTS_ELF_FILE_H_

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace stackwalk::testing {

class ElfFile {
 public:
  explicit ElfFile(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      void* base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (base != MAP_FAILED) {
        base_ = static_cast<const uint8_t*>(base);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  // The mapping stays for the test's life: decoders keep pointers into it.

  bool ok() const { return base_ != nullptr; }
  uint64_t begin() const { return reinterpret_cast<uintptr_t>(base_); }
  uint64_t end() const { return begin() + size_; }

  // The first section with this name (or, if name is empty, this type); nullptr if none.
  const ElfW(Shdr)* Section(const char* name, uint32_t type = 0) const {
    ElfW(Ehdr) eh;
    std::memcpy(&eh, base_, sizeof(eh));
    const auto* sections = reinterpret_cast<const ElfW(Shdr)*>(base_ + eh.e_shoff);
    const char* names = reinterpret_cast<const char*>(base_ + sections[eh.e_shstrndx].sh_offset);
    for (int i = 0; i < eh.e_shnum; ++i) {
      if (name[0] != '\0' ? std::strcmp(names + sections[i].sh_name, name) == 0
                          : sections[i].sh_type == type) {
        return &sections[i];
      }
    }
    return nullptr;
  }
  // Where a section's bytes are mapped, and the shift from its link-time addresses.
  uint64_t Mapped(const ElfW(Shdr)& s) const { return begin() + s.sh_offset; }
  uint64_t Shift(const ElfW(Shdr)& s) const { return begin() + s.sh_offset - s.sh_addr; }

 private:
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace stackwalk::testing

#endif  // STACKWALK_TESTS_ELF_FILE_H_
