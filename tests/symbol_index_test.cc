// SymbolIndex against the linear ElfImage::Lookup it replaces on the batch path: on real objects
// (this test program with its local symbols and STT_FILE entries, libc, libstdc++), every
// answer must be the same symbol, at symbol starts, ends, insides and between symbols.
#include "symbolize/symbol_index.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "symbolize/elf_image.h"

namespace stackwalk::internal {
namespace {

std::string ObjectOf(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// Addresses worth asking about: around every candidate's start and end, and a stride over the
// whole span (gaps, padding, data).
std::vector<uint64_t> Probes(const ElfImage& image, size_t limit) {
  std::vector<uint64_t> starts;
  image.ForEachCandidate(
      [](void* context, int, const ElfImage::Candidate& c) {
        auto* out = static_cast<std::vector<uint64_t>*>(context);
        for (uint64_t a : {c.value - 1, c.value, c.value + 1, c.value + c.size / 2,
                           c.value + c.size - 1, c.value + c.size}) {
          out->push_back(a);
        }
      },
      &starts);
  std::vector<uint64_t> probes;
  const size_t step = starts.size() / limit + 1;
  for (size_t i = 0; i < starts.size(); i += step) probes.push_back(starts[i]);
  return probes;
}

void ExpectSameAnswers(const std::string& path) {
  SCOPED_TRACE(path);
  ElfImage image;
  ASSERT_TRUE(image.Open(path.c_str()));
  SymbolIndex index;
  index.Build(image);
  ASSERT_GT(index.size(), 10u);
  size_t found = 0, compared = 0;
  for (uint64_t addr : Probes(image, 2500)) {
    SymbolHit linear, indexed;
    const bool a = image.Lookup(addr, &linear);
    const bool b = index.Lookup(addr, &indexed);
    ++compared;
    ASSERT_EQ(a, b) << std::hex << addr;
    if (!a) continue;
    ++found;
    // The same symbol: the same bytes of the image, not only an equal name.
    ASSERT_EQ(linear.name, indexed.name) << std::hex << addr << " " << linear.name;
    ASSERT_EQ(linear.value, indexed.value) << std::hex << addr;
    ASSERT_EQ(linear.size, indexed.size) << std::hex << addr;
    ASSERT_EQ(linear.file, indexed.file) << std::hex << addr;
  }
  // Probes before and after each symbol name nothing unless another symbol covers them (a
  // sized symbol names only its own bytes): on aarch64 fewer than half of them are named.
  EXPECT_GT(found, compared / 3);
  std::printf("%s: %zu of %zu probes named, identical\n", path.c_str(), found, compared);
}

TEST(SymbolIndex, AnswersAsTheLinearLookupOnThisProgram) { ExpectSameAnswers("/proc/self/exe"); }

TEST(SymbolIndex, AnswersAsTheLinearLookupOnLibc) {
  const std::string libc = ObjectOf(reinterpret_cast<const void*>(&std::fopen));
  ASSERT_FALSE(libc.empty());
  ExpectSameAnswers(libc);
}

TEST(SymbolIndex, AnswersAsTheLinearLookupOnLibstdcxx) {
  const std::string libstdcxx = ObjectOf(reinterpret_cast<const void*>(
      static_cast<void (*)(const char*)>(&std::__throw_logic_error)));
  ASSERT_FALSE(libstdcxx.empty());
  ExpectSameAnswers(libstdcxx);
}

TEST(SymbolIndex, EmptyAndUnbuiltIndexesFindNothing) {
  SymbolIndex unbuilt;
  SymbolHit hit;
  EXPECT_FALSE(unbuilt.Lookup(0x1000, &hit));
  ElfImage closed;
  SymbolIndex empty;
  empty.Build(closed);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_FALSE(empty.Lookup(0x1000, &hit));
}

}  // namespace
}  // namespace stackwalk::internal
