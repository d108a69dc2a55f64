// ApplyCfiRow(): moves a register file from a frame to its caller with one row of the unwind
// table (DWARF 5 §6.4.1): compute the CFA, recover each register by its rule, take the return
// address column as the caller's PC and the CFA as the caller's stack pointer.
#ifndef STACKWALK_SRC_EHFRAME_CFI_EXECUTOR_H_
#define STACKWALK_SRC_EHFRAME_CFI_EXECUTOR_H_

#include <cstdint>

#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"
#include "ehframe/cfi_program.h"
#include "ehframe/dwarf_expression.h"

namespace stackwalk::internal {

// `signal_frame` is the CIE's 'S': the caller's PC is then exact. Registers without a rule keep
// their values (callee-saved by the ABI), as libgcc and LLVM libunwind treat them.
template <class Arch, class Memory>
StepResult ApplyCfiRow(const CfiRow<Arch::kNumRegs>& row, uint32_t ra_column, bool signal_frame,
                       Regs<Arch>& regs, Memory& memory, WalkState* state) {
  uint64_t cfa;
  if (row.cfa.is_expression) {
    if (!EvaluateExpression<Arch>(row.cfa.expr, row.cfa.expr_size, regs, memory, false, 0, &cfa)) {
      return StepResult::kInvalidFrame;
    }
  } else {
    if (row.cfa.reg >= static_cast<uint32_t>(Arch::kNumRegs) ||
        !regs.Has(static_cast<int>(row.cfa.reg))) {
      return StepResult::kInvalidFrame;
    }
    cfa = regs.Get(static_cast<int>(row.cfa.reg)) + static_cast<uint64_t>(row.cfa.offset);
  }
  if (Arch::kWordSize == 4) cfa &= 0xffffffffu;
  // A signal frame's CFA is wherever the interrupted code's stack was; ordinary frames climb.
  if (!signal_frame && regs.Has(Arch::kSp) && !ValidClimb(memory, cfa, regs.sp(), state)) {
    return StepResult::kInvalidFrame;
  }
  if (ra_column >= static_cast<uint32_t>(Arch::kNumRegs) ||
      row.regs[ra_column].kind == RuleKind::kUndefined) {
    return StepResult::kEndOfStack;  // e.g. _start and thread entry points: .cfi_undefined rip
  }

  Regs<Arch> caller = regs;
  for (int reg = 0; reg < Arch::kNumRegs; ++reg) {
    const RegRule& rule = row.regs[reg];
    uint64_t value;
    switch (rule.kind) {
      case RuleKind::kSameValue:
        continue;
      case RuleKind::kUndefined:
        caller.Forget(reg);
        continue;
      case RuleKind::kOffset:
        if (!ReadWord<Arch>(memory, cfa + static_cast<uint64_t>(rule.value), &value)) {
          return StepResult::kUnreadable;
        }
        break;
      case RuleKind::kValOffset:
        value = cfa + static_cast<uint64_t>(rule.value);
        break;
      case RuleKind::kRegister: {
        int from = static_cast<int>(rule.value);
        if (from < 0 || from >= Arch::kNumRegs || !regs.Has(from)) {
          caller.Forget(reg);
          continue;
        }
        value = regs.Get(from);
        break;
      }
      case RuleKind::kExpression: {
        uint64_t addr;
        if (!EvaluateExpression<Arch>(static_cast<uint64_t>(rule.value), rule.expr_size, regs,
                                      memory, true, cfa, &addr) ||
            !ReadWord<Arch>(memory, addr, &value)) {
          return StepResult::kUnreadable;
        }
        break;
      }
      case RuleKind::kValExpression:
        if (!EvaluateExpression<Arch>(static_cast<uint64_t>(rule.value), rule.expr_size, regs,
                                      memory, true, cfa, &value)) {
          return StepResult::kInvalidFrame;
        }
        break;
      default:
        return StepResult::kInvalidFrame;
    }
    caller.Set(reg, value);
  }
  if (!caller.Has(static_cast<int>(ra_column))) return StepResult::kEndOfStack;
  uint64_t ra = Arch::ReportedPc(caller.Get(static_cast<int>(ra_column)));
  if (ra == 0) return StepResult::kEndOfStack;
  // A frame that neither moves the stack nor changes the PC would repeat forever.
  if (!signal_frame && cfa == regs.sp() && ra == regs.pc()) return StepResult::kInvalidFrame;
  caller.set_sp(cfa);
  caller.set_pc(ra);
  state->pc_is_exact = signal_frame;
  regs = caller;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_CFI_EXECUTOR_H_
