// ExidxStep(): one step with the ARM EHABI tables: find the PC's .ARM.exidx entry, run its
// unwind opcodes, take r15 (or r14) as the caller's PC.
//
// Return addresses are looked up 2 bytes back, inside the call instruction (as libgcc does);
// the interrupted frame and a signal frame's caller at their exact PC. A frame whose opcodes
// restore r0-r3 and r15 restores a whole signal context (glibc's ARM restorer is annotated
// `.save {r0-r15}`): its caller's PC is exact, and the saved CPSR's T bit says Thumb.
//
// A Locator answers, async-signal-safely:
//   bool FindExidx(uint64_t pc, ExidxSection* out) const;
#ifndef STACKWALK_SRC_EXIDX_EXIDX_STEP_H_
#define STACKWALK_SRC_EXIDX_EXIDX_STEP_H_

#include <cstdint>

#include "core/arch_arm.h"
#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"
#include "core/compact_rule.h"
#include "exidx/ehabi_compact_rule.h"
#include "exidx/ehabi_interpreter.h"
#include "exidx/exidx_table.h"

namespace stackwalk::internal {

// When `compiled` is not null, the entry compiled to a CompactRule is written there for the
// caller to cache, or why it is none (RuleError::kNotCompiled when the step failed before).
template <class Memory, class Locator>
StepResult ExidxStep(Regs<ArchArm>& regs, Memory& memory, const Locator& locator,
                     WalkState* state, CompiledRule* compiled = nullptr) {
  const uint64_t pc = regs.pc();
  const uint64_t lookup = EhabiLookupPc(pc, state->pc_is_exact);
  ExidxSection section;
  if (!locator.FindExidx(lookup, &section)) return StepResult::kNoRule;
  uint64_t entry, function_start, personality;
  switch (FindExidxEntry(section, lookup, &entry, &function_start)) {
    case ExidxError::kOk:
      break;
    case ExidxError::kNoEntry:
      return StepResult::kNoRule;
    default:
      return StepResult::kInvalidFrame;
  }
  EhabiOpcodes ops;
  switch (DecodeExidxEntry(section, entry, &personality, &ops)) {
    case ExidxError::kOk:
      break;
    case ExidxError::kCantUnwind:
      if (compiled != nullptr) {
        compiled->rule = CompactRule::EndOfStack();
        compiled->error = RuleError::kNone;
      }
      return StepResult::kEndOfStack;  // e.g. _start, thread entry points
    default:
      return StepResult::kInvalidFrame;
  }
  if (compiled != nullptr) compiled->error = CompileEhabiRule(ops, &compiled->rule);
  Regs<ArchArm> caller = regs;
  EhabiResult run = ExecuteEhabi(ops, caller, memory);
  if (run.result != StepResult::kOk) return run.result;
  uint64_t ra;
  if (run.popped_pc) {
    ra = caller.Get(ArchArm::kPc);
  } else if (caller.Has(ArchArm::kLr)) {
    ra = caller.Get(ArchArm::kLr);
  } else {
    return StepResult::kInvalidFrame;
  }
  const bool signal_frame = run.popped_pc && run.popped_r0_r3;
  if (signal_frame) {
    // struct sigcontext keeps arm_cpsr right after arm_pc.
    uint64_t cpsr;
    if (ReadWord<ArchArm>(memory, run.pc_slot + 4, &cpsr) && (cpsr & (1u << 5))) ra |= 1;
  } else if (!ValidClimb(memory, caller.sp(), regs.sp(), state)) {
    return StepResult::kInvalidFrame;
  }
  if ((ra & ~uint64_t{1}) == 0) return StepResult::kEndOfStack;
  if (caller.sp() == regs.sp() && ra == pc) return StepResult::kInvalidFrame;
  caller.set_pc(ra);
  state->pc_is_exact = signal_frame;
  regs = caller;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EXIDX_EXIDX_STEP_H_
