// Helpers for chain tests: the table method of this target, and naming captured PCs with dladdr
// (test binaries link with -rdynamic).
#ifndef STACKWALK_TESTS_FRAME_NAMES_H_
#define STACKWALK_TESTS_FRAME_NAMES_H_

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <string>
#include <vector>

#include "stackwalk/stackwalk.h"

namespace stackwalk::testing {

// The unwind-table method of this target: ARM.exidx on arm32, .eh_frame elsewhere.
#if defined(__arm__)
constexpr stackwalk_method kTableMethod = STACKWALK_EXIDX;
#else
constexpr stackwalk_method kTableMethod = STACKWALK_EHFRAME;
#endif

#if defined(__arm__)
// EHABI describes a function as its call sites see it: an interrupt in the prologue (before the
// frame it describes is set up) or the epilogue (after it is torn down) is outside what the
// table says (docs/limits.md), so tests do not check arm32 samples there for their callers.
inline bool OutsideEhabiBody(void* pc) {
  Dl_info info;
  void* entry = nullptr;
  const uintptr_t at = reinterpret_cast<uintptr_t>(pc);
  if (dladdr1(reinterpret_cast<void*>(at | 1), &info, &entry, RTLD_DL_SYMENT) == 0 ||
      entry == nullptr) {
    return false;
  }
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  const uintptr_t offset = at - (reinterpret_cast<uintptr_t>(info.dli_saddr) & ~uintptr_t{1});
  return offset < 12 || offset + 8 >= sym->st_size;
}
#endif

// The symbol holding each PC; return addresses (all but an interrupted first PC) at pc - 1.
inline std::vector<std::string> FrameNames(void* const* pcs, int n, bool first_is_interrupted) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    uintptr_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
    if (!(i == 0 && first_is_interrupted)) {
      pc -= 1;
    } else {
#if defined(__arm__)
      pc |= 1;  // a Thumb function's symbol is odd: its first instruction is below it
#endif
    }
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_sname != nullptr) {
      names.push_back(info.dli_sname);
    } else {
      names.push_back("?");
    }
  }
  return names;
}

// True if `want` appears in `names` in order (not necessarily adjacent).
inline bool ContainsInOrder(const std::vector<std::string>& names,
                            const std::vector<std::string>& want) {
  size_t j = 0;
  for (size_t i = 0; i < names.size() && j < want.size(); ++i) {
    if (names[i] == want[j]) ++j;
  }
  return j == want.size();
}

inline std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (auto& n : names) s += (s.empty() ? "" : " <- ") + n;
  return s;
}

}  // namespace stackwalk::testing

#endif  // STACKWALK_TESTS_FRAME_NAMES_H_
