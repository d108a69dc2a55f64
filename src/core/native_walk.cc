#include "core/native_walk.h"

#include "stackwalk/stackwalk.h"

#if defined(STACKWALK_ARCH_ARM)
#include "fp/fp_step_arm.h"
#endif

namespace stackwalk::internal {
namespace {

// A walk that strictly climbs the stack ends by itself; this only bounds the work should a
// future method not climb.
constexpr int kMaxSteps = 1 << 16;

}  // namespace

int CheckMethod(int method) {
  switch (method) {
    case STACKWALK_AUTO:
    case STACKWALK_FP:
#if defined(STACKWALK_ARCH_UNSUPPORTED)
      return STACKWALK_ERROR_METHOD_UNAVAILABLE;
#else
      return 0;
#endif
    case STACKWALK_EHFRAME:
      return STACKWALK_ERROR_METHOD_NOT_BUILT;
    case STACKWALK_EXIDX:
#if defined(STACKWALK_ARCH_ARM)
      return STACKWALK_ERROR_METHOD_NOT_BUILT;
#else
      return STACKWALK_ERROR_METHOD_UNAVAILABLE;
#endif
    default:
      return STACKWALK_ERROR_METHOD_UNAVAILABLE;
  }
}

StepResult NativeStep(int method, NativeRegs& regs, StackMemory& memory, const CodeMap& code,
                      FpWalkState* state) {
  (void)code;
  switch (method) {
    case STACKWALK_AUTO:  // the frame-pointer chain until the CFI unwinders land
    case STACKWALK_FP:
#if defined(STACKWALK_ARCH_ARM)
      return FpStepArm(regs, memory, code, state);
#else
      return FpStepRecordAtFp(regs, memory, state);
#endif
    default:
      return StepResult::kNoRule;
  }
}

bool InitStackFor(const NativeRegs& regs, StackMemory* memory) {
  return memory->InitForCurrentThread(regs.sp());
}

int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip) {
#if defined(STACKWALK_ARCH_ARM)
  ModuleMap::Reader modules(ModuleMap::Global());
  CodeMap code(modules.snapshot());
#else
  CodeMap code(nullptr);  // unused off arm32: frame records there need no code check
#endif
  FpWalkState state;
  int n = 0;
  auto emit = [&](uint64_t pc) {
    if (skip > 0) {
      --skip;
    } else {
      pcs[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(NativeArch::ReportedPc(pc)));
    }
  };
  emit(regs.pc());
  for (int steps = 0; n < max && steps < kMaxSteps; ++steps) {
    if (NativeStep(method, regs, memory, code, &state) != StepResult::kOk) break;
    emit(regs.pc());
  }
  return n;
}

}  // namespace stackwalk::internal
