// libFuzzer target for the .eh_frame decoder, the CFA program interpreter, the DWARF expression
// evaluator and the row executor: hostile bytes must give errors, never a crash, a hang or a
// read outside the input (AddressSanitizer checks the last).
//
// Input: 1 byte choosing where the FDE starts, 2 bytes of PC offset into it, then the bytes of a
// made-up .eh_frame section (also tried as a .debug_frame section). The same bytes are also tried as an .eh_frame_hdr and as a DWARF
// expression.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/context.h"
#include "ehframe/cfi_executor.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/cfi_program.h"
#include "ehframe/dwarf_expression.h"
#include "ehframe/eh_frame_hdr.h"

namespace {

using namespace stackwalk::internal;

// A 4 KiB made-up stack: reads outside it fail, as reads outside a thread's stack do.
class FuzzStack {
 public:
  FuzzStack() {
    for (size_t i = 0; i < sizeof(words_) / 8; ++i) words_[i] = base() + 8 * ((i * 7) % 512);
  }
  uint64_t base() const { return reinterpret_cast<uintptr_t>(words_); }
  bool Read(uint64_t addr, void* out, size_t size) {
    if (addr < base() || addr - base() > sizeof(words_) || size > sizeof(words_) - (addr - base())) {
      return false;
    }
    std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), size);
    return true;
  }
  int RegionOf(uint64_t addr) const {
    return addr >= base() && addr - base() < sizeof(words_) ? 0 : -1;
  }

 private:
  uint64_t words_[512];
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const size_t fde_offset = data[0];
  const uint64_t pc_offset = data[1] | (uint64_t{data[2]} << 8);
  // A private copy, so that AddressSanitizer sees exactly the section's bounds.
  std::vector<uint8_t> bytes(data + 3, data + size);
  if (bytes.empty()) return 0;
  const uint64_t lo = reinterpret_cast<uintptr_t>(bytes.data());
  EhFrameSection section;
  section.hdr = lo;
  section.bounds = {lo, lo + bytes.size()};
  section.address_size = 8;

  FuzzStack stack;
  NativeRegs regs;
  for (int r = 0; r < NativeArch::kNumRegs; ++r) regs.Set(r, stack.base() + 64 * (r % 32));

  // As an .eh_frame_hdr: the binary search and the linear walk.
  (void)FindFde(section, lo + pc_offset);

  // As a DWARF expression.
  uint64_t value;
  (void)EvaluateExpression<NativeArch>(lo, static_cast<uint32_t>(bytes.size()), regs, stack, true,
                                       stack.base() + 256, &value);

  // As .eh_frame, then as .debug_frame: decode the FDE, run its program, apply the row.
  for (int debug_frame = 0; debug_frame < 2 && fde_offset < bytes.size(); ++debug_frame) {
    section.debug_frame = debug_frame == 1;
    section.load_bias = section.absolute_bias = debug_frame == 1 ? 0x1000 : 0;
    Fde fde;
    if (ParseFde(section, lo + fde_offset, &fde) == CfiError::kOk) {
      uint64_t pc = fde.pc_begin + pc_offset;
      CfiRow<NativeArch::kNumRegs> row;
      if (RunCfaProgram(section, fde, pc, &row) == CfiError::kOk) {
        WalkState state;
        (void)ApplyCfiRow<NativeArch>(row, fde.cie.ra_column, fde.cie.signal_frame, regs, stack,
                                      &state);
      }
    }
  }
  return 0;
}
