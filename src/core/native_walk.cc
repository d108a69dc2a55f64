#include "core/native_walk.h"

#include <atomic>
#include <new>

#include "fp/fp_step.h"
#include "stackwalk/stackwalk.h"

#include "core/proc_maps.h"
#include "core/rule_cache.h"
#if defined(STACKWALK_ARCH_ARM)
#include "exidx/exidx_step.h"
#include "fp/fp_step_arm.h"
#else
#include "ehframe/compact_rule_step.h"
#include "ehframe/ehframe_step.h"
#endif

namespace stackwalk::internal {
namespace {

// A walk that strictly climbs the stack ends by itself; this only bounds the work should a
// method not climb (signal frames may move anywhere).
constexpr int kMaxSteps = 1 << 16;

// A stack word at an address the walk has bounds-checked. Through memcpy: a hostile context's sp,
// and so a CFA from it, need not be aligned (the same single load on x86_64 and aarch64).
inline uint64_t LoadStackWord(uint64_t at) {
  uint64_t word;
  __builtin_memcpy(&word, reinterpret_cast<const void*>(static_cast<uintptr_t>(at)), sizeof(word));
  return word;
}

}  // namespace

StepEnv::~StepEnv() {
  if (reader_ != nullptr) reader_->~Reader();
}

namespace {

// The executable segment the calling thread's last IsCode() found, tagged with the module map
// generation it came from. Written generation last, so that a signal handler interrupting the
// update on this thread sees either the old range or none.
struct LastCodeRange {
  uint64_t generation = ~uint64_t{0};
  uint64_t lo = 0;
  uint64_t hi = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local LastCodeRange t_last_code;

}  // namespace

static void RememberCode(uint64_t lo, uint64_t hi, uint64_t generation) {
  LastCodeRange& last = t_last_code;
  last.generation = ~uint64_t{0};
  std::atomic_signal_fence(std::memory_order_seq_cst);
  last.lo = lo;
  last.hi = hi;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  last.generation = generation;
}

bool StepEnv::IsCode(uint64_t pc) const {
  const uint64_t generation = ModuleMap::Global().rebuild_count();
  const LastCodeRange& last = t_last_code;
  if (last.generation == generation && pc >= last.lo && pc < last.hi) return true;
  const ModuleSnapshot* snapshot = Snapshot();
  const Module* m = snapshot != nullptr ? snapshot->Find(pc) : nullptr;
  if (m != nullptr) {
    // A known module: its executable segments only.
    for (int i = 0; i < m->exec_count; ++i) {
      if (!m->exec[i].Contains(pc)) continue;
      if (snapshot->generation() == generation) RememberCode(m->exec[i].lo, m->exec[i].hi, generation);
      return true;
    }
    return false;
  }
  // Loaded since the snapshot: glibc knows, without a lock.
  if (CodeMap(snapshot).IsCode(pc)) return true;
  // Executable memory outside every loaded object (JIT code; qemu-user's signal trampoline):
  // one /proc/self/maps read, remembered. Values no user mapping can hold are refused first.
  if (pc < 4096 || pc >= (uint64_t{1} << 48)) return false;
  Mapping mapping;
  if (!FindMapping(pc, &mapping) || !mapping.executable) return false;
  RememberCode(mapping.range.lo, mapping.range.hi, generation);
  return true;
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
      return 0;
#else
      return STACKWALK_ERROR_METHOD_UNAVAILABLE;
#endif
    default:
      return STACKWALK_ERROR_METHOD_UNAVAILABLE;
  }
}

namespace {

// A table step's caller must be code: a wrong rule (a damaged table, a sample where the rules do
// not hold) reads a data word as the return address, and the walk ends there instead.
[[maybe_unused]] bool CallerInCode(const NativeRegs& regs, const WalkState& state,
                                   const StepEnv& env) {
  return env.IsReturnAddress(regs.pc(), state.pc_is_exact);
}

}  // namespace

StepResult NativeStep(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                      WalkState* state) {
#if defined(STACKWALK_ARCH_ARM)
  switch (method) {
    case STACKWALK_FP:
      return FpStepArm(regs, memory, env.code(), state);
    case STACKWALK_EXIDX: {
      StepResult r = ExidxStep(regs, memory, env.exidx_locator(), state);
      if (r == StepResult::kOk && !CallerInCode(regs, *state, env)) return StepResult::kInvalidFrame;
      return r;
    }
    case STACKWALK_AUTO: {
      // The EHABI tables where they cover the PC; the frame-pointer record elsewhere.
      StepResult r = ExidxStep(regs, memory, env.exidx_locator(), state);
      if (r == StepResult::kOk && !CallerInCode(regs, *state, env)) return StepResult::kInvalidFrame;
      if (r != StepResult::kNoRule) return r;
      return FpStepArm(regs, memory, env.code(), state);
    }
    default:
      return StepResult::kNoRule;
  }
#else
  switch (method) {
    case STACKWALK_FP:
      return FpStepRecordAtFp(regs, memory, env, state);
    case STACKWALK_EHFRAME: {
      StepResult r = EhFrameStep(regs, memory, env.locator(), state);
      if (r == StepResult::kOk && !CallerInCode(regs, *state, env)) return StepResult::kInvalidFrame;
      return r;
    }
    case STACKWALK_AUTO: {
      // CFI where it exists; the frame-pointer record for code without any (JIT, hand-written
      // assembly), which the frame-pointer step validates like any other.
      StepResult r = EhFrameStep(regs, memory, env.locator(), state);
      if (r == StepResult::kOk && !CallerInCode(regs, *state, env)) return StepResult::kInvalidFrame;
      if (r != StepResult::kNoRule) return r;
      return FpStepRecordAtFp(regs, memory, env, state);
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

#if defined(STACKWALK_ARCH_ARM)

// EHABI through the thread's compact-rule cache: a cached rule where the entry compiled to one,
// the interpreter otherwise (and the frame-pointer record for code without an entry, in AUTO).
StepResult ExidxLoop(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                     WalkState& state, Emitter& out, RuleCache* cache, bool* used_compact) {
  const uint64_t generation = ModuleMap::Global().rebuild_count();
  for (int steps = 0; !out.full() && steps < kMaxSteps; ++steps) {
    const uint64_t key = EhabiLookupPc(regs.pc(), state.pc_is_exact);
    const CompactRule* rule = cache != nullptr ? cache->Find(key, generation) : nullptr;
    StepResult r;
    if (rule != nullptr) {
      *used_compact = true;
      r = ApplyCompactRule(*rule, regs, memory, &state);
    } else {
      CompactRule compiled;
      r = ExidxStep(regs, memory, env.exidx_locator(), &state,
                    cache != nullptr ? &compiled : nullptr);
      if ((r == StepResult::kOk || r == StepResult::kEndOfStack) && cache != nullptr &&
          compiled.valid) {
        cache->Insert(key, generation, compiled);
      } else if (r == StepResult::kNoRule && method == STACKWALK_AUTO) {
        r = FpStepArm(regs, memory, env.code(), &state);
      }
    }
    if (r != StepResult::kOk) return r;
    if (!CallerInCode(regs, state, env)) return StepResult::kInvalidFrame;
    out.Emit(regs.pc());
  }
  return StepResult::kOk;
}

#else  // !STACKWALK_ARCH_ARM

// Frame records walked in a tight loop while they stay in the region holding sp; anything
// else (a region switch, damage, the end) goes to the validated step.
StepResult Replay(FrameLog& log, int j, NativeRegs& regs, StackMemory& memory, WalkState& state,
                  Emitter& out);

// Frame records walked in a tight loop while they stay in the region holding sp, logged in the
// thread's FrameLog (as the CFI walk's are) so that the next walk from the same frames replays
// them; anything else (a region switch, damage) goes to the validated step.
void FpWalk(NativeRegs& regs, StackMemory& memory, const StepEnv& env, WalkState& state,
            Emitter& out) {
  int region = memory.RegionOf(regs.sp());
  if (region < 0 || !regs.Has(NativeArch::kFp)) {
    StepLoop(STACKWALK_FP, regs, memory, env, state, out);
    return;
  }
  RuleCache* cache = RuleCache::Acquire();
  FrameLog* log = cache != nullptr ? &cache->log() : nullptr;
  const uint64_t lo = memory.region(region).lo, hi = memory.region(region).hi;
  if (log != nullptr) {
    log->BeginWalk(FrameLog::Tag(ModuleMap::Global().rebuild_count(), STACKWALK_FP));
    log->set_walk_region(lo, hi);
  }
  uint64_t pc = regs.pc(), sp = regs.sp(), fp = regs.fp();
  bool exact = state.pc_is_exact;
  bool moved = false;
  bool ended = false;  // the chain ends here by itself (zero or invalid frame pointer)
  while (!out.full()) {
    if (!exact && log != nullptr) {
      int j = log->Match(pc, sp, fp, true);
      if (j >= 0) {
        regs.ForgetAll();
        regs.set_pc(pc);
        regs.set_sp(sp);
        regs.set_fp(fp);
        state.pc_is_exact = false;
        StepResult r = Replay(*log, j, regs, memory, state, out);
        if (r != StepResult::kNoRule) {
          cache->Release();
          return;
        }
        pc = regs.pc();
        sp = regs.sp();
        fp = regs.fp();
        continue;
      }
    }
    FrameLog::Frame logged{pc, sp, fp, 0, 0, 0, 0,
                           FrameLog::kHasFp | (exact ? FrameLog::kExact : 0u), 0};
    // fp - sp wraps around when fp < sp: one compare covers both bounds.
    if (fp - sp > kMaxFrameSize || (fp & 7) != 0 || fp < lo || fp > hi - 16) {
      // Decided by fp, sp and the region alone, all of which a replay checks.
      ended = true;
      if (log != nullptr) {
        logged.flags |= FrameLog::kEndOfStack | FrameLog::kCfaFromFp;
        log->Record(logged);
      }
      break;
    }
    const uint64_t* record = reinterpret_cast<const uint64_t*>(static_cast<uintptr_t>(fp));
    const uint64_t raw_ra = record[1];
    const uint64_t ra = NativeArch::ReportedPc(raw_ra);
    logged.ra_addr = fp + 8;
    logged.ra_val = raw_ra;
    if (ra == 0) {
      ended = true;
      if (log != nullptr) {
        // Rests on the zero in that slot, at an address fp gave.
        logged.flags |= FrameLog::kEndOfStack | FrameLog::kCfaFromFp;
        logged.fp_addr = logged.ra_addr;
        logged.fp_val = logged.ra_val;
        log->Record(logged);
      }
      break;
    }
    // Not code: the validated step ends the walk here (a replay only matches logged frames, whose
    // return addresses passed this check).
    if (!env.IsReturnAddress(ra, false)) break;
    logged.fp_addr = fp;
    logged.fp_val = record[0];
    logged.flags |= FrameLog::kCfaFromFp | FrameLog::kRestoresFp;
    logged.fp_slot_offset = -8;
    if (log != nullptr) log->Record(logged);
    if (out.skip > 0) {
      --out.skip;
    } else {
      out.pcs[out.n++] = reinterpret_cast<void*>(static_cast<uintptr_t>(ra));
    }
    pc = ra;
    sp = fp + 16;
    fp = record[0];
    exact = false;
    moved = true;
  }
  if (moved) {
    state.pc_is_exact = false;
    regs.ForgetAll();
    regs.set_pc(pc);
    regs.set_sp(sp);
    regs.set_fp(fp);
  }
  const int before = out.n;
  StepLoop(STACKWALK_FP, regs, memory, env, state, out);
  if (log != nullptr) {
    // A whole walk that ended in the fast loop, with no other stack region the validated step
    // could have moved to, is the log's next content.
    if (ended && out.n == before && !out.full() && memory.region_count() == 1) {
      log->CommitWalk();
    } else {
      log->Break();
    }
    cache->Release();
  }
}

// Marks that CachedSteps stopped at a frame the thread's FrameLog knows.
constexpr StepResult kLogMatch = StepResult::kNoRule;

// Cached compact rules applied in a tight loop while every rule hits and every address stays in
// the region holding sp, each step recorded in the thread's FrameLog. Returns kOk when the next
// frame needs the full step (a miss, a region switch, anything unusual), kEndOfStack when a
// cached rule says the stack ends, kLogMatch (with *match) at a frame the log can replay from.
StepResult CachedSteps(const RuleCache& cache, const StepEnv& env, FrameLog* log, uint64_t generation,
                       NativeRegs& regs, StackMemory& memory, WalkState& state, Emitter& out,
                       bool* used, int* match) {
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
  bool moved = false;
  StepResult result = StepResult::kOk;
  auto in_region = [&](uint64_t addr) { return addr >= lo && addr <= hi - 8; };
  if (log != nullptr) log->set_walk_region(lo, hi);
  while (!out.full()) {
    if (!exact && log != nullptr) {
      int j = log->Match(pc, sp, fp, has_fp);
      if (j >= 0) {
        *match = j;
        result = kLogMatch;
        break;
      }
    }
    const CompactRule* rule = cache.Find(CfiLookupPc(pc, exact), generation);
    if (rule == nullptr) break;
    FrameLog::Frame logged{pc, sp, fp, 0, 0, 0, 0,
                           (has_fp ? FrameLog::kHasFp : 0u) | (exact ? FrameLog::kExact : 0u), 0};
    if (rule->end_of_stack) {
      if (log != nullptr) {
        logged.flags |= FrameLog::kEndOfStack;
        log->Record(logged);
      }
      result = StepResult::kEndOfStack;
      break;
    }
    if (rule->cfa_from_fp) {
      if (!has_fp) break;
      logged.flags |= FrameLog::kCfaFromFp;
    }
    const uint64_t cfa = (rule->cfa_from_fp ? fp : sp) + static_cast<int64_t>(rule->cfa_offset);
    if (cfa < sp || cfa - sp > kMaxFrameSize) break;
    uint64_t ra;
    if (rule->ra_offset != 0) {
      const uint64_t at = cfa + static_cast<int64_t>(rule->ra_offset);
      if (!in_region(at)) break;
      ra = LoadStackWord(at);
      logged.ra_addr = at;
      logged.ra_val = ra;
    } else {
      if constexpr (NativeArch::kLr >= 0) {
        if (!has_lr) break;
        ra = lr;
        if (log != nullptr) log->Break();  // depends on a register, not a slot
      } else {
        break;
      }
    }
    uint64_t next_fp = fp;
    if (rule->fp_offset != 0) {
      const uint64_t at = cfa + static_cast<int64_t>(rule->fp_offset);
      if (!in_region(at)) break;
      next_fp = LoadStackWord(at);
      logged.fp_addr = at;
      logged.fp_val = next_fp;
      logged.flags |= FrameLog::kRestoresFp;
      logged.fp_slot_offset = static_cast<int32_t>(rule->fp_offset - rule->ra_offset);
    } else {
      logged.fp_addr = logged.ra_addr;  // lets the replay check both slots without a branch
      logged.fp_val = logged.ra_val;
    }
    const uint64_t next_pc = NativeArch::ReportedPc(ra);
    // The full step decides on an end, a step that does not move, and a return address outside
    // code (which it refuses).
    if (next_pc == 0 || (cfa == sp && next_pc == pc) || !env.IsReturnAddress(next_pc, false)) break;
    if constexpr (NativeArch::kLr >= 0) {
      if (rule->lr_offset != 0) {
        lr = ra;
        has_lr = true;
      }
    }
    if (log != nullptr) log->Record(logged);
    *used = true;
    moved = true;
    fp = next_fp;
    has_fp = has_fp || rule->fp_offset != 0;
    sp = cfa;
    pc = next_pc;
    exact = false;
    out.Emit(pc);
  }
  if (moved) {
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

// Replays the log from frame j (where the walk stands): emits each following frame while the
// slots its predecessor read still hold their values. Returns kEndOfStack after the logged
// end, kOk when the output filled up, or kNoRule with regs at the first frame whose slots
// changed, for ordinary steps to continue from.
StepResult Replay(FrameLog& log, int j, NativeRegs& regs, StackMemory& memory, WalkState& state,
                  Emitter& out) {
  const int region = memory.RegionOf(regs.sp());
  // One region, the log's: a second one (a sigaltstack) could take a walk where the log's did
  // not go. It must hold the log's (a walk from a signal context reads only the pages it probed,
  // StackMemory::VerifyPages, which may start above the log's).
  if (region < 0 || memory.region_count() != 1 || memory.region(region).lo > log.region_lo() ||
      memory.region(region).hi != log.region_hi()) {
    log.Invalidate();  // another stack than the log's: never read its slots
    return StepResult::kNoRule;
  }
  // The log's last frame is the end of the stack; every frame before it read two slots.
  constexpr int kLast = FrameLog::kCapacity - 1;
  int k = j;
  StepResult result = StepResult::kNoRule;
  auto unchanged = [&log](int i) {
    const FrameLog::Frame& f = log.frame(i);
    const uint64_t ra = LoadStackWord(f.ra_addr);
    const uint64_t fp = LoadStackWord(f.fp_addr);
    return ((ra ^ f.ra_val) | (fp ^ f.fp_val)) == 0;
  };
  // Frames the caller asked to skip first, through the general emitter.
  while (out.skip > 0 && k < kLast && unchanged(k)) {
    ++k;
    out.Emit(log.frame(k).pc);
  }
  int room = out.max - out.n;
  void** dst = out.pcs + out.n;
  for (; k < kLast && out.skip == 0; ++k) {
    if (room == 0) {
      result = StepResult::kOk;
      break;
    }
    if (!unchanged(k)) break;
    *dst++ = reinterpret_cast<void*>(static_cast<uintptr_t>(log.frame(k + 1).pc));
    --room;
  }
  out.n = out.max - room;
  log.AddReplayed(k - j);
  if (k == kLast) {
    // A frame-pointer walk's end may rest on a slot (a zero return address): still there?
    if (log.frame(kLast).ra_addr == 0 || unchanged(kLast)) {
      log.CommitPrefix(j);
      return StepResult::kEndOfStack;
    }
    result = StepResult::kNoRule;
  }
  // The frame the walk stands at now, with its true fp: the logged one may differ where fp did
  // not matter, so take it from the last restore between the match and here (each restore
  // replaces the one before).
  uint64_t fp = regs.fp();
  bool has_fp = regs.Has(NativeArch::kFp);
  for (int i = k - 1; i >= j; --i) {
    const FrameLog::Frame& f = log.frame(i);
    if (f.flags & FrameLog::kRestoresFp) {
      // The slot, not the logged value: unchecked slots may have changed.
      fp = LoadStackWord(f.ra_addr + static_cast<int64_t>(f.fp_slot_offset));
      has_fp = true;
      break;
    }
  }
  if (result == StepResult::kNoRule) log.Diverged(j, k);
  const FrameLog::Frame& at = log.frame(k);
  regs.ForgetAll();
  regs.set_pc(at.pc);
  regs.set_sp(at.sp);
  if (has_fp) regs.set_fp(fp);
  state.pc_is_exact = false;
  return result;
}

// CFI through the thread's compact-rule cache and frame log (sets *used_compact when cached
// rules or logged frames served). Returns why the walk stopped.
StepResult CfiLoop(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                   WalkState& state, Emitter& out, RuleCache* cache, bool* used_compact) {
  const uint64_t generation = ModuleMap::Global().rebuild_count();
  FrameLog* log = cache != nullptr ? &cache->log() : nullptr;
  if (log != nullptr) log->BeginWalk(FrameLog::Tag(generation, method));
  for (int steps = 0; !out.full() && steps < kMaxSteps; ++steps) {
    if (cache != nullptr) {
      int match = -1;
      StepResult r =
          CachedSteps(*cache, env, log, generation, regs, memory, state, out, used_compact, &match);
      if (r == kLogMatch) {
        *used_compact = true;  // the replay restores pc, sp and fp only: a full retry may need more
        r = Replay(*log, match, regs, memory, state, out);
        if (r != StepResult::kNoRule) return r;
        continue;
      }
      if (r == StepResult::kEndOfStack) {
        if (log != nullptr) log->CommitWalk();
        return r;
      }
      if (out.full()) break;
    }
    if (log != nullptr) log->Break();
    const uint64_t key = CfiLookupPc(regs.pc(), state.pc_is_exact);
    CompactRule compiled;
    StepResult r =
        EhFrameStep(regs, memory, env.locator(), &state, cache != nullptr ? &compiled : nullptr);
    if ((r == StepResult::kOk || r == StepResult::kEndOfStack) && cache != nullptr &&
        compiled.valid) {
      cache->Insert(key, generation, compiled);
    } else if (r == StepResult::kNoRule && method == STACKWALK_AUTO) {
      r = FpStepRecordAtFp(regs, memory, env, &state);
    }
    if (r != StepResult::kOk) return r;
    if (!CallerInCode(regs, state, env)) return StepResult::kInvalidFrame;
    out.Emit(regs.pc());
  }
  return StepResult::kOk;
}

#endif  // STACKWALK_ARCH_ARM

}  // namespace

int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip) {
  StepEnv env;
  WalkState state;
  Emitter out{pcs, max, skip};
  out.Emit(regs.pc());
#if defined(STACKWALK_ARCH_ARM)
  constexpr auto TableLoop = ExidxLoop;  // EHABI on arm32
  if (method == STACKWALK_FP) {
    StepLoop(method, regs, memory, env, state, out);
    return out.n;
  }
#else
  constexpr auto TableLoop = CfiLoop;  // .eh_frame elsewhere
  if (method == STACKWALK_FP) {
    FpWalk(regs, memory, env, state, out);
    return out.n;
  }
#endif
  const NativeRegs start_regs = regs;
  const WalkState start_state = state;
  const Emitter start_out = out;
  RuleCache* cache = RuleCache::Acquire();
  bool used_compact = false;
  StepResult r = TableLoop(method, regs, memory, env, state, out, cache, &used_compact);
  if (cache != nullptr) cache->Release();
  if (used_compact && (r == StepResult::kInvalidFrame || r == StepResult::kUnreadable)) {
    // A compact rule forgot a register some later frame needed: walk again in full.
    Emitter full = start_out;
    NativeRegs full_regs = start_regs;
    WalkState full_state = start_state;
    bool unused = false;
    TableLoop(method, full_regs, memory, env, full_state, full, nullptr, &unused);
    if (full.n > out.n) out = full;
    regs = full_regs;
  }
  return out.n;
}

}  // namespace stackwalk::internal
