// CompileEhabiRule(): an EHABI opcode stream as a CompactRule when it is one (most are: vsp
// adjustments and pops of r4-r15, VFP and iWMMXt pops as plain adjustments, optionally after
// `vsp = r7` or `vsp = r11` as the first opcode), or the RuleError saying why not. Streams that
// pop sp or r0-r3, or use spare opcodes, stay interpreted. (A "refuse to unwind" entry is no
// stream: ExidxStep caches it as CompactRule::EndOfStack().) See core/compact_rule.h for the
// formulas.
#ifndef STACKWALK_SRC_EXIDX_EHABI_COMPACT_RULE_H_
#define STACKWALK_SRC_EXIDX_EHABI_COMPACT_RULE_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "exidx/exidx_table.h"

namespace stackwalk::internal {

// Writes *out only when it returns RuleError::kNone.
inline RuleError CompileEhabiRule(EhabiOpcodes ops, CompactRule* out) {
  int64_t delta = 0;  // vsp - base
  int64_t slot[16];
  bool popped[16] = {};
  CompactRule rule = CompactRule::Cfa(CompactRule::Kind::kCfaSp, 0);
  uint8_t op;
  bool first = true;
  auto pop = [&](int reg) {
    if (reg == 13 || popped[reg]) return false;
    popped[reg] = true;
    slot[reg] = delta;
    delta += 4;
    return true;
  };
  for (int count = 0; ops.Next(&op); ++count, first = false) {
    if (count > 64) return RuleError::kTooLong;
    if ((op & 0xc0) == 0x00) {
      delta += ((op & 0x3f) << 2) + 4;
    } else if ((op & 0xc0) == 0x40) {
      delta -= ((op & 0x3f) << 2) + 4;
    } else if ((op & 0xf0) == 0x80) {
      uint8_t low;
      if (!ops.Next(&low)) return RuleError::kTruncated;
      uint32_t mask = ((op & 0x0fu) << 8) | low;
      if (mask == 0) return RuleError::kOpcode;  // "refuse to unwind" mid-stream
      for (int i = 0; i < 12; ++i) {
        if ((mask & (1u << i)) && !pop(4 + i)) return RuleError::kOpcode;
      }
    } else if (op == 0x97 || op == 0x9b) {  // vsp = r7 / r11, as the first opcode only
      if (!first) return RuleError::kOpcode;
      rule.kind = op == 0x97 ? CompactRule::Kind::kCfaR7 : CompactRule::Kind::kCfaFp;
    } else if ((op & 0xf0) == 0xa0) {
      for (int reg = 4; reg <= 4 + (op & 0x07); ++reg) {
        if (!pop(reg)) return RuleError::kOpcode;
      }
      if ((op & 0x08) && !pop(14)) return RuleError::kOpcode;
    } else if (op == 0xb0) {
      break;
    } else if (op == 0xb2) {
      uint64_t value;
      if (!ops.NextUleb128(&value)) return RuleError::kTruncated;
      delta += 0x204 + static_cast<int64_t>(value << 2);
    } else if (op == 0xb3 || op == 0xc6 || op == 0xc8 || op == 0xc9) {
      uint8_t sc;
      if (!ops.Next(&sc)) return RuleError::kTruncated;
      delta += 8 * ((sc & 0x0f) + 1) + (op == 0xb3 ? 4 : 0);
    } else if ((op & 0xf8) == 0xb8) {
      delta += 8 * ((op & 0x07) + 1) + 4;
    } else if ((op & 0xf8) == 0xc0 && op != 0xc6 && op != 0xc7) {
      delta += 8 * ((op & 0x07) + 1);
    } else if ((op & 0xf8) == 0xd0) {
      delta += 8 * ((op & 0x07) + 1);
    } else {
      return RuleError::kOpcode;  // pops of r0-r3 or wCGR, vsp = other registers, spare opcodes
    }
    if (delta < -65536 || delta > INT32_MAX / 2) return RuleError::kOffsetRange;
  }
  auto relative = [&](int reg, int16_t* field) {
    if (!popped[reg]) return true;
    int64_t off = slot[reg] - delta;  // negative: the slot lies below the caller's sp
    if (off >= 0 || off < INT16_MIN) return false;
    *field = static_cast<int16_t>(off);
    return true;
  };
  rule.cfa_offset = static_cast<int32_t>(delta);
  if (!relative(15, &rule.ra_offset)) return RuleError::kOffsetRange;
  if (!popped[15] && !relative(14, &rule.ra_offset)) return RuleError::kOffsetRange;  // pc = lr
  if (!relative(14, &rule.lr_offset) || !relative(11, &rule.fp_offset) ||
      !relative(7, &rule.r7_offset)) {
    return RuleError::kOffsetRange;
  }
  *out = rule;
  return RuleError::kNone;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EXIDX_EHABI_COMPACT_RULE_H_
