// CompileCompactRule() turns a CFI row into a CompactRule when the row is one (most are). See
// core/compact_rule.h for the formulas and the step that applies one.
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

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_COMPACT_RULE_STEP_H_
