// WalkTarget(): one thread of another process unwound from its registers with the in-process
// unwinders' own steps (EhFrameStep over the target's tables, FpStepRecordAtFp where no table
// covers a PC), over RemoteMemory and TargetModules. No caches: each step is the full, validated
// one, and every read goes through RemoteMemory's bounds.
#ifndef STACKWALK_SRC_REMOTE_REMOTE_WALK_H_
#define STACKWALK_SRC_REMOTE_REMOTE_WALK_H_

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/step_result.h"

namespace stackwalk::internal {

class RemoteMemory;
class SnapshotMemory;
class TargetModules;

// How a frame was found, as crash reporters mark it.
enum class FrameTrust {
  kContext,  // the thread's registers
  kCfi,      // a CFI (or sigreturn) step from the frame below
  kFramePointer,  // the frame record at the frame pointer (no table covered the PC below)
};

struct TargetFrame {
  uint64_t pc = 0;
  bool exact = false;  // the interrupted PC (or a signal frame's), not a return address
  FrameTrust trust = FrameTrust::kContext;
};

struct TargetWalk {
  std::vector<TargetFrame> frames;
  StepResult end = StepResult::kEndOfStack;  // why the walk stopped (kOk: max_frames reached)
};

TargetWalk WalkTarget(const NativeRegs& regs, RemoteMemory& memory, const TargetModules& modules,
                      int max_frames);
// The same walk over a crash snapshot's stack bytes.
TargetWalk WalkTarget(const NativeRegs& regs, SnapshotMemory& memory,
                      const TargetModules& modules, int max_frames);

const char* TrustName(FrameTrust trust);
// "end of stack", "gave up: ..." for a walk's end.
const char* EndName(StepResult end);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_REMOTE_WALK_H_
