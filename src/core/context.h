// Registers of the native architecture: from a ucontext_t, or of the calling function itself.
#ifndef STACKWALK_SRC_CORE_CONTEXT_H_
#define STACKWALK_SRC_CORE_CONTEXT_H_

#include <ucontext.h>

#include <cstdint>

#include "core/config.h"
#include "core/regs.h"

namespace stackwalk::internal {

using NativeArch = STACKWALK_NATIVE_ARCH;
using NativeRegs = Regs<NativeArch>;

// Fills `regs` with every register the context holds. On arm32 the PC gets bit 0 set when the
// context was interrupted in Thumb state (CPSR.T).
// Signal safety: async-signal-safe.
inline void RegsFromUcontext(const ucontext_t* uc, NativeRegs* regs) {
  regs->ForgetAll();
#if defined(STACKWALK_ARCH_X86_64)
  const greg_t* g = uc->uc_mcontext.gregs;
  static constexpr int kDwarfToGreg[16] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                           REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                           REG_R12, REG_R13, REG_R14, REG_R15};
  for (int i = 0; i < 16; ++i) regs->Set(i, static_cast<uint64_t>(g[kDwarfToGreg[i]]));
  regs->set_pc(static_cast<uint64_t>(g[REG_RIP]));
#elif defined(STACKWALK_ARCH_AARCH64)
  for (int i = 0; i <= 30; ++i) regs->Set(i, uc->uc_mcontext.regs[i]);
  regs->set_sp(uc->uc_mcontext.sp);
  regs->set_pc(uc->uc_mcontext.pc);
#elif defined(STACKWALK_ARCH_ARM)
  const mcontext_t& m = uc->uc_mcontext;
  const unsigned long r[16] = {m.arm_r0, m.arm_r1, m.arm_r2,  m.arm_r3, m.arm_r4, m.arm_r5,
                               m.arm_r6, m.arm_r7, m.arm_r8,  m.arm_r9, m.arm_r10, m.arm_fp,
                               m.arm_ip, m.arm_sp, m.arm_lr, m.arm_pc};
  for (int i = 0; i < 16; ++i) regs->Set(i, r[i]);
  if (m.arm_cpsr & (1u << 5)) regs->set_pc(m.arm_pc | 1);
#endif
}

}  // namespace stackwalk::internal

// Captures pc, sp and frame pointer(s) of the function this expands in, which must keep a frame
// record (libstackwalk is built with -fno-omit-frame-pointer; arm32 entries are ARM code, see
// STACKWALK_ENTRY).
#if defined(STACKWALK_ARCH_X86_64)
#define STACKWALK_CAPTURE_HERE(regs)                                                    \
  do {                                                                                  \
    uint64_t pc_, sp_, fp_;                                                             \
    __asm__ volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"            \
                     : "=r"(pc_), "=r"(sp_), "=r"(fp_));                                \
    (regs).ForgetAll();                                                                 \
    (regs).set_pc(pc_);                                                                 \
    (regs).set_sp(sp_);                                                                 \
    (regs).set_fp(fp_);                                                                 \
  } while (0)
#define STACKWALK_ENTRY __attribute__((noinline))
#elif defined(STACKWALK_ARCH_AARCH64)
#define STACKWALK_CAPTURE_HERE(regs)                                                    \
  do {                                                                                  \
    uint64_t pc_, sp_, fp_;                                                             \
    __asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(pc_), "=r"(sp_), "=r"(fp_)); \
    (regs).ForgetAll();                                                                 \
    (regs).set_pc(pc_);                                                                 \
    (regs).set_sp(sp_);                                                                 \
    (regs).set_fp(fp_);                                                                 \
  } while (0)
#define STACKWALK_ENTRY __attribute__((noinline))
#elif defined(STACKWALK_ARCH_ARM)
#define STACKWALK_CAPTURE_HERE(regs)                                                    \
  do {                                                                                  \
    uint32_t pc_, sp_, r7_, r11_;                                                       \
    __asm__ volatile("mov %0, pc\n\tmov %1, sp\n\tmov %2, r7\n\tmov %3, r11"            \
                     : "=r"(pc_), "=r"(sp_), "=r"(r7_), "=r"(r11_));                    \
    (regs).ForgetAll();                                                                 \
    (regs).set_pc(pc_);                                                                 \
    (regs).set_sp(sp_);                                                                 \
    (regs).Set(::stackwalk::internal::ArchArm::kThumbFp, r7_);                          \
    (regs).Set(::stackwalk::internal::ArchArm::kArmFp, r11_);                           \
  } while (0)
// ARM code, so that GCC lays the entry's frame out as layout (b) of fp_step_arm.h.
#define STACKWALK_ENTRY __attribute__((noinline, target("arm")))  // and built -ffixed-r7
#endif

#endif  // STACKWALK_SRC_CORE_CONTEXT_H_
