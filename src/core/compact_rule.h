// CompactRule: the unwind rows most code has, reduced to what a backtrace needs (the idea of
// framehop's rule enums and nongnu libunwind's fast trace):
//
//   cfa = (sp or fp) + cfa_offset
//   pc  = [cfa + ra_offset]           or, when ra_offset == 0, the link register (AArch64 leaf)
//   fp  = [cfa + fp_offset]           or unchanged when fp_offset == 0
//   lr  = [cfa + lr_offset]           or unchanged when lr_offset == 0 (AArch64, arm32)
//   r7  = [cfa + r7_offset]           or unchanged when r7_offset == 0 (arm32, whose fp above
//                                     is r11; cfa_from_r7 bases the CFA on r7)
//   sp  = cfa
// or, with end_of_stack, "this is the outermost frame" (the return address is undefined).
//
// Other registers are forgotten: a later frame whose rule needs one makes the walk restart
// without compact rules.
#ifndef STACKWALK_SRC_CORE_COMPACT_RULE_H_
#define STACKWALK_SRC_CORE_COMPACT_RULE_H_

#include <cstdint>
#include <type_traits>

#include "core/arch_arm.h"
#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"

namespace stackwalk::internal {

struct CompactRule {
  int32_t cfa_offset = 0;
  int16_t ra_offset = 0;
  int16_t fp_offset = 0;
  int16_t lr_offset = 0;
  int16_t r7_offset = 0;
  uint8_t cfa_from_fp = 0;  // 1: cfa = fp + cfa_offset; 0: sp + cfa_offset
  uint8_t cfa_from_r7 = 0;
  uint8_t end_of_stack = 0; // the return address is undefined: this is the outermost frame
  uint8_t valid = 0;
};

// One step with a cached rule, through bounds-checked memory. The caller's registers other than
// pc, sp, fp, lr (and r7 on arm32) are forgotten. The x86_64/aarch64 CFI walk inlines the same
// formulas in its own loop; arm32's EHABI walk uses this.
template <class Arch, class Memory>
StepResult ApplyCompactRule(const CompactRule& rule, Regs<Arch>& regs, Memory& memory,
                            WalkState* state) {
  constexpr bool kArm = std::is_same_v<Arch, ArchArm>;
  if (rule.end_of_stack) return StepResult::kEndOfStack;
  int base = Arch::kSp;
  if (rule.cfa_from_fp) base = Arch::kFp;
  if constexpr (kArm) {
    if (rule.cfa_from_r7) base = ArchArm::kThumbFp;
  }
  if (!regs.Has(base) || !regs.Has(Arch::kSp)) return StepResult::kInvalidFrame;
  const uint64_t sp = regs.sp();
  uint64_t cfa = regs.Get(base) + static_cast<uint64_t>(static_cast<int64_t>(rule.cfa_offset));
  if constexpr (Arch::kWordSize == 4) cfa &= 0xffffffffu;
  if (!ValidClimb(memory, cfa, sp, state)) return StepResult::kInvalidFrame;
  auto load = [&](int16_t offset, uint64_t* out) {
    uint64_t addr = cfa + static_cast<uint64_t>(static_cast<int64_t>(offset));
    if constexpr (Arch::kWordSize == 4) addr &= 0xffffffffu;
    return ReadWord<Arch>(memory, addr, out);
  };
  uint64_t ra;
  if (rule.ra_offset != 0) {
    if (!load(rule.ra_offset, &ra)) return StepResult::kUnreadable;
  } else if constexpr (Arch::kLr >= 0) {
    if (!regs.Has(Arch::kLr)) return StepResult::kInvalidFrame;
    ra = regs.Get(Arch::kLr);
  } else {
    return StepResult::kInvalidFrame;
  }
  Regs<Arch> caller;
  caller.set_sp(cfa);
  auto carry = [&](int reg, int16_t offset) {
    uint64_t v;
    if (offset != 0) {
      if (!load(offset, &v)) return false;
      caller.Set(reg, v);
    } else if (regs.Has(reg)) {
      caller.Set(reg, regs.Get(reg));
    }
    return true;
  };
  if (!carry(Arch::kFp, rule.fp_offset)) return StepResult::kUnreadable;
  if constexpr (Arch::kLr >= 0) {
    if (!carry(Arch::kLr, rule.lr_offset)) return StepResult::kUnreadable;
  }
  if constexpr (kArm) {
    if (!carry(ArchArm::kThumbFp, rule.r7_offset)) return StepResult::kUnreadable;
  }
  if (Arch::ReportedPc(ra) == 0) return StepResult::kEndOfStack;
  if (cfa == sp && ra == regs.pc()) return StepResult::kInvalidFrame;
  // arm32 keeps the Thumb bit in the PC (it says which register frames the caller).
  caller.set_pc(kArm ? ra : Arch::ReportedPc(ra));
  state->pc_is_exact = false;
  regs = caller;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_COMPACT_RULE_H_
