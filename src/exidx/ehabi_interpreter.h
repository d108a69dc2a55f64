// ExecuteEhabi(): runs a frame's EHABI unwind opcodes (ARM IHI 0038 §10.3) on the virtual
// register set, popping from the stack through bounds-checked memory: after it, sp is the
// caller's and pc the return address (r15 if popped, else r14).
#ifndef STACKWALK_SRC_EXIDX_EHABI_INTERPRETER_H_
#define STACKWALK_SRC_EXIDX_EHABI_INTERPRETER_H_

#include <cstdint>

#include "core/arch_arm.h"
#include "core/read_word.h"
#include "core/regs.h"
#include "core/step_result.h"
#include "exidx/exidx_table.h"

namespace stackwalk::internal {

struct EhabiResult {
  StepResult result = StepResult::kOk;
  bool popped_pc = false;
  bool popped_r0_r3 = false;  // with popped_pc: a signal frame restoring a whole context
  uint64_t pc_slot = 0;       // where r15 was popped from
};

// A frame never needs this many opcodes (operand bytes not counted); hostile tables are cut off.
inline constexpr int kMaxEhabiOpcodes = 1024;

template <class Memory>
EhabiResult ExecuteEhabi(EhabiOpcodes& ops, Regs<ArchArm>& regs, Memory& memory) {
  EhabiResult out;
  if (!regs.Has(ArchArm::kSp)) {
    out.result = StepResult::kInvalidFrame;
    return out;
  }
  uint64_t vsp = regs.sp();
  auto fail = [&](StepResult r) {
    out.result = r;
    return out;
  };
  auto pop = [&](int reg) {
    uint64_t v;
    if (!ReadWord<ArchArm>(memory, vsp, &v)) return false;
    regs.Set(reg, v);
    vsp = (vsp + 4) & 0xffffffffu;
    return true;
  };
  auto vfp_skip = [&](uint64_t bytes) { vsp = (vsp + bytes) & 0xffffffffu; };
  uint8_t op;
  for (int count = 0; ops.Next(&op); ++count) {
    if (count == kMaxEhabiOpcodes) return fail(StepResult::kInvalidFrame);
    if ((op & 0xc0) == 0x00) {  // 00xxxxxx: vsp += (x << 2) + 4
      vsp = (vsp + ((op & 0x3fu) << 2) + 4) & 0xffffffffu;
    } else if ((op & 0xc0) == 0x40) {  // 01xxxxxx: vsp -= (x << 2) + 4
      vsp = (vsp - ((op & 0x3fu) << 2) - 4) & 0xffffffffu;
    } else if ((op & 0xf0) == 0x80) {  // 1000iiii iiiiiiii: pop {r4-r15} under mask
      uint8_t low;
      if (!ops.Next(&low)) return fail(StepResult::kInvalidFrame);
      uint32_t mask = ((op & 0x0fu) << 8) | low;
      if (mask == 0) return fail(StepResult::kEndOfStack);  // refuse to unwind
      bool sp_popped = false;
      uint64_t new_sp = 0;
      for (int i = 0; i < 12; ++i) {
        if (!(mask & (1u << i))) continue;
        int reg = 4 + i;
        if (!pop(reg)) return fail(StepResult::kUnreadable);
        if (reg == ArchArm::kSp) {
          sp_popped = true;
          new_sp = regs.Get(reg);
        }
        if (reg == ArchArm::kPc) {
          out.popped_pc = true;
          out.pc_slot = (vsp - 4) & 0xffffffffu;
        }
      }
      if (sp_popped) vsp = new_sp;  // a popped sp wins over the increments
    } else if ((op & 0xf0) == 0x90) {  // 1001nnnn: vsp = r[n]
      int reg = op & 0x0f;
      if (reg == 13 || reg == 15) return fail(StepResult::kInvalidFrame);  // reserved
      if (!regs.Has(reg)) return fail(StepResult::kInvalidFrame);
      vsp = regs.Get(reg);
    } else if ((op & 0xf0) == 0xa0) {  // 1010Lnnn: pop r4-r[4+n] (and r14 with L)
      int last = 4 + (op & 0x07);
      for (int reg = 4; reg <= last; ++reg) {
        if (!pop(reg)) return fail(StepResult::kUnreadable);
      }
      if ((op & 0x08) && !pop(ArchArm::kLr)) return fail(StepResult::kUnreadable);
    } else if (op == 0xb0) {  // finish
      break;
    } else if (op == 0xb1) {  // 10110001 0000iiii: pop {r0-r3} under mask
      uint8_t mask;
      if (!ops.Next(&mask) || mask == 0 || (mask & 0xf0) != 0) {
        return fail(StepResult::kInvalidFrame);  // spare
      }
      for (int reg = 0; reg < 4; ++reg) {
        if ((mask & (1u << reg)) && !pop(reg)) return fail(StepResult::kUnreadable);
      }
      out.popped_r0_r3 = true;
    } else if (op == 0xb2) {  // 10110010 uleb128: vsp += 0x204 + (uleb128 << 2)
      uint64_t value;
      if (!ops.NextUleb128(&value)) return fail(StepResult::kInvalidFrame);
      vsp = (vsp + 0x204 + (value << 2)) & 0xffffffffu;
    } else if (op == 0xb3) {  // 10110011 sssscccc: pop D[s]-D[s+c] saved by FSTMFDX
      uint8_t sc;
      if (!ops.Next(&sc)) return fail(StepResult::kInvalidFrame);
      vfp_skip(8u * ((sc & 0x0fu) + 1) + 4);
    } else if ((op & 0xfc) == 0xb4) {  // 101101nn: spare
      return fail(StepResult::kInvalidFrame);
    } else if ((op & 0xf8) == 0xb8) {  // 10111nnn: pop D[8]-D[8+n] saved by FSTMFDX
      vfp_skip(8u * ((op & 0x07u) + 1) + 4);
    } else if (op == 0xc6) {  // 11000110 sssscccc: pop wR[s]-wR[s+c] (iWMMXt)
      uint8_t sc;
      if (!ops.Next(&sc)) return fail(StepResult::kInvalidFrame);
      vfp_skip(8u * ((sc & 0x0fu) + 1));
    } else if (op == 0xc7) {  // 11000111 0000iiii: pop wCGR registers under mask
      uint8_t mask;
      if (!ops.Next(&mask) || mask == 0 || (mask & 0xf0) != 0) {
        return fail(StepResult::kInvalidFrame);
      }
      vfp_skip(4u * static_cast<unsigned>(__builtin_popcount(mask)));
    } else if ((op & 0xf8) == 0xc0) {  // 11000nnn: pop wR[10]-wR[10+n] (iWMMXt)
      vfp_skip(8u * ((op & 0x07u) + 1));
    } else if (op == 0xc8 || op == 0xc9) {  // VPUSH D[16+s].. / D[s]..: 8 bytes each
      uint8_t sc;
      if (!ops.Next(&sc)) return fail(StepResult::kInvalidFrame);
      vfp_skip(8u * ((sc & 0x0fu) + 1));
    } else if ((op & 0xf8) == 0xd0) {  // 11010nnn: pop D[8]-D[8+n] saved by VPUSH
      vfp_skip(8u * ((op & 0x07u) + 1));
    } else {  // 11001yyy (yyy > 1), 11xxxyyy (xxx > 2): spare
      return fail(StepResult::kInvalidFrame);
    }
  }
  regs.set_sp(vsp);
  return out;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EXIDX_EHABI_INTERPRETER_H_
