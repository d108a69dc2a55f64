// The parts of the native walk every architecture family shares: StepEnv, the generic step loop,
// the PC emitter and WalkToArray(). The family's own file (walk_config.h picks it) adds
// CheckMethod(), NativeStep() and the two loops WalkToArray() runs, FpLoop() and TableLoop().
#include "walk/native_walk.h"

#include <atomic>
#include <new>

#include "core/coarse_clock.h"
#include "core/dl_find_object.h"
#include "core/proc_maps.h"
#include "core/rule_cache.h"
#include "stackwalk/stackwalk.h"
#include "walk/walk_config.h"

namespace stackwalk::internal {
namespace {

// A walk that strictly climbs the stack ends by itself; this only bounds the work should a
// method not climb (signal frames may move anywhere).
constexpr int kMaxSteps = 1 << 16;

// Claims a slot of `ranges` of its own (a signal handler interrupting this on the same thread
// claims another) and writes the tag last, so that a reader on this thread sees the old range or
// none.
template <class Ranges, class Fill>
void Remember(Ranges& ranges, uint64_t generation, Fill fill) {
  const unsigned slot = __atomic_fetch_add(&ranges.next, 1u, __ATOMIC_RELAXED);
  auto& r = ranges.range[slot % Ranges::kCount];
  r.tag = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fill(r);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  r.tag = generation + 1;
}

void RememberCode(uint64_t lo, uint64_t hi, uint64_t generation) {
  Remember(t_last_code, generation, [&](LastCodeRange& r) {
    r.inverted_lo = ~lo;
    r.span = hi - lo;
  });
}

// The ranges the calling thread's last /proc/self/maps reads found to hold no code (a
// non-executable mapping, or the unmapped gap around the address), so that a walk through code
// without frame pointers, whose frame-pointer register points at stack words holding heap
// pointers, does not read the maps text (~0.3 ms for clang's ~150 lines) at each such word. A
// range is trusted for kNotCodeNs only, and for one module map generation: a JIT may make a
// data mapping executable (mprotect) without any loaded object changing. The bounds are kept
// inverted (~lo, ~hi): static TLS is a root of the leak checker's scan, where they stay past
// their time, and a heap's old end lies inside the blocks it grows into, a gap's bounds in the
// large blocks mapped there next.
struct NotCodeRange {
  uint64_t tag;  // the module map generation plus one; 0: empty
  uint64_t inverted_lo;
  uint64_t inverted_hi;
  uint64_t until_ns;  // CLOCK_MONOTONIC_COARSE
};
struct NotCodeRanges {
  // Static TLS, of which a dlopen'ed libstackwalk has little: 136 bytes. Two slots read the maps
  // twice as often as four in clang (1,932 against 960 times).
  static constexpr int kCount = 4;
  NotCodeRange range[kCount];
  unsigned next;
};
constexpr uint64_t kNotCodeNs = 100 * 1000 * 1000;
__attribute__((tls_model("initial-exec"))) thread_local NotCodeRanges t_not_code;

// A signal handler on this thread may rewrite a slot between the reads: the tag is read again
// after the range, and a slot whose tag changed is not trusted.
// now_ns 0 (no clock): nothing is trusted, since no range could ever expire.
bool RememberedNotCode(uint64_t pc, uint64_t generation, uint64_t now_ns) {
  if (now_ns == 0) return false;
  for (const NotCodeRange& r : t_not_code.range) {
    const uint64_t tag = r.tag;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const uint64_t lo = ~r.inverted_lo, hi = ~r.inverted_hi, until_ns = r.until_ns;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (tag == generation + 1 && r.tag == tag && pc - lo < hi - lo && now_ns < until_ns) return true;
  }
  return false;
}

void RememberNotCode(uint64_t lo, uint64_t hi, uint64_t generation, uint64_t now_ns) {
  if (now_ns == 0) return;
  Remember(t_not_code, generation, [&](NotCodeRange& r) {
    r.inverted_lo = ~lo;
    r.inverted_hi = ~hi;
    r.until_ns = now_ns + kNotCodeNs;
  });
}

}  // namespace

__attribute__((tls_model("initial-exec"))) thread_local LastCodeRanges t_last_code;

StepEnv::~StepEnv() {
  if (reader_ != nullptr) reader_->~Reader();
}

bool StepEnv::IsCodeSlow(uint64_t pc) const {
  const uint64_t generation = Generation();
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
  // Loaded since the snapshot: glibc knows the object, without a lock, and CodeMap counts all of
  // it as code (glibc knows objects, not segments). Remembered like a segment: a preloaded leak
  // checker does not see dlopen, so a library loaded since the last rebuild (python's extension
  // modules) would otherwise be searched for, twice, at every walk through it.
  GlibcObject found;
  if (snapshot != nullptr && FindObjectByGlibc(pc, &found)) {
    RememberCode(found.map_start, found.map_end, generation);
    return true;
  }
  if (snapshot == nullptr && CodeMap(snapshot).IsCode(pc)) return true;
  // Executable memory outside every loaded object (JIT code; qemu-user's signal trampoline):
  // one /proc/self/maps read, remembered (and a range found to hold no code remembered for a
  // while: t_not_code). Values no user mapping can hold are refused first.
  if (pc < 4096 || pc >= (uint64_t{1} << 48)) return false;
  const uint64_t now_ns = CoarseNowNs();
  if (RememberedNotCode(pc, generation, now_ns)) return false;
  Mapping mapping;
  AddressRange gap;
  if (!FindMapping(pc, &mapping, &gap)) {
    if (!gap.empty()) RememberNotCode(gap.lo, gap.hi, generation, now_ns);
    return false;
  }
  if (!mapping.executable) {
    RememberNotCode(mapping.range.lo, mapping.range.hi, generation, now_ns);
    return false;
  }
  RememberCode(mapping.range.lo, mapping.range.hi, generation);
  return true;
}

namespace {
// The remembered code range of generation tag - 1 holding `pc`, as a span; span 0 if none. A
// signal handler on this thread may rewrite a slot between the reads (Remember): the tag is read
// again after the range, and a slot whose tag changed is not used.
CodeSpan RememberedCodeSpan(uint64_t pc, uint64_t tag) {
  for (const LastCodeRange& r : t_last_code.range) {
    const uint64_t before = r.tag;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const uint64_t lo = ~r.inverted_lo, span = r.span;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (before == tag && r.tag == tag && pc - lo < span) return CodeSpan{lo, span};
  }
  return CodeSpan{0, 0};
}
}  // namespace

__attribute__((noinline)) CodeSpan StepEnv::ReturnAddressSpan(uint64_t ra) const {
  const uint64_t tag = Generation() + 1;
  const uint64_t call = ra - 1;
  CodeSpan span = RememberedCodeSpan(call, tag);
  if (span.span != 0) return span;
  if (!IsReturnAddress(ra, false)) return CodeSpan{0, 0};
  span = RememberedCodeSpan(call, tag);  // the range the check may have remembered
  return span.span != 0 ? span : CodeSpan{call, 1};  // else this return address alone
}

const ModuleSnapshot* StepEnv::Snapshot() const {
  if (reader_ == nullptr) reader_ = new (reader_storage_) ModuleMap::Reader(ModuleMap::Global());
  return reader_->snapshot();
}

bool InitStackFor(const NativeRegs& regs, StackMemory* memory) {
  return memory->InitForCurrentThread(regs.sp());
}

namespace {

// A table step's caller must be code: a wrong rule (a damaged table, a sample where the rules do
// not hold) reads a data word as the return address, and the walk ends there instead.
bool CallerInCode(const NativeRegs& regs, const WalkState& state, const StepEnv& env) {
  return env.IsReturnAddress(regs.pc(), state.pc_is_exact);
}

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

}  // namespace
}  // namespace stackwalk::internal

// CheckMethod(), NativeStep(), FpLoop() and TableLoop() of the native architecture family.
#include STACKWALK_WALK_INL

namespace stackwalk::internal {

int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip, bool pc_is_exact) {
  StepEnv env;
  WalkState state;
  state.pc_is_exact = pc_is_exact;
  Emitter out{pcs, max, skip};
  out.Emit(regs.pc());
  if (method == STACKWALK_FP) {
    FpLoop(method, regs, memory, env, state, out);
    return out.n;
  }
  const NativeRegs start_regs = regs;
  const WalkState start_state = state;
  const Emitter start_out = out;
  RuleCache* cache = RuleCache::Acquire();
  bool used_compact = false;
  StepResult r = TableLoop(method, regs, memory, env, state, out, cache, &used_compact);
  const bool retry =
      used_compact && (r == StepResult::kInvalidFrame || r == StepResult::kUnreadable);
  if (cache != nullptr) {
    if (retry) cache->CountFullRetry();
    cache->Release();
  }
  if (retry) {
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
