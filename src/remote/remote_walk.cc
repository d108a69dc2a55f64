#include "remote/remote_walk.h"

#include <elf.h>

#include "absl/strings/str_cat.h"
#include "core/arch_aarch64.h"
#include "core/arch_arm.h"
#include "core/arch_x86_64.h"
#include "core/walk_state.h"
#include "ehframe/ehframe_step.h"
#include "exidx/exidx_step.h"
#include "fp/fp_step.h"
#include "fp/fp_step_arm.h"
#include "remote/remote_memory.h"
#include "remote/snapshot_memory.h"
#include "remote/target_modules.h"

namespace stackwalk::internal {
namespace {

// One step of an x86_64 or aarch64 frame: CFI (.eh_frame, .debug_frame, a sigreturn
// trampoline), else the frame record at fp.
template <class Arch, class Memory>
StepResult TargetStep(Regs<Arch>& regs, Memory& memory, const TargetModules& modules,
                      WalkState* state, FrameTrust* trust) {
  *trust = FrameTrust::kCfi;
  StepResult r = EhFrameStep(regs, memory, modules, state);
  if (r != StepResult::kNoRule) return r;
  *trust = FrameTrust::kFramePointer;
  return FpStepRecordAtFp(regs, memory, modules, state);
}

// One step of an arm32 frame: the .ARM.exidx entry, else the arm32 frame layouts, as the arm32
// in-process walk's AUTO takes them (walk/walk_ehabi-inl.inc).
template <class Memory>
StepResult TargetStep(Regs<ArchArm>& regs, Memory& memory, const TargetModules& modules,
                      WalkState* state, FrameTrust* trust) {
  *trust = FrameTrust::kEhabi;
  StepResult r = ExidxStep(regs, memory, modules, state);
  if (r != StepResult::kNoRule) return r;
  *trust = FrameTrust::kFramePointer;
  return FpStepArm(regs, memory, modules, state);
}

template <class Arch, class Memory>
TargetWalk Walk(const Regs<Arch>& start, Memory& memory, const TargetModules& modules,
                int max_frames) {
  TargetWalk walk;
  Regs<Arch> regs = start;
  WalkState state;  // pc_is_exact: the first frame is the interrupted PC
  if (max_frames <= 0 || !regs.Has(Arch::kPc)) return walk;
  walk.frames.push_back({Arch::ReportedPc(regs.pc()), true, FrameTrust::kContext});
  while (static_cast<int>(walk.frames.size()) < max_frames) {
    FrameTrust trust;
    StepResult r = TargetStep(regs, memory, modules, &state, &trust);
    // A table step's caller must be code, as in-process (CallerInCode): a wrong rule reads a
    // data word as the return address.
    if (r == StepResult::kOk && trust != FrameTrust::kFramePointer) {
      const uint64_t pc = Arch::ReportedPc(regs.pc());
      if (!((!state.pc_is_exact && modules.IsCode(pc - 1)) || modules.IsCode(pc))) {
        r = StepResult::kInvalidFrame;
      }
    }
    if (r != StepResult::kOk) {
      walk.end = r;
      return walk;
    }
    walk.frames.push_back({Arch::ReportedPc(regs.pc()), state.pc_is_exact, trust});
  }
  walk.end = StepResult::kOk;
  return walk;
}

// A snapshot's registers (DWARF numbering, `mask` says which are known) as Arch's.
template <class Arch>
bool SnapshotWalkAs(const std::vector<uint64_t>& registers, uint64_t mask, SnapshotMemory& memory,
                    const TargetModules& modules, int max_frames, TargetWalk* walk,
                    std::string* error) {
  if (registers.size() != static_cast<size_t>(Arch::kNumRegs)) {
    *error = absl::StrCat("the snapshot holds ", registers.size(), " registers, ", Arch::kName,
                          " has ", Arch::kNumRegs);
    return false;
  }
  Regs<Arch> regs;
  for (int i = 0; i < Arch::kNumRegs; ++i) {
    if ((mask >> i) & 1) regs.Set(i, registers[i]);
  }
  *walk = Walk(regs, memory, modules, max_frames);
  return true;
}

}  // namespace

TargetWalk WalkTarget(const NativeRegs& regs, RemoteMemory& memory, const TargetModules& modules,
                      int max_frames) {
  return Walk(regs, memory, modules, max_frames);
}

bool WalkSnapshotThread(uint32_t machine, uint32_t word_size,
                        const std::vector<uint64_t>& registers, uint64_t mask,
                        SnapshotMemory& memory, const TargetModules& modules, int max_frames,
                        TargetWalk* walk, std::string* error) {
  if (machine == EM_X86_64 && word_size == 8) {
    return SnapshotWalkAs<ArchX86_64>(registers, mask, memory, modules, max_frames, walk, error);
  }
  if (machine == EM_AARCH64 && word_size == 8) {
    return SnapshotWalkAs<ArchAarch64>(registers, mask, memory, modules, max_frames, walk, error);
  }
  if (machine == EM_ARM && word_size == 4) {
    return SnapshotWalkAs<ArchArm>(registers, mask, memory, modules, max_frames, walk, error);
  }
  *error = absl::StrCat("a snapshot of ELF machine ", machine, " with ", word_size,
                        "-byte words: stackwalk-dump unwinds x86_64, aarch64 and arm32 ones");
  return false;
}

const char* TrustName(FrameTrust trust) {
  switch (trust) {
    case FrameTrust::kContext:
      return "context";
    case FrameTrust::kCfi:
      return "cfi";
    case FrameTrust::kEhabi:
      return "ehabi";
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
