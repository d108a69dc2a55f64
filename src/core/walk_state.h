// WalkState: what one walk carries from step to step, whatever the method, and the climb check
// every method applies to the stack addresses it moves to.
#ifndef STACKWALK_SRC_CORE_WALK_STATE_H_
#define STACKWALK_SRC_CORE_WALK_STATE_H_

#include <cstdint>

namespace stackwalk::internal {

// State carried from one step to the next within one walk.
struct WalkState {
  int region_switches = 0;
  // The frame's PC is exact (the first frame, or the frame a signal interrupted) rather than a
  // return address, so rules are looked up at pc, not pc - 1.
  bool pc_is_exact = true;
};

// The address a frame's unwind rule is looked up at, and cached under: a return address is one
// past its call, so the call's own row is at pc - 1 (CFI) or, Thumb bit clear, pc - 2 (EHABI, the
// smallest instruction). Every lookup and every cache key must agree.
inline constexpr uint64_t CfiLookupPc(uint64_t pc, bool pc_is_exact) {
  return pc_is_exact ? pc : pc - 1;
}
inline constexpr uint64_t EhabiLookupPc(uint64_t pc, bool pc_is_exact) {
  const uint64_t address = pc & ~uint64_t{1};
  return pc_is_exact ? address : address - 2;
}

inline constexpr uint64_t kMaxFrameSize = uint64_t{4} << 20;
inline constexpr int kMaxRegionSwitches = 1;

// Checks an address a step moves the walk to (a frame pointer before its record is read, a
// CFA): at or above the frame's stack pointer and within kMaxFrameSize of it, so the walk
// climbs and always ends, unless it moves to another known region (off a sigaltstack), which a
// walk may do once.
template <class Memory>
inline bool ValidClimb(Memory& memory, uint64_t fp, uint64_t sp, WalkState* state) {
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

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_WALK_STATE_H_
