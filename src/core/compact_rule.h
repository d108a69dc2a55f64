// CompactRule: the unwind rows most code has, reduced to what a backtrace needs (the idea of
// framehop's rule enums and nongnu libunwind's fast trace):
//
//   cfa = (sp or fp) + cfa_offset
//   pc  = [cfa + ra_offset]           or, when ra_offset == 0, the link register (AArch64 leaf)
//   fp  = [cfa + fp_offset]           or unchanged when fp_offset == 0
//   lr  = [cfa + lr_offset]           or unchanged when lr_offset == 0 (AArch64)
//   sp  = cfa
// or, with end_of_stack, "this is the outermost frame" (the return address is undefined).
//
// Other registers are forgotten: a later frame whose rule needs one makes the walk restart
// without compact rules.
#ifndef STACKWALK_SRC_CORE_COMPACT_RULE_H_
#define STACKWALK_SRC_CORE_COMPACT_RULE_H_

#include <cstdint>

namespace stackwalk::internal {

struct CompactRule {
  int32_t cfa_offset = 0;
  int16_t ra_offset = 0;
  int16_t fp_offset = 0;
  int16_t lr_offset = 0;
  uint8_t cfa_from_fp = 0;  // 1: cfa = fp + cfa_offset; 0: sp + cfa_offset
  uint8_t end_of_stack = 0; // the return address is undefined: this is the outermost frame
  uint8_t valid = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_COMPACT_RULE_H_
