// AArch64 facts for the walkers (AAPCS64 §6.2.3 frame records, DWARF for AArch64 numbering).
#ifndef STACKWALK_SRC_CORE_ARCH_AARCH64_H_
#define STACKWALK_SRC_CORE_ARCH_AARCH64_H_

#include <cstdint>

namespace stackwalk::internal {

struct ArchAarch64 {
  static constexpr const char* kName = "aarch64";
  static constexpr int kWordSize = 8;
  static constexpr int kNumRegs = 33;  // x0..x30, sp (31), pc (32)
  static constexpr int kFp = 29;       // x29
  static constexpr int kLr = 30;       // x30
  static constexpr int kSp = 31;
  static constexpr int kPc = 32;
  static constexpr uint64_t kFrameRecordAlign = 8;

  // Return addresses may carry a pointer-authentication code above the virtual address.
  // Linux user space addresses fit in 48 bits unless a program opts into 52-bit VAs with an
  // mmap hint, which the return addresses of code loaded by ld.so never are; so clear the rest.
  static constexpr uint64_t kVaMask = 0x0000ffffffffffffull;
  static constexpr uint64_t StripPac(uint64_t pc) { return pc & kVaMask; }
  static constexpr uint64_t ReportedPc(uint64_t pc) { return StripPac(pc); }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_ARCH_AARCH64_H_
