// 32-bit ARM facts for the walkers (AAPCS, DWARF for the ARM architecture numbering).
#ifndef STACKWALK_SRC_CORE_ARCH_ARM_H_
#define STACKWALK_SRC_CORE_ARCH_ARM_H_

#include <cstdint>

namespace stackwalk::internal {

struct ArchArm {
  static constexpr const char* kName = "arm";
  static constexpr int kWordSize = 4;
  static constexpr int kNumRegs = 16;  // r0..r15
  static constexpr int kThumbFp = 7;   // r7: the frame pointer of Thumb code
  static constexpr int kArmFp = 11;    // r11 (fp): the frame pointer of ARM code
  static constexpr int kFp = 11;
  static constexpr int kSp = 13;
  static constexpr int kLr = 14;
  static constexpr int kPc = 15;  // bit 0 set while the frame executes Thumb code
  static constexpr uint64_t kFrameRecordAlign = 4;

  // Internally bit 0 of the PC says "Thumb"; users get the instruction address, as
  // libgcc's _Unwind_GetIP gives it.
  static constexpr uint64_t ReportedPc(uint64_t pc) { return pc & ~uint64_t{1}; }
  static constexpr bool IsThumb(uint64_t pc) { return pc & 1; }
  static constexpr int FpRegFor(uint64_t pc) { return IsThumb(pc) ? kThumbFp : kArmFp; }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_ARCH_ARM_H_
