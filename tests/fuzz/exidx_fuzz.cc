// libFuzzer target for the ARM EHABI decoder and opcode interpreter (built for the host): a
// hostile index or table must give errors, never a crash, a hang or a read outside the input.
//
// Input: 2 bytes of PC offset, 1 byte of index entry count, then the bytes whose first
// 8 * count bytes are the .ARM.exidx index and all of which may hold .ARM.extab entries.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "exidx/ehabi_interpreter.h"
#include "exidx/exidx_table.h"

namespace {

using namespace stackwalk::internal;

// A 16 KiB stack below 4 GiB (the interpreter computes in 32 bits, as on the target).
class FuzzStack {
 public:
  FuzzStack() {
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
                   -1, 0);
    base_ = p == MAP_FAILED ? 0 : reinterpret_cast<uintptr_t>(p);
    if (base_ != 0) {
      auto* words = reinterpret_cast<uint32_t*>(base_);
      for (size_t i = 0; i < kSize / 4; ++i) words[i] = static_cast<uint32_t>(base_ + (i * 13 % (kSize / 4)) * 4);
    }
  }
  bool Read(uint64_t addr, void* out, size_t size) {
    if (base_ == 0 || addr < base_ || addr - base_ > kSize || size > kSize - (addr - base_)) return false;
    std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), size);
    return true;
  }
  int RegionOf(uint64_t addr) const { return addr >= base_ && addr - base_ < kSize ? 0 : -1; }
  uint64_t base() const { return base_; }

 private:
  static constexpr size_t kSize = 16384;
  uint64_t base_;
};

FuzzStack& Stack() {
  static FuzzStack stack;
  return stack;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint64_t pc_offset = data[0] | (uint64_t{data[1]} << 8);
  const size_t entries = data[2];
  std::vector<uint32_t> words((size - 3 + 3) / 4, 0);  // aligned, as the sections are
  std::memcpy(words.data(), data + 3, size - 3);
  const uint64_t lo = reinterpret_cast<uintptr_t>(words.data());
  const uint64_t hi = lo + (size - 3);
  ExidxSection section;
  section.bounds = {lo, hi};
  section.table = {lo, lo + std::min<uint64_t>(entries * 8, (hi - lo) & ~uint64_t{7})};

  uint64_t entry, start, personality;
  if (FindExidxEntry(section, lo + pc_offset, &entry, &start) != ExidxError::kOk) {
    // Still run the first entry, whatever its function start says.
    if (section.table.empty()) return 0;
    entry = section.table.lo;
  }
  EhabiOpcodes ops;
  if (DecodeExidxEntry(section, entry, &personality, &ops) != ExidxError::kOk) return 0;
  FuzzStack& stack = Stack();
  Regs<ArchArm> regs;
  for (int r = 0; r < 16; ++r) regs.Set(r, stack.base() + 4096 + 64 * r);
  (void)ExecuteEhabi(ops, regs, stack);
  return 0;
}
