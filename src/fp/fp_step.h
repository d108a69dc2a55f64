// FpStep(): one frame-pointer step, from a frame's registers to its caller's.
//
// x86_64 and aarch64 keep a frame record {saved frame pointer, return address} at the frame
// pointer (psABI §3.6.2, AAPCS64 §6.2.3):
//   (pc, sp, fp) = ([fp + w], fp + 2w, [fp])        with w the word size
// 32-bit ARM has no single layout; see fp_step_arm.h.
//
// Every step is validated: the record must be aligned, inside a known stack region, at or above
// the stack pointer (which the previous step set just above the previous record, so the walk
// climbs strictly and always ends) and within kMaxFrameSize of it, except for one move between
// regions (off a sigaltstack).
#ifndef STACKWALK_SRC_FP_FP_STEP_H_
#define STACKWALK_SRC_FP_FP_STEP_H_

#include <cstdint>

#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"

namespace stackwalk::internal {

// State carried from one step to the next within one walk.
struct FpWalkState {
  int region_switches = 0;
};

inline constexpr uint64_t kMaxFrameSize = uint64_t{4} << 20;
inline constexpr int kMaxRegionSwitches = 1;

// Checks a frame pointer before its record is read: at or above the frame's stack pointer and
// within kMaxFrameSize of it (so the walk climbs strictly and always ends), unless it moves to
// another known region (off a sigaltstack), which a walk may do once.
template <class Memory>
inline bool ValidFramePointer(Memory& memory, uint64_t fp, uint64_t sp, FpWalkState* state) {
  int fp_region = memory.RegionOf(fp);
  int sp_region = memory.RegionOf(sp);
  // A step sets sp just above the record it read, which is the region's end when the record
  // was the topmost one (as the kernel's frame record at the top of a sigaltstack is).
  if (sp_region < 0 && sp != 0) sp_region = memory.RegionOf(sp - 1);
  if (fp_region < 0 || sp_region < 0 || fp_region == sp_region) {
    // Unknown regions are refused by the read that follows.
    return fp >= sp && fp - sp <= kMaxFrameSize;
  }
  return state->region_switches++ < kMaxRegionSwitches;
}

// The caller's frame pointer is checked by the step that uses it, so that a frame whose record
// holds a valid return address is reported even when the caller keeps no frame pointer.
template <class Arch, class Memory>
StepResult FpStepRecordAtFp(Regs<Arch>& regs, Memory& memory, FpWalkState* state) {
  constexpr uint64_t w = Arch::kWordSize;
  uint64_t fp = regs.fp();
  if (!regs.Has(Arch::kFp) || fp == 0) return StepResult::kEndOfStack;
  if (fp % Arch::kFrameRecordAlign != 0) return StepResult::kInvalidFrame;
  if (regs.Has(Arch::kSp) && !ValidFramePointer(memory, fp, regs.sp(), state)) {
    return StepResult::kInvalidFrame;
  }
  uint64_t next_fp, ra;
  if (!ReadWord<Arch>(memory, fp, &next_fp) || !ReadWord<Arch>(memory, fp + w, &ra)) {
    return StepResult::kUnreadable;
  }
  ra = Arch::ReportedPc(ra);
  if (ra == 0) return StepResult::kEndOfStack;
  regs.ForgetAll();  // only pc, sp and fp are known in the caller
  regs.set_pc(ra);
  regs.set_sp(fp + 2 * w);
  regs.set_fp(next_fp);
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FP_FP_STEP_H_
