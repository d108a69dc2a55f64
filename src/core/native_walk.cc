#include "core/native_walk.h"

#include <new>

#include "fp/fp_step.h"
#include "stackwalk/stackwalk.h"

#if defined(STACKWALK_ARCH_ARM)
#include "fp/fp_step_arm.h"
#else
#include "core/rule_cache.h"
#include "ehframe/compact_rule_step.h"
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

namespace {

// Writes PCs into the caller's array, dropping the first `skip`.
struct Emitter {
  void** pcs;
  int max;
  int skip;
  int n = 0;
  bool full() const { return n >= max; }
  void Emit(uint64_t pc) {
    if (skip > 0) {
      --skip;
    } else {
      pcs[n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(NativeArch::ReportedPc(pc)));
    }
  }
};

// The generic loop: any method, one NativeStep at a time.
void StepLoop(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
              WalkState& state, Emitter& out) {
  for (int steps = 0; !out.full() && steps < kMaxSteps; ++steps) {
    if (NativeStep(method, regs, memory, env, &state) != StepResult::kOk) return;
    out.Emit(regs.pc());
  }
}

#if !defined(STACKWALK_ARCH_ARM)

// Frame records walked in a tight loop while they stay in the region holding sp; anything
// else (a region switch, damage, the end) goes to the validated step.
void FpWalk(NativeRegs& regs, StackMemory& memory, const StepEnv& env, WalkState& state,
            Emitter& out) {
  int region = memory.RegionOf(regs.sp());
  if (region >= 0 && regs.Has(NativeArch::kFp)) {
    const uint64_t hi = memory.region(region).hi;
    uint64_t pc = regs.pc(), sp = regs.sp(), fp = regs.fp();
    while (!out.full()) {
      if (fp < sp || fp - sp > kMaxFrameSize || (fp & 7) != 0 || fp > hi - 16) break;
      const uint64_t* record = reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(fp));
      uint64_t ra = NativeArch::ReportedPc(record[1]);
      if (ra == 0) break;
      out.Emit(ra);
      pc = ra;
      sp = fp + 16;
      fp = record[0];
      state.pc_is_exact = false;
    }
    regs.ForgetAll();
    regs.set_pc(pc);
    regs.set_sp(sp);
    regs.set_fp(fp);
  }
  StepLoop(STACKWALK_FP, regs, memory, env, state, out);
}

// Cached compact rules applied in a tight loop while every rule hits and every address stays in
// the region holding sp. Returns kOk when the next frame needs the full step (a miss, a region
// switch, anything unusual), kEndOfStack when a cached rule says the stack ends.
StepResult CachedSteps(const RuleCache& cache, uint64_t generation, NativeRegs& regs,
                       StackMemory& memory, WalkState& state, Emitter& out, bool* used) {
  const int region = memory.RegionOf(regs.sp());
  if (region < 0 || !regs.Has(NativeArch::kSp)) return StepResult::kOk;
  const uint64_t lo = memory.region(region).lo, hi = memory.region(region).hi;
  uint64_t pc = regs.pc(), sp = regs.sp(), fp = regs.fp();
  bool has_fp = regs.Has(NativeArch::kFp);
  [[maybe_unused]] uint64_t lr = 0;
  [[maybe_unused]] bool has_lr = false;
  if constexpr (NativeArch::kLr >= 0) {
    has_lr = regs.Has(NativeArch::kLr);
    lr = regs.Get(NativeArch::kLr);
  }
  bool exact = state.pc_is_exact;
  StepResult result = StepResult::kOk;
  auto in_region = [&](uint64_t addr) { return addr >= lo && addr <= hi - 8; };
  while (!out.full()) {
    const CompactRule* rule = cache.Find(exact ? pc : pc - 1, generation);
    if (rule == nullptr) break;
    if (rule->end_of_stack) {
      result = StepResult::kEndOfStack;
      break;
    }
    if (rule->cfa_from_fp && !has_fp) break;
    const uint64_t cfa = (rule->cfa_from_fp ? fp : sp) + static_cast<int64_t>(rule->cfa_offset);
    if (cfa < sp || cfa - sp > kMaxFrameSize) break;
    uint64_t ra;
    if (rule->ra_offset != 0) {
      const uint64_t at = cfa + static_cast<int64_t>(rule->ra_offset);
      if (!in_region(at)) break;
      ra = *reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(at));
    } else {
      if constexpr (NativeArch::kLr >= 0) {
        if (!has_lr) break;
        ra = lr;
      } else {
        break;
      }
    }
    uint64_t next_fp = fp;
    if (rule->fp_offset != 0) {
      const uint64_t at = cfa + static_cast<int64_t>(rule->fp_offset);
      if (!in_region(at)) break;
      next_fp = *reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(at));
    }
    const uint64_t next_pc = NativeArch::ReportedPc(ra);
    if (next_pc == 0 || (cfa == sp && next_pc == pc)) break;  // the full step decides
    if constexpr (NativeArch::kLr >= 0) {
      if (rule->lr_offset != 0) {
        lr = ra;
        has_lr = true;
      }
    }
    *used = true;
    fp = next_fp;
    has_fp = has_fp || rule->fp_offset != 0;
    sp = cfa;
    pc = next_pc;
    exact = false;
    out.Emit(pc);
  }
  if (*used) {
    regs.ForgetAll();
    regs.set_pc(pc);
    regs.set_sp(sp);
    if (has_fp) regs.set_fp(fp);
    if constexpr (NativeArch::kLr >= 0) {
      if (has_lr) regs.Set(NativeArch::kLr, lr);
    }
    state.pc_is_exact = exact;
  }
  return result;
}

// CFI through the thread's compact-rule cache (sets *used_compact when a cached rule served).
// Returns why the walk stopped.
StepResult CfiLoop(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                   WalkState& state, Emitter& out, RuleCache* cache, bool* used_compact) {
  const uint64_t generation = ModuleMap::Global().rebuild_count();
  for (int steps = 0; !out.full() && steps < kMaxSteps; ++steps) {
    if (cache != nullptr) {
      StepResult r = CachedSteps(*cache, generation, regs, memory, state, out, used_compact);
      if (r != StepResult::kOk) return r;
      if (out.full()) break;
    }
    const uint64_t key = state.pc_is_exact ? regs.pc() : regs.pc() - 1;
    CompactRule compiled;
    StepResult r =
        EhFrameStep(regs, memory, env.locator(), &state, cache != nullptr ? &compiled : nullptr);
    if ((r == StepResult::kOk || r == StepResult::kEndOfStack) && cache != nullptr &&
        compiled.valid) {
      cache->Insert(key, generation, compiled);
    } else if (r == StepResult::kNoRule && method == STACKWALK_AUTO) {
      r = FpStepRecordAtFp(regs, memory, &state);
    }
    if (r != StepResult::kOk) return r;
    out.Emit(regs.pc());
  }
  return StepResult::kOk;
}

#endif  // !STACKWALK_ARCH_ARM

}  // namespace

int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip) {
  StepEnv env;
  WalkState state;
  Emitter out{pcs, max, skip};
  out.Emit(regs.pc());
#if defined(STACKWALK_ARCH_ARM)
  StepLoop(method, regs, memory, env, state, out);
#else
  if (method == STACKWALK_FP) {
    FpWalk(regs, memory, env, state, out);
    return out.n;
  }
  const NativeRegs start_regs = regs;
  const WalkState start_state = state;
  const Emitter start_out = out;
  RuleCache* cache = RuleCache::Acquire();
  bool used_compact = false;
  StepResult r = CfiLoop(method, regs, memory, env, state, out, cache, &used_compact);
  if (cache != nullptr) cache->Release();
  if (used_compact && (r == StepResult::kInvalidFrame || r == StepResult::kUnreadable)) {
    // A compact rule forgot a register some later frame needed: walk again in full.
    Emitter full = start_out;
    NativeRegs full_regs = start_regs;
    WalkState full_state = start_state;
    bool unused = false;
    CfiLoop(method, full_regs, memory, env, full_state, full, nullptr, &unused);
    if (full.n > out.n) out = full;
    regs = full_regs;
  }
#endif
  return out.n;
}

}  // namespace stackwalk::internal
