// CompileCompactRule() turns a CFI row into a CompactRule when the row is one (most are);
// ApplyCompactRule() is the cached fast step. See core/compact_rule.h for the formulas.
#ifndef STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_
#define STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"
#include "ehframe/cfi_program.h"

namespace stackwalk::internal {

namespace compact_internal {
inline bool FitsInt16(int64_t v) { return v >= INT16_MIN && v <= INT16_MAX; }
}  // namespace compact_internal

template <class Arch>
bool CompileCompactRule(const CfiRow<Arch::kNumRegs>& row, uint32_t ra_column, bool signal_frame,
                        CompactRule* out) {
  using compact_internal::FitsInt16;
  if (signal_frame || row.cfa.is_expression) return false;
  CompactRule rule;
  if (row.cfa.reg == static_cast<uint32_t>(Arch::kSp)) {
    rule.cfa_from_fp = 0;
  } else if (row.cfa.reg == static_cast<uint32_t>(Arch::kFp)) {
    rule.cfa_from_fp = 1;
  } else {
    return false;
  }
  const int64_t cfa_offset = row.cfa.offset;
  if (cfa_offset < INT32_MIN || cfa_offset > INT32_MAX) return false;
  rule.cfa_offset = static_cast<int32_t>(cfa_offset);
  if (ra_column >= static_cast<uint32_t>(Arch::kNumRegs)) return false;
  const RegRule& ra = row.regs[ra_column];
  if (ra.kind == RuleKind::kUndefined) {
    // The outermost frame (_start, a thread's entry): remembering that saves a full lookup.
    rule.end_of_stack = 1;
    rule.valid = 1;
    *out = rule;
    return true;
  }
  if (ra.kind == RuleKind::kOffset && ra.value != 0 && FitsInt16(ra.value)) {
    rule.ra_offset = static_cast<int16_t>(ra.value);
  } else if (ra.kind == RuleKind::kSameValue && static_cast<int>(ra_column) == Arch::kLr) {
    rule.ra_offset = 0;  // the return address is still in the link register
  } else {
    return false;
  }
  if constexpr (Arch::kLr >= 0) {
    if (static_cast<int>(ra_column) != Arch::kLr) return false;
    rule.lr_offset = rule.ra_offset;
  }
  const RegRule& fp = row.regs[Arch::kFp];
  if (fp.kind == RuleKind::kOffset && fp.value != 0 && FitsInt16(fp.value)) {
    rule.fp_offset = static_cast<int16_t>(fp.value);
  } else if (fp.kind != RuleKind::kSameValue) {
    return false;
  }
  rule.valid = 1;
  *out = rule;
  return true;
}

template <class Arch, class Memory>
StepResult ApplyCompactRule(const CompactRule& rule, Regs<Arch>& regs, Memory& memory,
                            WalkState* state) {
  if (rule.end_of_stack) return StepResult::kEndOfStack;
  const int base = rule.cfa_from_fp ? Arch::kFp : Arch::kSp;
  if (!regs.Has(base) || !regs.Has(Arch::kSp)) return StepResult::kInvalidFrame;
  const uint64_t sp = regs.sp();
  const uint64_t cfa = regs.Get(base) + static_cast<uint64_t>(static_cast<int64_t>(rule.cfa_offset));
  if (!ValidClimb(memory, cfa, sp, state)) return StepResult::kInvalidFrame;
  uint64_t ra;
  if (rule.ra_offset != 0) {
    if (!ReadWord<Arch>(memory, cfa + static_cast<int64_t>(rule.ra_offset), &ra)) {
      return StepResult::kUnreadable;
    }
  } else {
    if constexpr (Arch::kLr >= 0) {
      if (!regs.Has(Arch::kLr)) return StepResult::kInvalidFrame;
      ra = regs.Get(Arch::kLr);
    } else {
      return StepResult::kInvalidFrame;
    }
  }
  bool has_fp = regs.Has(Arch::kFp);
  uint64_t fp = regs.Get(Arch::kFp);
  if (rule.fp_offset != 0) {
    if (!ReadWord<Arch>(memory, cfa + static_cast<int64_t>(rule.fp_offset), &fp)) {
      return StepResult::kUnreadable;
    }
    has_fp = true;
  }
  uint64_t lr_value = ra;
  ra = Arch::ReportedPc(ra);
  if (ra == 0) return StepResult::kEndOfStack;
  if (cfa == sp && ra == regs.pc()) return StepResult::kInvalidFrame;
  bool has_lr = false;
  uint64_t lr = 0;
  if constexpr (Arch::kLr >= 0) {
    has_lr = rule.lr_offset != 0 || regs.Has(Arch::kLr);
    lr = rule.lr_offset != 0 ? lr_value : regs.Get(Arch::kLr);
  }
  regs.ForgetAll();
  regs.set_pc(ra);
  regs.set_sp(cfa);
  if (has_fp) regs.set_fp(fp);
  if constexpr (Arch::kLr >= 0) {
    if (has_lr) regs.Set(Arch::kLr, lr);
  }
  state->pc_is_exact = false;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_
