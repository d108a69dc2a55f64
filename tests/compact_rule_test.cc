// Offline tests of the CFI rows' compact rules (core/compact_rule.h, ehframe/compact_rule_step.h):
// each row the compiler refuses says why, and every row it compiles gives, through the one
// applier, the caller the full CFI row gives (ApplyCfiRow), on a made-up stack.
#include <gtest/gtest.h>

#include "core/arch_aarch64.h"
#include "core/arch_x86_64.h"
#include "core/compact_rule.h"
#include "ehframe/cfi_executor.h"
#include "ehframe/compact_rule_step.h"
#include "fake_memory.h"

namespace stackwalk::internal {
namespace {

using stackwalk::testing::FakeMemory;

constexpr uint64_t kStack = 0x7ff000000000;

FakeMemory MakeStack() {
  FakeMemory mem(kStack, 0x4000);
  for (uint64_t a = kStack; a < kStack + 0x4000; a += 8) mem.Put64(a, a + 0x100000);
  return mem;
}

template <class Arch>
Regs<Arch> StartRegs() {
  Regs<Arch> regs;
  for (int r = 0; r < Arch::kNumRegs; ++r) regs.Set(r, 0x1000 + r);
  regs.set_pc(0x401000);
  regs.set_sp(kStack + 0x100);
  regs.set_fp(kStack + 0x200);
  if constexpr (Arch::kLr >= 0) regs.Set(Arch::kLr, 0x402000);
  return regs;
}

template <class Arch>
CfiRow<Arch::kNumRegs> Row(int cfa_reg, int64_t cfa_offset) {
  CfiRow<Arch::kNumRegs> row;
  row.cfa.reg = static_cast<uint32_t>(cfa_reg);
  row.cfa.offset = cfa_offset;
  return row;
}

RegRule Offset(int64_t value) {
  RegRule rule;
  rule.kind = RuleKind::kOffset;
  rule.value = value;
  return rule;
}

TEST(CompactRule, CfiRowsTheCompilerRefusesSayWhy) {
  using A = ArchX86_64;
  constexpr uint32_t kRa = 16;  // x86_64's return address column
  CompactRule rule;
  auto row = Row<A>(A::kSp, 16);
  row.regs[kRa] = Offset(-8);
  EXPECT_EQ(CompileCompactRule<A>(row, kRa, false, &rule), RuleError::kNone);
  EXPECT_EQ(rule.kind, CompactRule::Kind::kCfaSp);
  EXPECT_EQ(CompileCompactRule<A>(row, kRa, true, &rule), RuleError::kSignalFrame);

  auto expression = row;
  expression.cfa.is_expression = true;
  EXPECT_EQ(CompileCompactRule<A>(expression, kRa, false, &rule), RuleError::kCfaExpression);

  auto other_base = row;
  other_base.cfa.reg = 0;  // rax
  EXPECT_EQ(CompileCompactRule<A>(other_base, kRa, false, &rule), RuleError::kCfaRegister);

  auto far = row;
  far.regs[kRa] = Offset(int64_t{1} << 20);
  EXPECT_EQ(CompileCompactRule<A>(far, kRa, false, &rule), RuleError::kOffsetRange);

  auto ra_in_register = row;
  ra_in_register.regs[kRa].kind = RuleKind::kRegister;
  EXPECT_EQ(CompileCompactRule<A>(ra_in_register, kRa, false, &rule),
            RuleError::kReturnAddressRule);

  auto fp_in_register = row;
  fp_in_register.regs[A::kFp].kind = RuleKind::kRegister;
  EXPECT_EQ(CompileCompactRule<A>(fp_in_register, kRa, false, &rule), RuleError::kRegisterRule);

  auto outermost = row;
  outermost.regs[kRa].kind = RuleKind::kUndefined;
  EXPECT_EQ(CompileCompactRule<A>(outermost, kRa, false, &rule), RuleError::kNone);
  EXPECT_EQ(rule.kind, CompactRule::Kind::kEndOfStack);
}

// Compiles `row`, then steps from the same registers with the rule and with the row.
template <class Arch>
void ExpectRuleAgreesWithRow(const CfiRow<Arch::kNumRegs>& row, uint32_t ra_column) {
  CompactRule rule;
  ASSERT_EQ(CompileCompactRule<Arch>(row, ra_column, false, &rule), RuleError::kNone);
  FakeMemory mem = MakeStack();
  Regs<Arch> by_rule = StartRegs<Arch>();
  Regs<Arch> by_row = StartRegs<Arch>();
  WalkState rule_state, row_state;
  rule_state.pc_is_exact = row_state.pc_is_exact = false;
  ASSERT_EQ(ApplyCompactRule(rule, by_rule, mem, &rule_state), StepResult::kOk);
  ASSERT_EQ(ApplyCfiRow<Arch>(row, ra_column, false, by_row, mem, &row_state), StepResult::kOk);
  EXPECT_EQ(by_rule.pc(), by_row.pc());
  EXPECT_EQ(by_rule.sp(), by_row.sp());
  ASSERT_TRUE(by_rule.Has(Arch::kFp));
  EXPECT_EQ(by_rule.fp(), by_row.fp());
  if constexpr (Arch::kLr >= 0) {
    ASSERT_TRUE(by_rule.Has(Arch::kLr));
    EXPECT_EQ(by_rule.Get(Arch::kLr), by_row.Get(Arch::kLr));
  }
}

TEST(CompactRule, EachX86_64FormulaGivesWhatTheRowGives) {
  using A = ArchX86_64;
  auto sp_based = Row<A>(A::kSp, 32);  // after push rbp; sub rsp, 16
  sp_based.regs[16] = Offset(-8);
  sp_based.regs[A::kFp] = Offset(-16);
  ExpectRuleAgreesWithRow<A>(sp_based, 16);
  auto fp_based = Row<A>(A::kFp, 16);  // after mov rbp, rsp
  fp_based.regs[16] = Offset(-8);
  fp_based.regs[A::kFp] = Offset(-16);
  ExpectRuleAgreesWithRow<A>(fp_based, 16);
  auto leaf = Row<A>(A::kSp, 8);  // fp untouched
  leaf.regs[16] = Offset(-8);
  ExpectRuleAgreesWithRow<A>(leaf, 16);
}

TEST(CompactRule, EachAarch64FormulaGivesWhatTheRowGives) {
  using A = ArchAarch64;
  auto framed = Row<A>(A::kFp, 16);  // stp x29, x30, [sp, -16]!; mov x29, sp
  framed.regs[A::kLr] = Offset(-8);
  framed.regs[A::kFp] = Offset(-16);
  ExpectRuleAgreesWithRow<A>(framed, A::kLr);
  auto leaf = Row<A>(A::kSp, 0);  // the return address still in x30
  ExpectRuleAgreesWithRow<A>(leaf, A::kLr);
}

}  // namespace
}  // namespace stackwalk::internal
