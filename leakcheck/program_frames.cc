#include "leakcheck/program_frames.h"

#include <link.h>

namespace stackwalk::leakcheck {

namespace {

// The address ranges of this library's loaded segments. dladdr would answer "is this PC ours?"
// too, but glibc's finds the nearest symbol by a walk over the whole dynamic symbol table of the
// object it lands in: ~0.25 ms a call in libLLVM's or libclang-cpp's (clang's every stack ends its
// hook frames there), which made clang's exit report take seconds (docs/leakcheck-benchmarks.md).
struct OwnSegments {
  static constexpr int kMax = 16;
  uintptr_t lo[kMax] = {};
  uintptr_t hi[kMax] = {};
  int count = 0;

  bool Contains(uintptr_t pc) const {
    for (int i = 0; i < count; ++i) {
      if (pc >= lo[i] && pc < hi[i]) return true;
    }
    return false;
  }
};

int FindOwnSegments(dl_phdr_info* info, size_t, void* data) {
  OwnSegments segments;
  for (int i = 0; i < info->dlpi_phnum && segments.count < OwnSegments::kMax; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    segments.lo[segments.count] = info->dlpi_addr + ph.p_vaddr;
    segments.hi[segments.count] = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    ++segments.count;
  }
  if (!segments.Contains(reinterpret_cast<uintptr_t>(&FirstProgramFrame))) return 0;
  *static_cast<OwnSegments*>(data) = segments;
  return 1;
}

const OwnSegments& Own() {
  static const OwnSegments own = [] {
    OwnSegments found;
    dl_iterate_phdr(FindOwnSegments, &found);
    return found;
  }();
  return own;
}

}  // namespace

// The frames a report shows: from the program's call of the allocator outwards, without the
// hooks' own frames (the capture starts inside this library).
int FirstProgramFrame(void* const* pcs, int n) {
  const OwnSegments& own = Own();
  int first = 0;
  while (first < n && own.Contains(reinterpret_cast<uintptr_t>(pcs[first]))) ++first;
  return first;
}

std::vector<uintptr_t> ProgramFrames(void* const* pcs, int n) {
  const int first = FirstProgramFrame(pcs, n);
  std::vector<uintptr_t> out;
  for (int i = first; i < n; ++i) out.push_back(reinterpret_cast<uintptr_t>(pcs[i]));
  return out;
}

}  // namespace stackwalk::leakcheck
