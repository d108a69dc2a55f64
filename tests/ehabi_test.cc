// Offline tests of the EHABI opcode interpreter and its compact rules (ARM IHI 0038 §10.3),
// on made-up stacks: each opcode's effect, hostile streams ending cleanly, and for every
// compilable stream, the cached rule giving exactly what the interpreter gives.
#include <gtest/gtest.h>

#include <vector>

#include "core/compact_rule.h"
#include "exidx/ehabi_compact_rule.h"
#include "exidx/ehabi_interpreter.h"
#include "exidx/exidx_table.h"
#include "fake_memory.h"

namespace stackwalk::internal {

// Builds an opcode stream over bytes held in `words` (most significant byte first per word).
class EhabiOpcodesForTest {
 public:
  static EhabiOpcodes Make(const std::vector<uint8_t>& bytes, std::vector<uint32_t>* words) {
    words->assign((bytes.size() + 3) / 4 + 1, 0xb0b0b0b0u);
    for (size_t i = 0; i < bytes.size(); ++i) {
      uint32_t& w = (*words)[i / 4];
      int shift = 24 - 8 * static_cast<int>(i % 4);
      w = (w & ~(0xffu << shift)) | (uint32_t{bytes[i]} << shift);
    }
    EhabiOpcodes ops;
    ops.bounds_ = {reinterpret_cast<uintptr_t>(words->data()),
                   reinterpret_cast<uintptr_t>(words->data() + words->size())};
    ops.next_ = ops.bounds_.lo;
    ops.words_left_ = static_cast<int>((bytes.size() + 3) / 4);
    ops.bytes_left_ = 0;
    return ops;
  }
};

namespace {

using stackwalk::testing::FakeMemory;

constexpr uint64_t kStack = 0xbe000000;

struct Interpreted {
  Regs<ArchArm> regs;
  EhabiResult result;
};

// A stack whose word at address a holds a + 0x10000 (recognisable, distinct per slot).
FakeMemory MakeStack() {
  FakeMemory mem(kStack, 0x4000);
  for (uint64_t a = kStack; a < kStack + 0x4000; a += 4) mem.Put32(a, static_cast<uint32_t>(a + 0x10000));
  return mem;
}

Regs<ArchArm> StartRegs() {
  Regs<ArchArm> regs;
  for (int r = 0; r < 16; ++r) regs.Set(r, 0x1000 + r);
  regs.set_sp(kStack + 0x100);
  regs.Set(ArchArm::kThumbFp, kStack + 0x200);
  regs.Set(ArchArm::kArmFp, kStack + 0x300);
  regs.Set(ArchArm::kLr, 0x20001);
  regs.set_pc(0x10101);
  return regs;
}

Interpreted Execute(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> words;
  EhabiOpcodes ops = EhabiOpcodesForTest::Make(bytes, &words);
  FakeMemory mem = MakeStack();
  Interpreted run;
  run.regs = StartRegs();
  run.result = ExecuteEhabi(ops, run.regs, mem);
  return run;
}

TEST(Ehabi, VspAdjustmentsAndPops) {
  Interpreted r = Execute({0x02, 0xaa, 0xb0});  // vsp += 12; pop {r4-r6, r14}
  ASSERT_EQ(r.result.result, StepResult::kOk);
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 12 + 16);
  EXPECT_EQ(r.regs.Get(4), kStack + 0x10c + 0x10000);
  EXPECT_EQ(r.regs.Get(14), kStack + 0x118 + 0x10000);
  EXPECT_FALSE(r.result.popped_pc);

  r = Execute({0x41, 0xb0});  // vsp -= 8
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 - 8);

  r = Execute({0xb2, 0x81, 0x01, 0xb0});  // vsp += 0x204 + (129 << 2)
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 0x204 + (129u << 2));
}

TEST(Ehabi, MaskedPopsIncludingPcAndSp) {
  Interpreted r = Execute({0x88, 0x00});  // pop {r15}
  ASSERT_EQ(r.result.result, StepResult::kOk);
  EXPECT_TRUE(r.result.popped_pc);
  EXPECT_EQ(r.regs.Get(15), kStack + 0x100 + 0x10000);

  r = Execute({0x82, 0x00});  // pop {r13}: the popped value becomes vsp
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 0x10000);

  r = Execute({0xb1, 0x0f, 0xb0});  // pop {r0-r3}
  EXPECT_TRUE(r.result.popped_r0_r3);
  EXPECT_EQ(r.regs.Get(3), kStack + 0x10c + 0x10000);
}

TEST(Ehabi, VspFromARegisterAndVfpPops) {
  Interpreted r = Execute({0x97, 0xb0});  // vsp = r7
  EXPECT_EQ(r.regs.sp(), kStack + 0x200);
  r = Execute({0xb3, 0x12, 0xb0});  // FSTMFDX D1-D3: 3 * 8 + 4
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 28);
  r = Execute({0xc9, 0x03, 0xd1, 0xb0});  // VPUSH D0-D3, then D8-D9
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 32 + 16);
  r = Execute({0xc1, 0xc7, 0x03, 0xb0});  // iWMMXt WR10-WR11, wCGR0-1
  EXPECT_EQ(r.regs.sp(), kStack + 0x100 + 16 + 8);
}

TEST(Ehabi, RefuseSpareAndReservedEndCleanly) {
  EXPECT_EQ(Execute({0x80, 0x00}).result.result, StepResult::kEndOfStack);   // refuse to unwind
  EXPECT_EQ(Execute({0x9d}).result.result, StepResult::kInvalidFrame);       // reserved
  EXPECT_EQ(Execute({0x9f}).result.result, StepResult::kInvalidFrame);       // reserved
  EXPECT_EQ(Execute({0xb4}).result.result, StepResult::kInvalidFrame);       // spare
  EXPECT_EQ(Execute({0xb1, 0x00}).result.result, StepResult::kInvalidFrame); // spare
  EXPECT_EQ(Execute({0xb1, 0x10}).result.result, StepResult::kInvalidFrame); // spare
  EXPECT_EQ(Execute({0xca}).result.result, StepResult::kInvalidFrame);       // spare
  EXPECT_EQ(Execute({0xff}).result.result, StepResult::kInvalidFrame);       // spare
  // A two-byte opcode cut off by the end of the stream.
  EXPECT_EQ(Execute({0x00, 0x00, 0x00, 0x8f}).result.result, StepResult::kInvalidFrame);
  // Pops beyond the stack fail, they do not read outside it: vsp += 0x4204, then pop.
  EXPECT_EQ(Execute({0xb2, 0x80, 0x20, 0xaf}).result.result, StepResult::kUnreadable);
}

// Every stream a compact rule can express gives, through the rule, what the interpreter gives.
TEST(Ehabi, CompactRulesAgreeWithTheInterpreter) {
  const std::vector<std::vector<uint8_t>> streams = {
      {0xb0},                          // leaf: return through lr
      {0xaa, 0xb0},                    // pop {r4-r6, r14}
      {0x02, 0xaf, 0xb0},              // vsp += 12; pop {r4-r11, r14}
      {0x84, 0x08},                    // pop {r7, r14}
      {0x88, 0x08},                    // pop {r7, r15}
      {0x97, 0x84, 0x08},              // vsp = r7; pop {r7, r14}
      {0x9b, 0x41, 0x88, 0x0f},        // vsp = r11; vsp -= 8; pop {r4-r7, r15}
      {0xc9, 0x07, 0xa8, 0x05},        // VPUSH D0-D7; pop {r4, r14}; vsp += 24
      {0xb2, 0x01, 0xad},              // vsp += 0x208; pop {r4-r9, r14}
      {0xb3, 0x01, 0x8f, 0xff},        // FSTMFDX; pop {r4-r15} includes sp: not compilable
  };
  int compiled_count = 0;
  for (const auto& bytes : streams) {
    std::vector<uint32_t> words;
    CompactRule rule;
    bool compiled =
        CompileEhabiRule(EhabiOpcodesForTest::Make(bytes, &words), &rule) == RuleError::kNone;
    Interpreted interpreted = Execute(bytes);
    if (!compiled) continue;
    ++compiled_count;
    ASSERT_EQ(interpreted.result.result, StepResult::kOk);
    FakeMemory mem = MakeStack();
    Regs<ArchArm> regs = StartRegs();
    WalkState state;
    ASSERT_EQ(ApplyCompactRule(rule, regs, mem, &state), StepResult::kOk);
    uint64_t want_pc = interpreted.result.popped_pc ? interpreted.regs.Get(15)
                                                    : interpreted.regs.Get(14);
    EXPECT_EQ(regs.pc(), want_pc);
    EXPECT_EQ(regs.sp(), interpreted.regs.sp());
    for (int reg : {ArchArm::kThumbFp, ArchArm::kArmFp, ArchArm::kLr}) {
      ASSERT_TRUE(regs.Has(reg)) << reg;
      EXPECT_EQ(regs.Get(reg), interpreted.regs.Get(reg)) << reg;
    }
  }
  EXPECT_EQ(compiled_count, 9);
}

// A stream no compact rule expresses is refused with the reason, not a bare "no".
TEST(Ehabi, CompactRuleCompilerSaysWhyItRefuses) {
  auto compile = [](const std::vector<uint8_t>& bytes) {
    std::vector<uint32_t> words;
    CompactRule rule;
    return CompileEhabiRule(EhabiOpcodesForTest::Make(bytes, &words), &rule);
  };
  EXPECT_EQ(compile({0xaa, 0xb0}), RuleError::kNone);
  EXPECT_EQ(compile({0xb1, 0x01}), RuleError::kOpcode);  // pop {r0}
  EXPECT_EQ(compile({0x82, 0x00}), RuleError::kOpcode);  // pop {r13}: sp
  EXPECT_EQ(compile({0x02, 0x97}), RuleError::kOpcode);  // vsp = r7 after another opcode
  EXPECT_EQ(compile({0x00, 0x00, 0x00, 0x8f}), RuleError::kTruncated);  // a pop cut off
  EXPECT_EQ(compile({0x80, 0x00}), RuleError::kOpcode);  // "refuse to unwind"
  EXPECT_EQ(compile(std::vector<uint8_t>(70, 0x00)), RuleError::kTooLong);
}

// An index read from a copy of another process's file (stackwalk-dump --snapshot of an arm32
// crash): prel31 offsets give the copy's addresses, load_bias the target's, for the lookup and
// the function start alike.
TEST(ExidxTable, LoadBiasTurnsACopysAddressesIntoTheTargets) {
  uint32_t table[4];
  const uint64_t at = reinterpret_cast<uintptr_t>(table);
  auto prel31_to = [&](int word, uint64_t target) {
    return static_cast<uint32_t>((target - (at + 4 * word)) & 0x7fffffffu);
  };
  // Two functions, 0x1000 and 0x2000 bytes past the copy of the index, both EXIDX_CANTUNWIND.
  table[0] = prel31_to(0, at + 0x1000);
  table[1] = 1;
  table[2] = prel31_to(2, at + 0x2000);
  table[3] = 1;
  ExidxSection section;
  section.table = {at, at + sizeof(table)};
  section.bounds = section.table;
  const uint64_t target_table = 0x40010000;  // where the target had its index
  section.load_bias = target_table - at;
  uint64_t entry = 0, start = 0;
  ASSERT_EQ(FindExidxEntry(section, target_table + 0x2004, &entry, &start), ExidxError::kOk);
  EXPECT_EQ(entry, at + 8);
  EXPECT_EQ(start, target_table + 0x2000);
  ASSERT_EQ(FindExidxEntry(section, target_table + 0x1ffe, &entry, &start), ExidxError::kOk);
  EXPECT_EQ(entry, at);
  EXPECT_EQ(start, target_table + 0x1000);
  EXPECT_EQ(FindExidxEntry(section, target_table + 0xfff, &entry, &start), ExidxError::kNoEntry);
  uint64_t personality;
  EhabiOpcodes ops;
  EXPECT_EQ(DecodeExidxEntry(section, entry, &personality, &ops), ExidxError::kCantUnwind);
}

}  // namespace
}  // namespace stackwalk::internal
