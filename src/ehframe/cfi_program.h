// RunCfaProgram(): executes the CFA instructions of a CIE and an FDE up to a PC and yields the
// row of the unwind table in effect there (DWARF 5 §6.4.2). Fixed-size state, no allocation:
// remembered states live in a bounded array.
#ifndef STACKWALK_SRC_EHFRAME_CFI_PROGRAM_H_
#define STACKWALK_SRC_EHFRAME_CFI_PROGRAM_H_

#include <cstdint>

#include "ehframe/byte_reader.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/pointer_encoding.h"

namespace stackwalk::internal {

enum class RuleKind : uint8_t {
  kSameValue,      // unspecified or DW_CFA_same_value: the caller's value is this frame's
  kUndefined,      // DW_CFA_undefined: not recoverable (an undefined return address ends the stack)
  kOffset,         // saved at CFA + value
  kValOffset,      // is CFA + value
  kRegister,       // in register `value`
  kExpression,     // saved at the address the expression computes (CFA pushed first)
  kValExpression,  // is the value the expression computes (CFA pushed first)
};

struct RegRule {
  int64_t value = 0;       // offset, register number, or expression address
  uint32_t expr_size = 0;  // expression length in bytes
  RuleKind kind = RuleKind::kSameValue;
};

struct CfaRule {
  bool is_expression = false;
  uint32_t reg = 0;
  int64_t offset = 0;
  uint64_t expr = 0;
  uint32_t expr_size = 0;
};

// One row: how to compute the CFA and each register of the caller. Registers numbered
// kNumRegs and above get their rules decoded and dropped (e.g. AArch64's d8-d15), since the
// walkers do not recover them.
template <int kNumRegs>
struct CfiRow {
  CfaRule cfa;
  RegRule regs[kNumRegs];
  bool ra_signed = false;  // AArch64: DW_CFA_AARCH64_negate_ra_state toggled an odd number of times
};

inline constexpr int kMaxRememberedStates = 4;
inline constexpr int kMaxCfaInstructions = 1 << 16;

namespace cfi_internal {

// Factored offsets (DWARF 5 §6.4.2.1) scaled with wrap-around: hostile tables must not reach
// signed overflow.
inline int64_t Scale(uint64_t factored, int64_t align) {
  return static_cast<int64_t>(factored * static_cast<uint64_t>(align));
}
inline int64_t Scale(int64_t factored, int64_t align) {
  return Scale(static_cast<uint64_t>(factored), align);
}

enum : uint8_t {
  kAdvanceLoc = 0x40,
  kOffset = 0x80,
  kRestore = 0xc0,
  kNop = 0x00,
  kSetLoc = 0x01,
  kAdvanceLoc1 = 0x02,
  kAdvanceLoc2 = 0x03,
  kAdvanceLoc4 = 0x04,
  kOffsetExtended = 0x05,
  kRestoreExtended = 0x06,
  kUndefined = 0x07,
  kSameValue = 0x08,
  kRegister = 0x09,
  kRememberState = 0x0a,
  kRestoreState = 0x0b,
  kDefCfa = 0x0c,
  kDefCfaRegister = 0x0d,
  kDefCfaOffset = 0x0e,
  kDefCfaExpression = 0x0f,
  kExpression = 0x10,
  kOffsetExtendedSf = 0x11,
  kDefCfaSf = 0x12,
  kDefCfaOffsetSf = 0x13,
  kValOffset = 0x14,
  kValOffsetSf = 0x15,
  kValExpression = 0x16,
  kGnuWindowSave = 0x2d,  // AArch64: DW_CFA_AARCH64_negate_ra_state
  kGnuArgsSize = 0x2e,
  kGnuNegativeOffsetExtended = 0x2f,
};

// Runs one instruction stream. `initial` is the row after the CIE's instructions (for
// DW_CFA_restore); null while running them.
template <int kNumRegs>
CfiError Run(const EhFrameSection& section, const Fde& fde, uint64_t begin, uint64_t end,
             uint64_t pc, const CfiRow<kNumRegs>* initial, CfiRow<kNumRegs>* row, uint64_t* loc,
             int* budget) {
  CfiRow<kNumRegs> remembered[kMaxRememberedStates];
  int depth = 0;
  ByteReader r(begin, end);
  const Cie& cie = fde.cie;
  auto set_rule = [&](uint64_t reg, RuleKind kind, int64_t value, uint32_t expr_size = 0) {
    if (reg < static_cast<uint64_t>(kNumRegs)) row->regs[reg] = RegRule{value, expr_size, kind};
  };
  auto restore_rule = [&](uint64_t reg) {
    if (reg < static_cast<uint64_t>(kNumRegs)) {
      row->regs[reg] = initial != nullptr ? initial->regs[reg] : RegRule{};
    }
  };
  // Advances the location; returns false when the new row starts past `pc`.
  auto advance = [&](uint64_t delta) {
    uint64_t next = *loc + delta * cie.code_align;
    if (next > pc) return false;
    *loc = next;
    return true;
  };

  while (!r.at_end()) {
    if (--*budget < 0) return CfiError::kTooManyInstructions;
    uint8_t op = r.U8();
    uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case kAdvanceLoc:
        if (!advance(low)) return CfiError::kOk;
        continue;
      case kOffset:
        set_rule(low, RuleKind::kOffset, Scale(r.Uleb128(), cie.data_align));
        continue;
      case kRestore:
        restore_rule(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case kNop:
        break;
      case kSetLoc: {
        uint64_t to;
        PointerBases bases;
        if (!DecodePointer(r, cie.fde_encoding, section.address_size, bases, &to)) {
          return CfiError::kBadEncoding;
        }
        to = section.CodeAddress(to, cie.fde_encoding);
        if (to > pc) return CfiError::kOk;
        *loc = to;
        break;
      }
      case kAdvanceLoc1:
        if (!advance(r.U8())) return r.ok() ? CfiError::kOk : CfiError::kTruncated;
        break;
      case kAdvanceLoc2:
        if (!advance(r.U16())) return r.ok() ? CfiError::kOk : CfiError::kTruncated;
        break;
      case kAdvanceLoc4:
        if (!advance(r.U32())) return r.ok() ? CfiError::kOk : CfiError::kTruncated;
        break;
      case kOffsetExtended: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kOffset, Scale(r.Uleb128(), cie.data_align));
        break;
      }
      case kOffsetExtendedSf: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kOffset, Scale(r.Sleb128(), cie.data_align));
        break;
      }
      case kGnuNegativeOffsetExtended: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kOffset, Scale(uint64_t{0} - r.Uleb128(), cie.data_align));
        break;
      }
      case kValOffset: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kValOffset, Scale(r.Uleb128(), cie.data_align));
        break;
      }
      case kValOffsetSf: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kValOffset, Scale(r.Sleb128(), cie.data_align));
        break;
      }
      case kRestoreExtended:
        restore_rule(r.Uleb128());
        break;
      case kUndefined:
        set_rule(r.Uleb128(), RuleKind::kUndefined, 0);
        break;
      case kSameValue:
        set_rule(r.Uleb128(), RuleKind::kSameValue, 0);
        break;
      case kRegister: {
        uint64_t reg = r.Uleb128();
        set_rule(reg, RuleKind::kRegister, static_cast<int64_t>(r.Uleb128()));
        break;
      }
      case kRememberState:
        if (depth == kMaxRememberedStates) return CfiError::kStateStackOverflow;
        remembered[depth++] = *row;
        break;
      case kRestoreState: {
        if (depth == 0) return CfiError::kStateStackUnderflow;
        // The CFA rule is part of the remembered state (DWARF 5 §6.4.2.4).
        *row = remembered[--depth];
        break;
      }
      case kDefCfa:
        row->cfa = CfaRule{};
        row->cfa.reg = static_cast<uint32_t>(r.Uleb128());
        row->cfa.offset = static_cast<int64_t>(r.Uleb128());
        break;
      case kDefCfaSf:
        row->cfa = CfaRule{};
        row->cfa.reg = static_cast<uint32_t>(r.Uleb128());
        row->cfa.offset = Scale(r.Sleb128(), cie.data_align);
        break;
      case kDefCfaRegister:
        row->cfa.is_expression = false;
        row->cfa.reg = static_cast<uint32_t>(r.Uleb128());
        break;
      case kDefCfaOffset:
        row->cfa.is_expression = false;
        row->cfa.offset = static_cast<int64_t>(r.Uleb128());
        break;
      case kDefCfaOffsetSf:
        row->cfa.is_expression = false;
        row->cfa.offset = Scale(r.Sleb128(), cie.data_align);
        break;
      case kDefCfaExpression: {
        uint64_t size = r.Uleb128();
        row->cfa = CfaRule{};
        row->cfa.is_expression = true;
        row->cfa.expr = r.pos();
        row->cfa.expr_size = static_cast<uint32_t>(size);
        r.Skip(size);
        if (size > UINT32_MAX) return CfiError::kBadInstruction;
        break;
      }
      case kExpression:
      case kValExpression: {
        uint64_t reg = r.Uleb128();
        uint64_t size = r.Uleb128();
        if (size > UINT32_MAX) return CfiError::kBadInstruction;
        set_rule(reg, op == kExpression ? RuleKind::kExpression : RuleKind::kValExpression,
                 static_cast<int64_t>(r.pos()), static_cast<uint32_t>(size));
        r.Skip(size);
        break;
      }
      case kGnuWindowSave:
        row->ra_signed = !row->ra_signed;
        break;
      case kGnuArgsSize:
        r.Uleb128();
        break;
      default:
        return CfiError::kBadInstruction;
    }
    if (!r.ok()) return CfiError::kTruncated;
  }
  return r.ok() ? CfiError::kOk : CfiError::kTruncated;
}

}  // namespace cfi_internal

// The row in effect at `pc` (which the FDE must cover). Signal safety: async-signal-safe; uses
// about (kMaxRememberedStates + 2) rows of stack.
template <int kNumRegs>
CfiError RunCfaProgram(const EhFrameSection& section, const Fde& fde, uint64_t pc,
                       CfiRow<kNumRegs>* row) {
  if (pc < fde.pc_begin || pc >= fde.pc_end) return CfiError::kPcNotCovered;
  *row = CfiRow<kNumRegs>();
  uint64_t loc = fde.pc_begin;
  int budget = kMaxCfaInstructions;
  // The CIE's initial instructions describe the state at pc_begin; they never advance.
  CfiError err = cfi_internal::Run<kNumRegs>(section, fde, fde.cie.instructions, fde.cie.end,
                                              ~uint64_t{0}, nullptr, row, &loc, &budget);
  if (err != CfiError::kOk) return err;
  loc = fde.pc_begin;
  CfiRow<kNumRegs> initial = *row;
  return cfi_internal::Run<kNumRegs>(section, fde, fde.instructions, fde.end, pc, &initial, row,
                                     &loc, &budget);
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_CFI_PROGRAM_H_
