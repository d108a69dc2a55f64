// WalkTarget(): one thread of another process unwound from its registers with the in-process
// unwinders' own steps (EhFrameStep over the target's tables, FpStepRecordAtFp where no table
// covers a PC), over RemoteMemory and TargetModules. No caches: each step is the full, validated
// one, and every read goes through RemoteMemory's bounds.
// WalkSnapshotThread(): the same walk of a crash snapshot's thread, over its stack bytes, in the
// architecture the snapshot names (x86_64, aarch64 or arm32 on any host): the steps are templates
// over the architecture's registers (core/regs.h), so each is the in-process interpreter itself,
// instantiated for the target; arm32 steps with .ARM.exidx (ExidxStep), then its frame layouts.
#ifndef STACKWALK_SRC_REMOTE_REMOTE_WALK_H_
#define STACKWALK_SRC_REMOTE_REMOTE_WALK_H_

#include <cstdint>
#include <string>
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
  kEhabi,    // an ARM EHABI (.ARM.exidx) step from the frame below
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
// A snapshot's registers (`registers` in the DWARF numbering of ELF `machine`, `mask` bit i:
// register i known) walked over its stack bytes. False, with *error, for an architecture not
// unwound here or a register count that is not the architecture's.
bool WalkSnapshotThread(uint32_t machine, uint32_t word_size,
                        const std::vector<uint64_t>& registers, uint64_t mask,
                        SnapshotMemory& memory, const TargetModules& modules, int max_frames,
                        TargetWalk* walk, std::string* error);

const char* TrustName(FrameTrust trust);
// "end of stack", "gave up: ..." for a walk's end.
const char* EndName(StepResult end);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_REMOTE_WALK_H_
