// FpStepArm(): one frame-pointer step on 32-bit ARM, where compilers lay frames out three ways:
//   (a) clang, ARM and Thumb:   push {fp|r7, lr}; mov fp|r7, sp      -> [fp] = caller fp, [fp+4] = lr
//   (b) GCC, ARM (r11):         push {fp, lr}; add fp, sp, #4        -> [fp] = lr, [fp-4] = caller fp
//   (c) GCC, Thumb (r7):        push {r7, lr}; sub sp, #n; add r7, sp, #0
//                               -> r7 points below the locals; {caller r7, lr} sits n bytes above
// The frame pointer register is r11 in ARM code and r7 in Thumb code (bit 0 of the PC); the
// other one is callee-saved and carried through unchanged. Layouts (a) and (b) cannot both
// validate, since [fp] cannot be both a stack and a code address. Layout (c) is found by a
// bounded upward scan: first for a record whose saved r7 is the address just above it (a GCC
// Thumb caller), then for the first {stack address above it, code address} pair. That is a
// heuristic, which is why the EHABI unwinder is the one to use for GCC Thumb code.
#ifndef STACKWALK_SRC_FP_FP_STEP_ARM_H_
#define STACKWALK_SRC_FP_FP_STEP_ARM_H_

#include <cstdint>

#include "core/arch_arm.h"
#include "fp/fp_step.h"

namespace stackwalk::internal {

inline constexpr uint64_t kMaxThumbRecordScan = 1024;  // bytes above r7 searched for layout (c)

// Checks a candidate record {caller fp, lr} at `record` for the frame whose fp is `fp`.
template <class Memory, class CodeMap>
bool ArmRecordMatches(Memory& memory, const CodeMap& code, uint64_t record, uint64_t fp,
                      uint64_t* next_fp, uint64_t* lr, WalkState* state) {
  uint64_t saved_fp, saved_lr;
  if (!ReadWord<ArchArm>(memory, record, &saved_fp) ||
      !ReadWord<ArchArm>(memory, record + 4, &saved_lr)) {
    return false;
  }
  if (saved_lr == 0 || !code.IsCode(ArchArm::ReportedPc(saved_lr))) return false;
  if (saved_fp != 0) {
    // The caller's fp lies above both this fp and the record: with layout (b) the record starts
    // below fp, and comparing with it alone would let a record that points at itself loop.
    uint64_t floor = (record > fp ? record : fp) + 4;
    WalkState trial = *state;
    if (saved_fp % 4 != 0 || !ValidClimb(memory, saved_fp, floor, &trial)) return false;
    *state = trial;
  }
  *next_fp = saved_fp;
  *lr = saved_lr;
  return true;
}

template <class Memory, class CodeMap>
StepResult FpStepArm(Regs<ArchArm>& regs, Memory& memory, const CodeMap& code,
                     WalkState* state) {
  const uint64_t pc = regs.pc();
  const int fp_reg = ArchArm::FpRegFor(pc);
  if (!regs.Has(fp_reg) || regs.Get(fp_reg) == 0) return StepResult::kEndOfStack;
  const uint64_t fp = regs.Get(fp_reg);
  if (fp % 4 != 0) return StepResult::kInvalidFrame;
  if (memory.RegionOf(fp) < 0) return StepResult::kUnreadable;

  uint64_t next_fp = 0, lr = 0, caller_sp = 0;
  bool found = false;
  if (!ArchArm::IsThumb(pc)) {
    if (ArmRecordMatches(memory, code, fp - 4, fp, &next_fp, &lr, state)) {
      found = true;  // (b): the record {caller fp, lr} starts at fp - 4
      caller_sp = fp + 4;
    } else if (ArmRecordMatches(memory, code, fp, fp, &next_fp, &lr, state)) {
      found = true;  // (a)
      caller_sp = fp + 8;
    }
  } else {
    // (c) proper: a GCC Thumb caller's r7 is its stack pointer after its prologue, which is
    // where this frame began, just above the record. Matching that exactly skips the stale
    // {stack address, return address} pairs that dead locals below the record often hold.
    for (uint64_t off = 0; off < kMaxThumbRecordScan && !found; off += 4) {
      uint64_t saved_r7;
      if (!ReadWord<ArchArm>(memory, fp + off, &saved_r7)) break;
      if (saved_r7 == fp + off + 8 &&
          ArmRecordMatches(memory, code, fp + off, fp, &next_fp, &lr, state)) {
        found = true;
        caller_sp = fp + off + 8;
      }
    }
    // (a), then the first plausible pair: callers framed another way (clang, ARM code, or no
    // frame pointer at all).
    for (uint64_t off = 0; off < kMaxThumbRecordScan && !found; off += 4) {
      if (ArmRecordMatches(memory, code, fp + off, fp, &next_fp, &lr, state)) {
        found = true;
        caller_sp = fp + off + 8;
      }
    }
  }
  if (!found) return StepResult::kInvalidFrame;

  uint64_t other_reg = fp_reg == ArchArm::kThumbFp ? ArchArm::kArmFp : ArchArm::kThumbFp;
  bool keep_other = regs.Has(other_reg);
  uint64_t other = regs.Get(other_reg);
  regs.ForgetAll();
  if (keep_other) regs.Set(other_reg, other);
  regs.Set(fp_reg, next_fp);
  regs.set_sp(caller_sp);
  state->pc_is_exact = false;
  regs.set_pc(lr);  // keeps the Thumb bit: it says which register frames the caller
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FP_FP_STEP_ARM_H_
