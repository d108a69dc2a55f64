// EvaluateExpression(): the DWARF expressions CFI uses (DW_CFA_def_cfa_expression,
// DW_CFA_expression, DW_CFA_val_expression; DWARF 5 §2.5), e.g. glibc's x86_64 signal
// trampoline and PLT entries. A fixed stack, a step budget and bounds-checked memory: a
// hostile expression fails, it never loops or reads outside the walk's memory.
#ifndef STACKWALK_SRC_EHFRAME_DWARF_EXPRESSION_H_
#define STACKWALK_SRC_EHFRAME_DWARF_EXPRESSION_H_

#include <cstdint>

#include "core/read_word.h"
#include "core/regs.h"
#include "ehframe/byte_reader.h"

namespace stackwalk::internal {

inline constexpr int kMaxExpressionStack = 64;
inline constexpr int kMaxExpressionSteps = 4096;

// Evaluates the expression at [expr, expr + size) with `initial` pushed first (the CFA, for
// register rules; nothing for the CFA rule when has_initial is false). Registers come from
// `regs` (the frame being unwound). Returns false on any error.
// Signal safety: async-signal-safe.
template <class Arch, class Memory>
bool EvaluateExpression(uint64_t expr, uint32_t size, const Regs<Arch>& regs, Memory& memory,
                        bool has_initial, uint64_t initial, uint64_t* result) {
  uint64_t stack[kMaxExpressionStack];
  int sp = 0;
  auto push = [&](uint64_t v) {
    if (sp == kMaxExpressionStack) return false;
    stack[sp++] = v;
    return true;
  };
  if (has_initial) push(initial);
  ByteReader r(expr, expr + size);
  auto reg_value = [&](uint64_t reg, uint64_t* out) {
    if (reg >= static_cast<uint64_t>(Arch::kNumRegs) || !regs.Has(static_cast<int>(reg))) {
      return false;
    }
    *out = regs.Get(static_cast<int>(reg));
    return true;
  };
  constexpr uint64_t kWordMask =
      Arch::kWordSize == 8 ? ~uint64_t{0} : uint64_t{0xffffffff};

  for (int steps = 0; !r.at_end(); ++steps) {
    if (steps == kMaxExpressionSteps) return false;
    uint8_t op = r.U8();
    if (op >= 0x30 && op <= 0x4f) {  // DW_OP_lit0..31
      if (!push(op - 0x30)) return false;
      continue;
    }
    if (op >= 0x70 && op <= 0x8f) {  // DW_OP_breg0..31
      int64_t off = r.Sleb128();
      uint64_t v;
      if (!r.ok() || !reg_value(op - 0x70, &v) || !push((v + off) & kWordMask)) return false;
      continue;
    }
    if (op >= 0x50 && op <= 0x6f) return false;  // DW_OP_reg*: a location, not a value
    // Binary operators pop two.
    auto binary = [&](auto fn) {
      if (sp < 2) return false;
      uint64_t b = stack[--sp];
      uint64_t a = stack[sp - 1];
      stack[sp - 1] = fn(a, b) & kWordMask;
      return true;
    };
    bool ok = true;
    switch (op) {
      case 0x03:  // DW_OP_addr
        ok = push(Arch::kWordSize == 8 ? r.U64() : r.U32());
        break;
      case 0x06: {  // DW_OP_deref
        uint64_t v;
        ok = sp > 0 && ReadWord<Arch>(memory, stack[sp - 1], &v);
        if (ok) stack[sp - 1] = v;
        break;
      }
      case 0x94: {  // DW_OP_deref_size
        uint8_t n = r.U8();
        uint64_t v = 0;
        ok = sp > 0 && n >= 1 && n <= Arch::kWordSize && memory.Read(stack[sp - 1], &v, n);
        if (ok) stack[sp - 1] = v;  // little-endian targets only
        break;
      }
      case 0x08: ok = push(r.U8()); break;                                               // const1u
      case 0x09: ok = push(static_cast<uint64_t>(int64_t{r.S8()}) & kWordMask); break;   // const1s
      case 0x0a: ok = push(r.U16()); break;                                              // const2u
      case 0x0b: ok = push(static_cast<uint64_t>(int64_t{r.S16()}) & kWordMask); break;  // const2s
      case 0x0c: ok = push(r.U32()); break;                                              // const4u
      case 0x0d: ok = push(static_cast<uint64_t>(int64_t{r.S32()}) & kWordMask); break;  // const4s
      case 0x0e:
      case 0x0f: ok = push(r.U64() & kWordMask); break;                                  // const8u/s
      case 0x10: ok = push(r.Uleb128() & kWordMask); break;                              // constu
      case 0x11: ok = push(static_cast<uint64_t>(r.Sleb128()) & kWordMask); break;       // consts
      case 0x12: ok = sp > 0 && push(stack[sp - 1]); break;                              // dup
      case 0x13: ok = sp > 0; if (ok) --sp; break;                                       // drop
      case 0x14: ok = sp > 1 && push(stack[sp - 2]); break;                              // over
      case 0x15: {                                                                       // pick
        uint8_t i = r.U8();
        ok = i < sp && push(stack[sp - 1 - i]);
        break;
      }
      case 0x16:  // swap
        ok = sp > 1;
        if (ok) {
          uint64_t t = stack[sp - 1];
          stack[sp - 1] = stack[sp - 2];
          stack[sp - 2] = t;
        }
        break;
      case 0x17:  // rot
        ok = sp > 2;
        if (ok) {
          uint64_t t = stack[sp - 1];
          stack[sp - 1] = stack[sp - 2];
          stack[sp - 2] = stack[sp - 3];
          stack[sp - 3] = t;
        }
        break;
      case 0x19:  // abs
        ok = sp > 0;
        if (ok && static_cast<int64_t>(stack[sp - 1]) < 0) stack[sp - 1] = -stack[sp - 1];
        break;
      case 0x1a: ok = binary([](uint64_t a, uint64_t b) { return a & b; }); break;
      case 0x1b:  // div (signed)
        ok = sp > 1 && stack[sp - 1] != 0 &&
             binary([](uint64_t a, uint64_t b) {
               if (static_cast<int64_t>(b) == -1) return -a;
               return static_cast<uint64_t>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
             });
        break;
      case 0x1c: ok = binary([](uint64_t a, uint64_t b) { return a - b; }); break;
      case 0x1d:  // mod
        ok = sp > 1 && stack[sp - 1] != 0 && binary([](uint64_t a, uint64_t b) { return a % b; });
        break;
      case 0x1e: ok = binary([](uint64_t a, uint64_t b) { return a * b; }); break;
      case 0x1f: ok = sp > 0; if (ok) stack[sp - 1] = (-stack[sp - 1]) & kWordMask; break;  // neg
      case 0x20: ok = sp > 0; if (ok) stack[sp - 1] = (~stack[sp - 1]) & kWordMask; break;  // not
      case 0x21: ok = binary([](uint64_t a, uint64_t b) { return a | b; }); break;
      case 0x22: ok = binary([](uint64_t a, uint64_t b) { return a + b; }); break;
      case 0x23: {  // plus_uconst
        uint64_t c = r.Uleb128();
        ok = sp > 0;
        if (ok) stack[sp - 1] = (stack[sp - 1] + c) & kWordMask;
        break;
      }
      case 0x24: ok = binary([](uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }); break;
      case 0x25: ok = binary([](uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }); break;
      case 0x26:  // shra
        ok = binary([](uint64_t a, uint64_t b) {
          return static_cast<uint64_t>(static_cast<int64_t>(a) >> (b >= 63 ? 63 : b));
        });
        break;
      case 0x27: ok = binary([](uint64_t a, uint64_t b) { return a ^ b; }); break;
      case 0x29: ok = binary([](uint64_t a, uint64_t b) -> uint64_t { return a == b; }); break;
      case 0x2a:
        ok = binary([](uint64_t a, uint64_t b) -> uint64_t {
          return static_cast<int64_t>(a) >= static_cast<int64_t>(b);
        });
        break;
      case 0x2b:
        ok = binary([](uint64_t a, uint64_t b) -> uint64_t {
          return static_cast<int64_t>(a) > static_cast<int64_t>(b);
        });
        break;
      case 0x2c:
        ok = binary([](uint64_t a, uint64_t b) -> uint64_t {
          return static_cast<int64_t>(a) <= static_cast<int64_t>(b);
        });
        break;
      case 0x2d:
        ok = binary([](uint64_t a, uint64_t b) -> uint64_t {
          return static_cast<int64_t>(a) < static_cast<int64_t>(b);
        });
        break;
      case 0x2e: ok = binary([](uint64_t a, uint64_t b) -> uint64_t { return a != b; }); break;
      case 0x2f: {  // skip
        int16_t off = r.S16();
        r.Seek(r.pos() + static_cast<uint64_t>(static_cast<int64_t>(off)));
        break;
      }
      case 0x28: {  // bra
        int16_t off = r.S16();
        ok = sp > 0;
        if (ok && stack[--sp] != 0) r.Seek(r.pos() + static_cast<uint64_t>(static_cast<int64_t>(off)));
        break;
      }
      case 0x90: {  // regx: a location, not a value
        ok = false;
        break;
      }
      case 0x92: {  // bregx
        uint64_t reg = r.Uleb128();
        int64_t off = r.Sleb128();
        uint64_t v;
        ok = r.ok() && reg_value(reg, &v) && push((v + off) & kWordMask);
        break;
      }
      case 0x96:  // nop
        break;
      default:
        ok = false;
        break;
    }
    if (!ok || !r.ok()) return false;
  }
  if (!r.ok() || sp == 0) return false;
  *result = stack[sp - 1];
  return true;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_DWARF_EXPRESSION_H_
