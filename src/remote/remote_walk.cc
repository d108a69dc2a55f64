#include "remote/remote_walk.h"

#include "core/walk_state.h"
#include "ehframe/ehframe_step.h"
#include "fp/fp_step.h"
#include "remote/remote_memory.h"
#include "remote/snapshot_memory.h"
#include "remote/target_modules.h"

namespace stackwalk::internal {
namespace {

template <class Memory>
TargetWalk Walk(const NativeRegs& start, Memory& memory, const TargetModules& modules,
                int max_frames) {
  TargetWalk walk;
  NativeRegs regs = start;
  WalkState state;  // pc_is_exact: the first frame is the interrupted PC
  if (max_frames <= 0 || !regs.Has(NativeArch::kPc)) return walk;
  walk.frames.push_back({NativeArch::ReportedPc(regs.pc()), true, FrameTrust::kContext});
  while (static_cast<int>(walk.frames.size()) < max_frames) {
    FrameTrust trust = FrameTrust::kCfi;
    StepResult r = EhFrameStep(regs, memory, modules, &state);
    // A table step's caller must be code, as in-process (CallerInCode): a wrong rule reads a
    // data word as the return address.
    if (r == StepResult::kOk) {
      const uint64_t pc = regs.pc();
      if (!((!state.pc_is_exact && modules.IsCode(pc - 1)) || modules.IsCode(pc))) {
        r = StepResult::kInvalidFrame;
      }
    } else if (r == StepResult::kNoRule) {
      trust = FrameTrust::kFramePointer;
      r = FpStepRecordAtFp(regs, memory, modules, &state);
    }
    if (r != StepResult::kOk) {
      walk.end = r;
      return walk;
    }
    walk.frames.push_back({NativeArch::ReportedPc(regs.pc()), state.pc_is_exact, trust});
  }
  walk.end = StepResult::kOk;
  return walk;
}

}  // namespace

TargetWalk WalkTarget(const NativeRegs& regs, RemoteMemory& memory, const TargetModules& modules,
                      int max_frames) {
  return Walk(regs, memory, modules, max_frames);
}

TargetWalk WalkTarget(const NativeRegs& regs, SnapshotMemory& memory,
                      const TargetModules& modules, int max_frames) {
  return Walk(regs, memory, modules, max_frames);
}

const char* TrustName(FrameTrust trust) {
  switch (trust) {
    case FrameTrust::kContext:
      return "context";
    case FrameTrust::kCfi:
      return "cfi";
    case FrameTrust::kFramePointer:
      return "fp";
  }
  return "?";
}

const char* EndName(StepResult end) {
  switch (end) {
    case StepResult::kOk:
      return "frame limit reached";
    case StepResult::kEndOfStack:
      return "end of stack";
    case StepResult::kUnreadable:
      return "gave up: a frame lies outside the target's mappings";
    case StepResult::kInvalidFrame:
      return "gave up: invalid frame";
    case StepResult::kNoRule:
      return "gave up: no unwind rule and no frame pointer";
  }
  return "?";
}

}  // namespace stackwalk::internal
