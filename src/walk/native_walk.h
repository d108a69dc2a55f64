// The walk of the native architecture shared by the C API, Capture() and Cursor: method
// checks, one step with the chosen method, and the loop that fills a PC array. It sits above
// the unwinders (src/fp, src/ehframe, src/exidx) and picks between them; native_walk.cc holds
// what every architecture family shares, walk_cfi-inl.inc / walk_ehabi-inl.inc the rest
// (walk_config.h chooses).
#ifndef STACKWALK_SRC_WALK_NATIVE_WALK_H_
#define STACKWALK_SRC_WALK_NATIVE_WALK_H_

#include "core/code_map.h"
#include "core/context.h"
#include "core/module_map.h"
#include "core/stack_memory.h"
#include "core/step_result.h"
#include "core/walk_state.h"
#include "ehframe/native_locator.h"
#include "exidx/native_exidx_locator.h"

namespace stackwalk::internal {

// The code ranges the calling thread's last IsCode() lookups found (a module's executable
// segment; for a library loaded since the snapshot, the whole object glibc found), each tagged
// with the module map generation it came from plus one (0: empty). A walk from an allocation hook crosses
// the checker, the program and libc, so one remembered range missed twice a walk; four do not.
// Trivial, so that StepEnv::IsCode reads it inline. The start is kept inverted: static TLS is a
// root of the leak checker's scan, and a range outlives its code (a JIT's unmapped pages, a
// dlclose'd object's segment), where the large blocks mapped next lie.
struct LastCodeRange {
  uint64_t tag;
  uint64_t inverted_lo;  // ~lo
  uint64_t span;         // hi - lo
};
struct LastCodeRanges {
  static constexpr int kCount = 4;
  LastCodeRange range[kCount];
  unsigned next;  // the slot RememberCode claims next (an atomic add: signal handlers nest)
};
extern __attribute__((tls_model("initial-exec"))) thread_local LastCodeRanges t_last_code;

// [lo, lo + span): a range of code, checked as `pc - lo < span`.
struct CodeSpan {
  uint64_t lo;
  uint64_t span;
};

// What a step reads besides the stack: the module snapshot, pinned on first use only, so that
// a frame-pointer walk on x86_64/aarch64 touches it only to check the return addresses of frames
// the thread's frame log does not know yet. One per walk, or per Cursor::Step.
// Signal safety: async-signal-safe.
class StepEnv {
 public:
  StepEnv() = default;
  ~StepEnv();
  StepEnv(const StepEnv&) = delete;
  StepEnv& operator=(const StepEnv&) = delete;

  CodeMap code() const { return CodeMap(Snapshot()); }
  // CodeMap::IsCode(pc), answered first from the calling thread's last code ranges (executable
  // segments, for the current module map generation) without pinning the snapshot: most return
  // addresses of a walk fall in a few modules.
  // The range that answered last in this walk is tried first: consecutive return addresses
  // mostly lie in one module.
  bool IsCode(uint64_t pc) const {
    const uint64_t tag = Generation() + 1;
    const LastCodeRange* hit = last_hit_;
    if (hit != nullptr && hit->tag == tag && pc - ~hit->inverted_lo < hit->span) return true;
    for (const LastCodeRange& last : t_last_code.range) {
      if (last.tag == tag && pc - ~last.inverted_lo < last.span) {
        last_hit_ = &last;
        return true;
      }
    }
    return IsCodeSlow(pc);
  }
  // Whether a caller's pc lies in code: the call before a return address (pc - 1), or pc
  // itself when exact or at the start of a code range (a signal trampoline the handler returns
  // to, which begins a page of its own under qemu-user).
  bool IsReturnAddress(uint64_t pc, bool exact) const {
    return (!exact && IsCode(pc - 1)) || IsCode(pc);
  }
  // Whether `ra` is a return address (IsReturnAddress(ra, false)), as a code range holding its
  // call (ra - 1), for a loop to check the next return addresses against by itself (next - 1 -
  // lo < span): span 0 if `ra` is not one; {ra - 1, 1}, which only `ra` itself passes, if no
  // remembered range holds ra - 1. Valid for this walk: the range is of the walk's generation.
  // Out of line: the loops that call it keep their state in registers.
  CodeSpan ReturnAddressSpan(uint64_t ra) const;
  NativeLocator locator() const { return NativeLocator(Snapshot()); }
  NativeExidxLocator exidx_locator() const { return NativeExidxLocator(Snapshot()); }

 private:
  const ModuleSnapshot* Snapshot() const;
  bool IsCodeSlow(uint64_t pc) const;
  // The module map generation, read once per walk: the remembered ranges are tagged with it.
  uint64_t Generation() const {
    if (!have_generation_) {
      generation_ = ModuleMap::Global().rebuild_count();
      have_generation_ = true;
    }
    return generation_;
  }
  mutable const LastCodeRange* last_hit_ = nullptr;  // one of t_last_code's, this thread's
  mutable bool have_generation_ = false;
  mutable uint64_t generation_ = 0;

  mutable ModuleMap::Reader* reader_ = nullptr;
  alignas(ModuleMap::Reader) mutable unsigned char reader_storage_[sizeof(ModuleMap::Reader)];
};

// 0 if `method` (a stackwalk_method value) can capture here, else a STACKWALK_ERROR_* code.
// Signal safety: async-signal-safe.
int CheckMethod(int method);

// One step with a method that passed CheckMethod().
// Signal safety: async-signal-safe.
StepResult NativeStep(int method, NativeRegs& regs, StackMemory& memory, const StepEnv& env,
                      WalkState* state);

// Writes regs.pc() and then the PC of each caller into pcs[0..max), dropping the first `skip`.
// `pc_is_exact`: regs.pc() is where the frame stands (a capture's own, an interrupted one), not a
// return address. Returns how many it wrote. Signal safety: async-signal-safe.
int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip, bool pc_is_exact = true);

// Sets up the stack regions for a walk of the calling thread from `regs`.
// Signal safety: async-signal-safe.
bool InitStackFor(const NativeRegs& regs, StackMemory* memory);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_WALK_NATIVE_WALK_H_
