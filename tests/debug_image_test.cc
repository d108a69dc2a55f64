// DebugImage on real files made from a -O2 -g fixture with objcopy: zlib-compressed sections are
// inflated (and what a lookup never reads is left out), a damaged stream loses only its own
// section, and what the loader leaves to libdw (zstd, relocatable objects) or cannot read at all
// is told apart by the status.
#include "symbolize/debug_image.h"

#include <elf.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace stackwalk::internal {
namespace {

const std::string kFixture = C_FIXTURE;
const unsigned kLibelfVersion = elf_version(EV_CURRENT);  // before the tests' own elf_memory

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "debug_image." + std::to_string(getpid()) + "." + name;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

struct SectionInfo {
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Every section of an ELF handle by name.
std::map<std::string, SectionInfo> Sections(Elf* elf) {
  std::map<std::string, SectionInfo> out;
  size_t names = 0;
  if (elf_getshdrstrndx(elf, &names) != 0) return out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* name = elf_strptr(elf, names, sh.sh_name);
    if (name != nullptr) out[name] = {sh.sh_type, sh.sh_flags, sh.sh_offset, sh.sh_size};
  }
  return out;
}

// The bytes of section `name` as the image holds them.
std::vector<uint8_t> SectionBytes(Elf* elf, const std::string& name) {
  size_t names = 0;
  elf_getshdrstrndx(elf, &names);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* n = elf_strptr(elf, names, sh.sh_name);
    if (n == nullptr || name != n) continue;
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) return {};
    const uint8_t* p = static_cast<const uint8_t*>(data->d_buf);
    return std::vector<uint8_t>(p, p + data->d_size);
  }
  return {};
}

std::string Compressed(const std::string& how) {
  const std::string out = Temp(how);
  const std::string command =
      "objcopy --compress-debug-sections=" + how + " " + kFixture + " " + out + " 2>/dev/null";
  return std::system(command.c_str()) == 0 ? out : "";
}

TEST(DebugImage, InflatesZlibSectionsToTheUncompressedBytesAndLeavesOutTheRest) {
  const std::string packed = Compressed("zlib");
  ASSERT_FALSE(packed.empty());
  auto plain = DebugImage::Load(kFixture);
  auto image = DebugImage::Load(packed);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ((*plain)->inflated_sections(), 0);  // the file itself is the image
  EXPECT_GE((*image)->inflated_sections(), 4);
  EXPECT_EQ((*image)->corrupt_sections(), 0);

  std::map<std::string, SectionInfo> before = Sections((*plain)->elf());
  std::map<std::string, SectionInfo> after = Sections((*image)->elf());
  ASSERT_EQ(before.size(), after.size()) << "section numbers are kept";
  int compared = 0;
  for (const auto& [name, info] : before) {
    const SectionInfo& now = after[name];
    EXPECT_EQ(now.flags & SHF_COMPRESSED, 0u) << name;
    if (DebugImage::IsLookupSection(name.c_str()) || name == ".shstrtab") {
      EXPECT_EQ(now.type, info.type) << name;
      EXPECT_EQ(now.size, info.size) << name;
      EXPECT_EQ(SectionBytes((*image)->elf(), name), SectionBytes((*plain)->elf(), name)) << name;
      ++compared;
    } else if (info.type != SHT_NULL) {
      EXPECT_EQ(now.type, static_cast<uint32_t>(SHT_NOBITS)) << name << " is not read by lookups";
    }
  }
  EXPECT_GE(compared, 5);
  EXPECT_TRUE(before.count(".debug_info") && before.count(".debug_line") && before.count(".text"));
}

TEST(DebugImage, ADamagedStreamLosesOnlyItsOwnSection) {
  const std::string packed = Compressed("zlib");
  ASSERT_FALSE(packed.empty());
  std::vector<uint8_t> bytes = ReadFile(packed);
  auto intact = DebugImage::LoadMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(intact.ok()) << intact.status();
  const SectionInfo line = Sections((*intact)->elf())[".debug_line"];
  ASSERT_GT(line.size, 0u);
  // Where the compressed .debug_line lies in the file: from the file's own section headers.
  Elf* file = elf_memory(reinterpret_cast<char*>(bytes.data()), bytes.size());
  ASSERT_NE(file, nullptr);
  const SectionInfo packed_line = Sections(file)[".debug_line"];
  elf_end(file);
  ASSERT_NE(packed_line.flags & SHF_COMPRESSED, 0u);
  ASSERT_GT(packed_line.size, sizeof(Elf64_Chdr) + 16);
  // Garbage over the middle of the deflate stream.
  const uint64_t middle = packed_line.offset + sizeof(Elf64_Chdr) + (packed_line.size - sizeof(Elf64_Chdr)) / 2;
  for (uint64_t i = 0; i < 8 && middle + i < packed_line.offset + packed_line.size; ++i) {
    bytes[middle + i] ^= 0xa5;
  }
  const std::string broken = Temp("broken");
  WriteFile(broken, bytes);
  auto image = DebugImage::Load(broken);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ((*image)->corrupt_sections(), 1);
  EXPECT_EQ((*image)->inflated_sections(), (*intact)->inflated_sections() - 1);
  std::map<std::string, SectionInfo> sections = Sections((*image)->elf());
  EXPECT_EQ(sections[".debug_line"].type, static_cast<uint32_t>(SHT_NOBITS));
  EXPECT_EQ(sections[".debug_info"].type, static_cast<uint32_t>(SHT_PROGBITS));
  EXPECT_EQ(SectionBytes((*image)->elf(), ".debug_info"),
            SectionBytes((*intact)->elf(), ".debug_info"));

  // A header claiming more than deflate can produce: that section is left out, not allocated.
  std::vector<uint8_t> huge = ReadFile(packed);
  Elf64_Chdr ch;
  std::memcpy(&ch, huge.data() + packed_line.offset, sizeof(ch));
  ch.ch_size = uint64_t{1} << 50;
  std::memcpy(huge.data() + packed_line.offset, &ch, sizeof(ch));
  auto bounded = DebugImage::LoadMemory(huge.data(), huge.size());
  ASSERT_TRUE(bounded.ok()) << bounded.status();
  EXPECT_EQ(Sections((*bounded)->elf())[".debug_line"].type, static_cast<uint32_t>(SHT_NOBITS));
}

TEST(DebugImage, WhatItLeavesToLibdwAndWhatIsNotElf) {
  // zstd, where objcopy makes it: for libdw's own reader.
  const std::string zstd = Compressed("zstd");
  if (!zstd.empty()) {
    std::vector<uint8_t> bytes = ReadFile(zstd);
    Elf* file = elf_memory(reinterpret_cast<char*>(bytes.data()), bytes.size());
    ASSERT_NE(file, nullptr);
    const SectionInfo info = Sections(file)[".debug_info"];
    elf_end(file);
    Elf64_Chdr ch;
    std::memcpy(&ch, bytes.data() + info.offset, sizeof(ch));
    if ((info.flags & SHF_COMPRESSED) != 0 && ch.ch_type == 2 /* ELFCOMPRESS_ZSTD */) {
      EXPECT_TRUE(absl::IsUnimplemented(DebugImage::Load(zstd).status()));
    }
  }
  // A relocatable object: libdw would have to apply its relocations.
  const std::string object = Temp("object.o");
  ASSERT_EQ(std::system(("echo 'int f(void) { return 1; }' | cc -g -c -x c - -o " + object).c_str()), 0);
  EXPECT_TRUE(absl::IsUnimplemented(DebugImage::Load(object).status()));

  EXPECT_TRUE(absl::IsNotFound(DebugImage::Load(Temp("missing")).status()));
  const std::string text = Temp("text");
  WriteFile(text, std::vector<uint8_t>(200, 'x'));
  EXPECT_TRUE(absl::IsInvalidArgument(DebugImage::Load(text).status()));
  // Truncations of the compressed file: objcopy puts the section headers last, so every cut
  // loses them and is refused (under the sanitizers: without reading past the cut).
  std::vector<uint8_t> bytes = ReadFile(Compressed("zlib"));
  ASSERT_GT(bytes.size(), 4096u);
  int images = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += bytes.size() / 97 + 1) {
    std::vector<uint8_t> head(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    if (DebugImage::LoadMemory(head.data(), head.size()).ok()) ++images;
  }
  EXPECT_EQ(images, 0);
}

}  // namespace
}  // namespace stackwalk::internal
