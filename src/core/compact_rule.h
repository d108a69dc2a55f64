// CompactRule: an unwind row reduced to what a backtrace needs, as one of a few formulas (the
// idea of framehop's UnwindRule enums and nongnu libunwind's fast trace). The kind says how the
// CFA is found, or that there is no caller:
//
//   kEndOfStack   the return address is undefined: this is the outermost frame (no offsets)
//   kCfaSp        cfa = sp + cfa_offset
//   kCfaFp        cfa = fp + cfa_offset     (x86_64 rbp, AArch64 x29, arm32 r11)
//   kCfaR7        cfa = r7 + cfa_offset     (arm32 only: the Thumb frame pointer)
//
// and every kind but kEndOfStack then restores, with slot offsets relative to the CFA:
//
//   pc = [cfa + ra_offset]    or, when ra_offset == 0, the link register (an AArch64/arm32 leaf)
//   fp = [cfa + fp_offset]    or unchanged when fp_offset == 0
//   lr = [cfa + lr_offset]    or unchanged when lr_offset == 0 (AArch64, arm32)
//   r7 = [cfa + r7_offset]    or unchanged when r7_offset == 0 (arm32, whose fp above is r11)
//   sp = cfa
//
// Other registers are forgotten: a later frame whose rule needs one makes the walk restart
// without compact rules. A row or EHABI program no formula expresses is refused by its compiler
// (ehframe/compact_rule_step.h, exidx/ehabi_compact_rule.h) with a RuleError saying why.
//
// ApplyRule() is the one applier: the EHABI walk calls it through ApplyCompactRule() (on a
// register file, through bounds-checked memory), the CFI walk's cached loop directly (on the few
// registers it keeps, through its own stack-region check).
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
  enum class Kind : uint8_t { kEndOfStack, kCfaSp, kCfaFp, kCfaR7 };

  static constexpr CompactRule EndOfStack() { return CompactRule(); }
  // A rule of kind kCfaSp, kCfaFp or kCfaR7; the slot offsets are set by the compiler after.
  static constexpr CompactRule Cfa(Kind kind, int32_t cfa_offset) {
    CompactRule rule;
    rule.kind = kind;
    rule.cfa_offset = cfa_offset;
    return rule;
  }

  Kind kind = Kind::kEndOfStack;
  int32_t cfa_offset = 0;
  int16_t ra_offset = 0;  // 0: the link register
  int16_t fp_offset = 0;  // 0: unchanged, and likewise below
  int16_t lr_offset = 0;
  int16_t r7_offset = 0;
};
static_assert(sizeof(CompactRule) <= 16, "the rule cache keeps 32-byte entries");

// Why a CFI row or an EHABI program is not a CompactRule (it is then stepped in full each time).
enum class RuleError : uint8_t {
  kNone,               // compiled
  kNotCompiled,        // the step did not reach a row or program to compile (it failed)
  kSignalFrame,        // CFI: a signal frame restores the whole context
  kCfaExpression,      // CFI: the CFA is a DWARF expression
  kCfaRegister,        // the CFA is based on a register other than sp or the frame pointer
  kOffsetRange,        // an offset does not fit its field, or a slot is not below the CFA
  kReturnAddressRule,  // the return address is neither in a slot nor still in the link register
  kRegisterRule,       // fp is restored otherwise than from a slot or left unchanged
  kOpcode,             // EHABI: pops sp, r0-r3 or wCGR, sets vsp late or from another register,
                       // pops a register twice, or a spare opcode
  kTruncated,          // EHABI: the stream ends inside an opcode
  kTooLong,            // EHABI: more opcodes than a compiled rule is worth
};

// A rule compiled by a step for its caller to cache, or why there is none.
struct CompiledRule {
  CompactRule rule;
  RuleError error = RuleError::kNotCompiled;
  bool ok() const { return error == RuleError::kNone; }
};

// The registers a compact rule reads and restores. Only the word-sized values of pc, sp and the
// frame pointers matter; lr and r7 are left alone on architectures without them.
struct RuleRegs {
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;
  uint64_t lr = 0;
  uint64_t r7 = 0;
  bool has_fp = false;
  bool has_lr = false;
  bool has_r7 = false;
};

// The stack slots one application read the return address and fp from (0: none), for the walk's
// frame log.
struct RuleSlots {
  uint64_t ra_addr = 0;
  uint64_t ra_val = 0;
  uint64_t fp_addr = 0;
  uint64_t fp_val = 0;
};

// What applying a rule gave.
enum class RuleOutcome : uint8_t {
  kCaller,             // *out holds the caller's registers
  kEndOfStack,         // the rule is kEndOfStack
  kZeroReturnAddress,  // the return address read is 0: the outermost frame
  kMissingRegister,    // the rule needs a register this frame does not know
  kBadClimb,           // the CFA is refused by the stack's climb check
  kUnreadable,         // a slot could not be read
  kNoProgress,         // the caller would be this frame again
};

// Applies `rule` to `in`. `stack` checks and reads the stack:
//   bool Climb(uint64_t cfa, uint64_t sp);        // may the walk move from sp to cfa?
//   bool Load(uint64_t addr, uint64_t* out);      // one word, false if unreadable
// On kCaller, *out holds pc (the return address, as the architecture reports it except on arm32,
// which keeps the Thumb bit), sp, fp, lr, r7 and which of them are known; otherwise *out is
// unchanged. Inline: the CFI walk's hot loop calls it once per frame.
template <class Arch, class Stack>
__attribute__((always_inline)) inline RuleOutcome ApplyRule(const CompactRule& rule,
                                                            const RuleRegs& in, Stack& stack,
                                                            RuleRegs* out, RuleSlots* slots) {
  constexpr bool kArm = std::is_same_v<Arch, ArchArm>;
  using Kind = CompactRule::Kind;
  uint64_t base;
  switch (rule.kind) {
    case Kind::kEndOfStack:
      return RuleOutcome::kEndOfStack;
    case Kind::kCfaSp:
      base = in.sp;
      break;
    case Kind::kCfaFp:
      if (!in.has_fp) return RuleOutcome::kMissingRegister;
      base = in.fp;
      break;
    case Kind::kCfaR7:
      if (!kArm || !in.has_r7) return RuleOutcome::kMissingRegister;
      base = in.r7;
      break;
    default:
      return RuleOutcome::kMissingRegister;
  }
  auto at = [&](uint64_t from, int64_t offset) {
    uint64_t addr = from + static_cast<uint64_t>(offset);
    if constexpr (Arch::kWordSize == 4) addr &= 0xffffffffu;
    return addr;
  };
  const uint64_t cfa = at(base, rule.cfa_offset);
  if (!stack.Climb(cfa, in.sp)) return RuleOutcome::kBadClimb;
  uint64_t ra;
  if (rule.ra_offset != 0) {
    slots->ra_addr = at(cfa, rule.ra_offset);
    if (!stack.Load(slots->ra_addr, &ra)) return RuleOutcome::kUnreadable;
    slots->ra_val = ra;
  } else if constexpr (Arch::kLr >= 0) {
    if (!in.has_lr) return RuleOutcome::kMissingRegister;
    ra = in.lr;
  } else {
    return RuleOutcome::kMissingRegister;
  }
  uint64_t fp = in.fp;
  if (rule.fp_offset != 0) {
    slots->fp_addr = at(cfa, rule.fp_offset);
    if (!stack.Load(slots->fp_addr, &fp)) return RuleOutcome::kUnreadable;
    slots->fp_val = fp;
  }
  [[maybe_unused]] uint64_t lr = in.lr;
  if constexpr (Arch::kLr >= 0) {
    // The CFI compiler always restores lr from the return address's slot: no second read.
    if (rule.lr_offset == rule.ra_offset && rule.ra_offset != 0) {
      lr = ra;
    } else if (rule.lr_offset != 0 && !stack.Load(at(cfa, rule.lr_offset), &lr)) {
      return RuleOutcome::kUnreadable;
    }
  }
  [[maybe_unused]] uint64_t r7 = in.r7;
  if constexpr (kArm) {
    if (rule.r7_offset != 0 && !stack.Load(at(cfa, rule.r7_offset), &r7)) {
      return RuleOutcome::kUnreadable;
    }
  }
  if (Arch::ReportedPc(ra) == 0) return RuleOutcome::kZeroReturnAddress;
  const uint64_t next_pc = kArm ? ra : Arch::ReportedPc(ra);
  if (cfa == in.sp && next_pc == in.pc) return RuleOutcome::kNoProgress;
  out->pc = next_pc;
  out->sp = cfa;
  out->fp = fp;
  out->has_fp = in.has_fp || rule.fp_offset != 0;
  if constexpr (Arch::kLr >= 0) {
    out->lr = lr;
    out->has_lr = in.has_lr || rule.lr_offset != 0;
  }
  if constexpr (kArm) {
    out->r7 = r7;
    out->has_r7 = in.has_r7 || rule.r7_offset != 0;
  }
  return RuleOutcome::kCaller;
}

// One step with a cached rule on a register file, through bounds-checked memory and the walk's
// climb check. The caller's registers other than pc, sp, fp, lr (and r7 on arm32) are forgotten.
template <class Arch, class Memory>
StepResult ApplyCompactRule(const CompactRule& rule, Regs<Arch>& regs, Memory& memory,
                            WalkState* state) {
  constexpr bool kArm = std::is_same_v<Arch, ArchArm>;
  if (rule.kind == CompactRule::Kind::kEndOfStack) return StepResult::kEndOfStack;
  if (!regs.Has(Arch::kSp)) return StepResult::kInvalidFrame;
  RuleRegs in;
  in.pc = regs.pc();
  in.sp = regs.sp();
  in.fp = regs.fp();
  in.has_fp = regs.Has(Arch::kFp);
  if constexpr (Arch::kLr >= 0) {
    in.lr = regs.Get(Arch::kLr);
    in.has_lr = regs.Has(Arch::kLr);
  }
  if constexpr (kArm) {
    in.r7 = regs.Get(ArchArm::kThumbFp);
    in.has_r7 = regs.Has(ArchArm::kThumbFp);
  }
  struct Stack {
    Memory& memory;
    WalkState* state;
    bool Climb(uint64_t cfa, uint64_t sp) { return ValidClimb(memory, cfa, sp, state); }
    bool Load(uint64_t addr, uint64_t* out) { return ReadWord<Arch>(memory, addr, out); }
  } stack{memory, state};
  RuleRegs caller;
  RuleSlots slots;
  switch (ApplyRule<Arch>(rule, in, stack, &caller, &slots)) {
    case RuleOutcome::kCaller:
      break;
    case RuleOutcome::kEndOfStack:
    case RuleOutcome::kZeroReturnAddress:
      return StepResult::kEndOfStack;
    case RuleOutcome::kUnreadable:
      return StepResult::kUnreadable;
    default:
      return StepResult::kInvalidFrame;
  }
  regs.ForgetAll();
  regs.set_pc(caller.pc);
  regs.set_sp(caller.sp);
  if (caller.has_fp) regs.set_fp(caller.fp);
  if constexpr (Arch::kLr >= 0) {
    if (caller.has_lr) regs.Set(Arch::kLr, caller.lr);
  }
  if constexpr (kArm) {
    if (caller.has_r7) regs.Set(ArchArm::kThumbFp, caller.r7);
  }
  state->pc_is_exact = false;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_COMPACT_RULE_H_
