// FpStepRecordAtFp(): one frame-pointer step on x86_64 or aarch64, from a frame's registers to
// its caller's. (The x86_64/aarch64 walk runs the same formula in its own logged loop,
// walk/walk_cfi-inl.inc, and takes this step where that loop stops, but for a zero fp or return
// address, where this step would end the walk too.)
//
// x86_64 and aarch64 keep a frame record {saved frame pointer, return address} at the frame
// pointer (psABI §3.6.2, AAPCS64 §6.2.3):
//   (pc, sp, fp) = ([fp + w], fp + 2w, [fp])        with w the word size
// 32-bit ARM has no single layout; see fp_step_arm.h.
//
// Every step is validated: the record must be aligned, inside a known stack region, at or above
// the stack pointer (which the previous step set just above the previous record, so the walk
// climbs strictly and always ends) and within kMaxFrameSize of it, except for one move between
// regions (off a sigaltstack). The return address must lie in code (Code::IsCode(ra - 1)): a
// register that is no frame pointer in code built without them (a sample in libc, the record of
// a callback called from there) can point at stack words that pass every stack check, and the
// walk must end there rather than report a data word as a frame. (`ra` itself may be code where
// ra - 1 is not: a signal trampoline at the start of its own page, as qemu-user maps it.)
#ifndef STACKWALK_SRC_FP_FP_STEP_H_
#define STACKWALK_SRC_FP_FP_STEP_H_

#include <cstdint>

#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"

namespace stackwalk::internal {

// The caller's frame pointer is checked by the step that uses it, so that a frame whose record
// holds a valid return address is reported even when the caller keeps no frame pointer.
template <class Arch, class Memory, class Code>
StepResult FpStepRecordAtFp(Regs<Arch>& regs, Memory& memory, const Code& code, WalkState* state) {
  constexpr uint64_t w = Arch::kWordSize;
  uint64_t fp = regs.fp();
  if (!regs.Has(Arch::kFp) || fp == 0) return StepResult::kEndOfStack;
  if (fp % Arch::kFrameRecordAlign != 0) return StepResult::kInvalidFrame;
  if (regs.Has(Arch::kSp) && !ValidClimb(memory, fp, regs.sp(), state)) {
    return StepResult::kInvalidFrame;
  }
  uint64_t next_fp, ra;
  if (!ReadWord<Arch>(memory, fp, &next_fp) || !ReadWord<Arch>(memory, fp + w, &ra)) {
    return StepResult::kUnreadable;
  }
  ra = Arch::ReportedPc(ra);
  if (ra == 0) return StepResult::kEndOfStack;
  if (!code.IsCode(ra - 1) && !code.IsCode(ra)) return StepResult::kInvalidFrame;
  regs.ForgetAll();  // only pc, sp and fp are known in the caller
  state->pc_is_exact = false;
  regs.set_pc(ra);
  regs.set_sp(fp + 2 * w);
  regs.set_fp(next_fp);
  return StepResult::kOk;
}

// Any nonzero return address counts as code (offline walks of made-up stacks).
struct AnyCode {
  bool IsCode(uint64_t) const { return true; }
};

template <class Arch, class Memory>
StepResult FpStepRecordAtFp(Regs<Arch>& regs, Memory& memory, WalkState* state) {
  return FpStepRecordAtFp(regs, memory, AnyCode(), state);
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FP_FP_STEP_H_
