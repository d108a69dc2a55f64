#include "core/native_walk.h"

#include <new>

#include "fp/fp_step.h"
#include "stackwalk/stackwalk.h"

#if defined(STACKWALK_ARCH_ARM)
#include "fp/fp_step_arm.h"
#else
#include "ehframe/ehframe_step.h"
#endif

namespace stackwalk::internal {
namespace {

// A walk that strictly climbs the stack ends by itself; this only bounds the work should a
// method not climb (signal frames may move anywhere).
constexpr int kMaxSteps = 1 << 16;

}  // namespace

StepEnv::~StepEnv() {
  if (reader_ != nullptr) reader_->~Reader();
}

const ModuleSnapshot* StepEnv::Snapshot() const {
  if (reader_ == nullptr) reader_ = new (reader_storage_) ModuleMap::Reader(ModuleMap::Global());
  return reader_->snapshot();
}

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
#if defined(STACKWALK_ARCH_X86_64) || defined(STACKWALK_ARCH_AARCH64)
      return 0;
#else
      return STACKWALK_ERROR_METHOD_NOT_BUILT;
#endif
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

StepResult NativeStep(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                      WalkState* state) {
#if defined(STACKWALK_ARCH_ARM)
  (void)method;  // the frame-pointer chain until the EHABI unwinder lands
  return FpStepArm(regs, memory, env.code(), state);
#else
  switch (method) {
    case STACKWALK_FP:
      return FpStepRecordAtFp(regs, memory, state);
    case STACKWALK_EHFRAME:
      return EhFrameStep(regs, memory, env.locator(), state);
    case STACKWALK_AUTO: {
      // CFI where it exists; the frame-pointer record for code without any (JIT, hand-written
      // assembly), which the frame-pointer step validates like any other.
      StepResult r = EhFrameStep(regs, memory, env.locator(), state);
      if (r != StepResult::kNoRule) return r;
      return FpStepRecordAtFp(regs, memory, state);
    }
    default:
      return StepResult::kNoRule;
  }
#endif
}

bool InitStackFor(const NativeRegs& regs, StackMemory* memory) {
  return memory->InitForCurrentThread(regs.sp());
}

int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip) {
  StepEnv env;
  WalkState state;
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
    if (NativeStep(method, regs, memory, env, &state) != StepResult::kOk) break;
    emit(regs.pc());
  }
  return n;
}

}  // namespace stackwalk::internal
