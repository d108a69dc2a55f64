// CompileCompactRule(): a CFI row as a CompactRule when one of its formulas expresses the row
// (most rows: the CFA from sp or the frame pointer, the return address and fp in slots below
// it), or the RuleError saying why not. See core/compact_rule.h for the formulas and their
// applier.
#ifndef STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_
#define STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "core/regs.h"
#include "ehframe/cfi_program.h"

namespace stackwalk::internal {

namespace compact_internal {
inline bool FitsInt16(int64_t v) { return v >= INT16_MIN && v <= INT16_MAX; }
}  // namespace compact_internal

// Writes *out only when it returns RuleError::kNone.
template <class Arch>
RuleError CompileCompactRule(const CfiRow<Arch::kNumRegs>& row, uint32_t ra_column,
                             bool signal_frame, CompactRule* out) {
  using compact_internal::FitsInt16;
  if (signal_frame) return RuleError::kSignalFrame;
  if (row.cfa.is_expression) return RuleError::kCfaExpression;
  CompactRule::Kind kind;
  if (row.cfa.reg == static_cast<uint32_t>(Arch::kSp)) {
    kind = CompactRule::Kind::kCfaSp;
  } else if (row.cfa.reg == static_cast<uint32_t>(Arch::kFp)) {
    kind = CompactRule::Kind::kCfaFp;
  } else {
    return RuleError::kCfaRegister;
  }
  const int64_t cfa_offset = row.cfa.offset;
  if (cfa_offset < INT32_MIN || cfa_offset > INT32_MAX) return RuleError::kOffsetRange;
  if (ra_column >= static_cast<uint32_t>(Arch::kNumRegs)) return RuleError::kReturnAddressRule;
  const RegRule& ra = row.regs[ra_column];
  if (ra.kind == RuleKind::kUndefined) {
    // The outermost frame (_start, a thread's entry): remembering that saves a full lookup.
    *out = CompactRule::EndOfStack();
    return RuleError::kNone;
  }
  CompactRule rule = CompactRule::Cfa(kind, static_cast<int32_t>(cfa_offset));
  if (ra.kind == RuleKind::kOffset && ra.value != 0) {
    if (!FitsInt16(ra.value)) return RuleError::kOffsetRange;
    rule.ra_offset = static_cast<int16_t>(ra.value);
  } else if (ra.kind == RuleKind::kSameValue && static_cast<int>(ra_column) == Arch::kLr) {
    rule.ra_offset = 0;  // the return address is still in the link register
  } else {
    return RuleError::kReturnAddressRule;
  }
  if constexpr (Arch::kLr >= 0) {
    if (static_cast<int>(ra_column) != Arch::kLr) return RuleError::kReturnAddressRule;
    rule.lr_offset = rule.ra_offset;
  }
  const RegRule& fp = row.regs[Arch::kFp];
  if (fp.kind == RuleKind::kOffset && fp.value != 0) {
    if (!FitsInt16(fp.value)) return RuleError::kOffsetRange;
    rule.fp_offset = static_cast<int16_t>(fp.value);
  } else if (fp.kind != RuleKind::kSameValue) {
    return RuleError::kRegisterRule;
  }
  *out = rule;
  return RuleError::kNone;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_
