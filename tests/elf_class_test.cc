// ElfImage reads ELF of either class on any host (issue 20): stackwalk-dump names the frames of
// an arm32 crash snapshot on an x86_64 host from the target's 32-bit objects. A 32-bit object
// built here byte by byte (section headers, .symtab, .strtab) answers the lookups a 64-bit one
// would, an ARM Thumb function's value (bit 0 set) at its even start, and SymbolIndex (the
// batch path) agrees with the linear lookup.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "symbolize/elf_image.h"
#include "symbolize/symbol_index.h"

namespace stackwalk::internal {
namespace {

// An ELF32 object for `machine` with a .text at 0x1000 (0x2000 bytes) and two function symbols:
// thumb_fn at 0x1001 (Thumb bit set) size 0x20, arm_fn at 0x2000 size 0x10.
std::vector<uint8_t> Elf32Object(uint16_t machine) {
  const std::string shstrtab("\0.text\0.symtab\0.strtab\0.shstrtab\0", 33);
  const std::string strtab("\0thumb_fn\0arm_fn\0", 17);
  Elf32_Sym syms[3] = {};
  syms[1].st_name = 1;
  syms[1].st_value = 0x1001;
  syms[1].st_size = 0x20;
  syms[1].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC);
  syms[1].st_shndx = 1;
  syms[2].st_name = 10;
  syms[2].st_value = 0x2000;
  syms[2].st_size = 0x10;
  syms[2].st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC);
  syms[2].st_shndx = 1;

  const uint32_t shstrtab_at = sizeof(Elf32_Ehdr);
  const uint32_t strtab_at = shstrtab_at + static_cast<uint32_t>(shstrtab.size());
  const uint32_t symtab_at = (strtab_at + static_cast<uint32_t>(strtab.size()) + 3) & ~3u;
  const uint32_t shdrs_at = symtab_at + sizeof(syms);
  Elf32_Shdr sh[5] = {};
  sh[1] = {1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 0x1000, 0, 0x2000, 0, 0, 4, 0};
  sh[2] = {7, SHT_SYMTAB, 0, 0, symtab_at, sizeof(syms), 3, 1, 4, sizeof(Elf32_Sym)};
  sh[3] = {15, SHT_STRTAB, 0, 0, strtab_at, static_cast<uint32_t>(strtab.size()), 0, 0, 1, 0};
  sh[4] = {23, SHT_STRTAB, 0, 0, shstrtab_at, static_cast<uint32_t>(shstrtab.size()), 0, 0, 1, 0};
  Elf32_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof(eh);
  eh.e_shoff = shdrs_at;
  eh.e_shentsize = sizeof(Elf32_Shdr);
  eh.e_shnum = 5;
  eh.e_shstrndx = 4;

  std::vector<uint8_t> out(shdrs_at + sizeof(sh));
  std::memcpy(out.data(), &eh, sizeof(eh));
  std::memcpy(out.data() + shstrtab_at, shstrtab.data(), shstrtab.size());
  std::memcpy(out.data() + strtab_at, strtab.data(), strtab.size());
  std::memcpy(out.data() + symtab_at, syms, sizeof(syms));
  std::memcpy(out.data() + shdrs_at, sh, sizeof(sh));
  return out;
}

std::string NameAt(const ElfImage& image, uint64_t addr) {
  SymbolHit hit;
  return image.Lookup(addr, &hit) ? hit.name : "";
}

TEST(ElfClass, A32BitArmObjectIsReadWithThumbStartsEven) {
  const std::vector<uint8_t> bytes = Elf32Object(EM_ARM);
  ElfImage image;
  ASSERT_TRUE(image.OpenMemory(bytes.data(), bytes.size()))
      << ElfOpenErrorString(image.open_error());
  EXPECT_EQ(NameAt(image, 0x1000), "thumb_fn");  // the Thumb bit cleared: it starts here
  EXPECT_EQ(NameAt(image, 0x101f), "thumb_fn");
  EXPECT_EQ(NameAt(image, 0x1020), "");
  EXPECT_EQ(NameAt(image, 0x2008), "arm_fn");
  EXPECT_EQ(NameAt(image, 0x2010), "");
  SymbolIndex index;
  index.Build(image);
  for (uint64_t addr : {0x0fffull, 0x1000ull, 0x1010ull, 0x1020ull, 0x2000ull, 0x200full}) {
    SymbolHit linear, indexed;
    const bool found = image.Lookup(addr, &linear);
    ASSERT_EQ(index.Lookup(addr, &indexed), found) << addr;
    if (found) EXPECT_STREQ(indexed.name, linear.name) << addr;
  }
}

TEST(ElfClass, OnlyArmValuesLoseBitZero) {
  // Another machine's odd function value is its value (no Thumb there).
  const std::vector<uint8_t> bytes = Elf32Object(EM_386);
  ElfImage image;
  ASSERT_TRUE(image.OpenMemory(bytes.data(), bytes.size()));
  EXPECT_EQ(NameAt(image, 0x1000), "");
  EXPECT_EQ(NameAt(image, 0x1001), "thumb_fn");
}

TEST(ElfClass, AnUnknownClassIsRefusedAndSaid) {
  std::vector<uint8_t> bytes = Elf32Object(EM_ARM);
  bytes[EI_CLASS] = 7;
  ElfImage image;
  EXPECT_FALSE(image.OpenMemory(bytes.data(), bytes.size()));
  EXPECT_EQ(image.open_error(), ElfOpenError::kWrongClass);
  bytes.resize(40);  // an ELF32 header cut short
  bytes[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(image.OpenMemory(bytes.data(), bytes.size()));
  EXPECT_EQ(image.open_error(), ElfOpenError::kTruncated);
}

}  // namespace
}  // namespace stackwalk::internal
