// x86_64 facts for the walkers (System V psABI §3.6.2, DWARF register numbers).
#ifndef STACKWALK_SRC_CORE_ARCH_X86_64_H_
#define STACKWALK_SRC_CORE_ARCH_X86_64_H_

#include <cstdint>

namespace stackwalk::internal {

struct ArchX86_64 {
  static constexpr const char* kName = "x86_64";
  static constexpr int kWordSize = 8;
  static constexpr int kNumRegs = 17;  // rax..r15, then the return-address column
  static constexpr int kFp = 6;        // rbp
  static constexpr int kSp = 7;        // rsp
  static constexpr int kPc = 16;       // return-address column (rip)
  static constexpr int kLr = -1;       // no link register
  // A frame record is {saved rbp, return address} at rbp; rbp is at least 8-aligned.
  static constexpr uint64_t kFrameRecordAlign = 8;

  // The PC a user sees for a return address or interrupted PC (nothing to strip on x86_64).
  static constexpr uint64_t ReportedPc(uint64_t pc) { return pc; }
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_ARCH_X86_64_H_
