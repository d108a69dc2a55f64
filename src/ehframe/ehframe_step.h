// EhFrameStep(): one step with .eh_frame CFI: find the FDE for the PC (pc - 1 for a return
// address), run its CFA program to that PC and apply the row; the kernel's signal trampolines
// are recognised where their CFI is missing or incomplete.
//
// A Locator answers three questions, all async-signal-safe:
//   bool Find(uint64_t pc, EhFrameSection* out) const;   // the .eh_frame tables covering pc
//   bool FindDebugFrame(uint64_t pc, EhFrameSection* out, uint64_t* fde) const;
//                                                         // a loaded .debug_frame FDE for pc
//   bool ReadCode(uint64_t pc, void* out, size_t n) const; // n code bytes at pc, if readable
#ifndef STACKWALK_SRC_EHFRAME_EHFRAME_STEP_H_
#define STACKWALK_SRC_EHFRAME_EHFRAME_STEP_H_

#include <cstdint>
#include <type_traits>

#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"
#include "ehframe/cfi_executor.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/cfi_program.h"
#include "ehframe/compact_rule_step.h"
#include "ehframe/eh_frame_hdr.h"
#include "ehframe/sigreturn.h"

namespace stackwalk::internal {

// When `compiled` is not null and the step succeeds (or ends the stack) with a row, the row
// compiled to a CompactRule is written there for the caller to cache, or why it is none
// (RuleError::kNotCompiled when the step reached no row or failed).
template <class Arch, class Memory, class Locator>
StepResult EhFrameStep(Regs<Arch>& regs, Memory& memory, const Locator& locator,
                       WalkState* state, CompiledRule* compiled = nullptr) {
  const uint64_t pc = regs.pc();
  const uint64_t lookup = CfiLookupPc(pc, state->pc_is_exact);
  EhFrameSection section;
  bool found = locator.Find(lookup, &section);
  if (!found || (section.in_vdso && std::is_same_v<Arch, ArchAarch64>)) {
    // No tables, or AArch64's vDSO: a sigreturn trampoline is told by its instructions.
    StepResult r = SigreturnStep(regs, memory, locator, state);
    if (r != StepResult::kNoRule) return r;
  }
  uint64_t fde_addr = found ? FindFde(section, lookup) : 0;
  Fde fde;
  bool covered = fde_addr != 0 && ParseFde(section, fde_addr, &fde) == CfiError::kOk &&
                 lookup >= fde.pc_begin && lookup < fde.pc_end;
  if (!covered) {
    // .debug_frame tables the user loaded, then a trampoline without any tables.
    if (!locator.FindDebugFrame(lookup, &section, &fde_addr) ||
        ParseFde(section, fde_addr, &fde) != CfiError::kOk || lookup < fde.pc_begin ||
        lookup >= fde.pc_end) {
      return found ? SigreturnStep(regs, memory, locator, state) : StepResult::kNoRule;
    }
  }
  CfiRow<Arch::kNumRegs> row;
  if (RunCfaProgram(section, fde, lookup, &row) != CfiError::kOk) return StepResult::kInvalidFrame;
  StepResult r =
      ApplyCfiRow<Arch>(row, fde.cie.ra_column, fde.cie.signal_frame, regs, memory, state);
  if ((r == StepResult::kOk || r == StepResult::kEndOfStack) && compiled != nullptr) {
    compiled->error =
        CompileCompactRule<Arch>(row, fde.cie.ra_column, fde.cie.signal_frame, &compiled->rule);
  }
  return r;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_EHFRAME_STEP_H_
