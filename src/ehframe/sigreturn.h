// SigreturnStep(): recognises the kernel's signal-return trampoline by its instructions and
// continues into the interrupted frame from the ucontext_t the kernel saved, as libgcc's
// MD_FALLBACK_FRAME_STATE_FOR does. Used where CFI is missing (qemu-user's trampoline page) or
// incomplete (the AArch64 vDSO's describes only the frame record, losing the interrupted PC).
//
//   x86_64  __restore_rt:          mov $15, %rax; syscall      ucontext at sp (rt_sigframe
//                                                              after the popped pretcode)
//   aarch64 __kernel_rt_sigreturn: mov x8, #139; svc #0        ucontext at sp + 128 (after
//                                                              the siginfo)
#ifndef STACKWALK_SRC_EHFRAME_SIGRETURN_H_
#define STACKWALK_SRC_EHFRAME_SIGRETURN_H_

#include <cstdint>
#include <cstring>

#include "core/arch_aarch64.h"
#include "core/arch_x86_64.h"
#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "core/walk_state.h"

namespace stackwalk::internal {

template <class Arch>
struct SigreturnLayout;

template <>
struct SigreturnLayout<ArchX86_64> {
  static constexpr uint8_t kCode[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  static constexpr uint64_t kUcontextFromSp = 0;
  static constexpr uint64_t kGregsInUcontext = 40;  // offsetof(ucontext_t, uc_mcontext.gregs)
  // gregs[] order (REG_R8 = 0 ... REG_RIP = 16) for each DWARF register 0..16.
  static constexpr int kGregOfDwarf[17] = {13, 12, 14, 11, 9, 8, 10, 15, 0, 1, 2, 3, 4, 5, 6, 7, 16};

  template <class Memory>
  static bool Load(Memory& memory, uint64_t uc, Regs<ArchX86_64>* out) {
    Regs<ArchX86_64> regs;
    for (int dwarf = 0; dwarf < 17; ++dwarf) {
      uint64_t v;
      if (!ReadWord<ArchX86_64>(memory, uc + kGregsInUcontext + 8 * kGregOfDwarf[dwarf], &v)) {
        return false;
      }
      regs.Set(dwarf, v);
    }
    *out = regs;
    return true;
  }
};

template <>
struct SigreturnLayout<ArchAarch64> {
  static constexpr uint8_t kCode[] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};
  static constexpr uint64_t kUcontextFromSp = 128;    // sizeof(siginfo_t)
  static constexpr uint64_t kMcontextInUcontext = 176;  // offsetof(ucontext_t, uc_mcontext)

  template <class Memory>
  static bool Load(Memory& memory, uint64_t uc, Regs<ArchAarch64>* out) {
    // struct sigcontext { u64 fault_address; u64 regs[31]; u64 sp; u64 pc; u64 pstate; ... }
    uint64_t base = uc + kMcontextInUcontext + 8;
    Regs<ArchAarch64> regs;
    for (int i = 0; i < 33; ++i) {  // x0..x30, sp (31), pc (32): the DWARF numbering
      uint64_t v;
      if (!ReadWord<ArchAarch64>(memory, base + 8 * i, &v)) return false;
      regs.Set(i, v);
    }
    *out = regs;
    return true;
  }
};

// If regs.pc() is at a sigreturn trampoline (read through locator.ReadCode), replaces regs by
// the interrupted context and returns kOk; kNoRule if it is not one.
template <class Arch, class Memory, class Locator>
StepResult SigreturnStep(Regs<Arch>& regs, Memory& memory, const Locator& locator,
                         WalkState* state) {
  using Layout = SigreturnLayout<Arch>;
  uint8_t code[sizeof(Layout::kCode)];
  if (!regs.Has(Arch::kSp) || !locator.ReadCode(regs.pc(), code, sizeof(code)) ||
      std::memcmp(code, Layout::kCode, sizeof(code)) != 0) {
    return StepResult::kNoRule;
  }
  Regs<Arch> interrupted;
  if (!Layout::Load(memory, regs.sp() + Layout::kUcontextFromSp, &interrupted)) {
    return StepResult::kUnreadable;
  }
  if (interrupted.pc() == 0) return StepResult::kEndOfStack;
  regs = interrupted;
  state->pc_is_exact = true;
  return StepResult::kOk;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_SIGRETURN_H_
