// IsItaniumMangled(), the one test of "a C++ name" that the demanglers and the symbolizer's
// kStackwalk naming share: on the names this test program's own symbol table gives a C++
// function and an extern "C" one, and on the names a symbol table holds that are not C++.
#include "symbolize/demangle.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstdint>
#include <string>

#include "symbolize/elf_image.h"

namespace demangle_test {
__attribute__((noinline, used)) int CxxFunction(int x) { return x * 3 + 1; }
}  // namespace demangle_test

extern "C" __attribute__((noinline, used)) int demangle_test_c_function(int x) { return x - 7; }

namespace stackwalk::internal {
namespace {

// The name this program's .symtab gives the function at `address`.
std::string SymbolNameOf(const void* address) {
  Dl_info info;
  link_map* map = nullptr;
  if (dladdr1(address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 ||
      map == nullptr) {
    return "";
  }
  ElfImage image;
  if (!image.Open("/proc/self/exe")) return "";
  SymbolHit hit;
  uint64_t link_time = reinterpret_cast<uintptr_t>(address) - map->l_addr;
#if defined(__arm__)
  link_time &= ~uint64_t{1};  // a Thumb function's address carries the Thumb bit; ElfImage's
                              // symbol values do not (its code starts at the even address)
#endif
  if (!image.Lookup(link_time, &hit) || hit.value != link_time) return "";
  return hit.name;
}

TEST(IsItaniumMangled, TheSymbolOfACxxFunctionIsAndAnExternCOneIsNot) {
  const std::string cxx = SymbolNameOf(reinterpret_cast<const void*>(&demangle_test::CxxFunction));
  const std::string c = SymbolNameOf(reinterpret_cast<const void*>(&demangle_test_c_function));
  ASSERT_FALSE(cxx.empty());
  ASSERT_EQ(c, "demangle_test_c_function");
  EXPECT_TRUE(IsItaniumMangled(cxx.c_str())) << cxx;
  EXPECT_FALSE(IsItaniumMangled(c.c_str()));
  // What the rule decides is what the demanglers do with the name.
  EXPECT_EQ(Demangle(cxx.c_str()), "demangle_test::CxxFunction(int)");
  EXPECT_EQ(Demangle(c.c_str()), c);
  char out[128];
  DemangleSignalSafe(c.c_str(), out, sizeof(out));
  EXPECT_EQ(std::string(out), c);
}

TEST(IsItaniumMangled, OnlyTheItaniumPrefixCounts) {
  EXPECT_TRUE(IsItaniumMangled("_Z1fv"));
  EXPECT_TRUE(IsItaniumMangled("_ZN12_GLOBAL__N_16helperEv"));  // anonymous namespace
  EXPECT_TRUE(IsItaniumMangled("_ZN3geo5Field5TotalEv@@V1"));   // versioned C++ symbol
  // Not C++: a C name (which __cxa_demangle would read as a type: "f" is "float"), a versioned
  // C alias, reserved C names, a Rust v0 name, the prefix with a different case, too short.
  for (const char* name : {"f", "__libc_start_main@@GLIBC_2.34", "_start", "__Z1fv", "_R3foo",
                           "_z1fv", "Z1fv", "_", ""}) {
    EXPECT_FALSE(IsItaniumMangled(name)) << name;
    EXPECT_EQ(Demangle(name), name);
  }
}

}  // namespace
}  // namespace stackwalk::internal
