// Offline tests of the frame-pointer steps of all three architectures on made-up stacks: exact
// pc/sp/fp per frame, and every kind of damage ending the walk cleanly with the frames before it.
#include <gtest/gtest.h>

#include <vector>

#include "core/arch_aarch64.h"
#include "core/arch_arm.h"
#include "core/arch_x86_64.h"
#include "fake_memory.h"
#include "fp/fp_step.h"
#include "fp/fp_step_arm.h"

namespace stackwalk::internal {
namespace {

using stackwalk::testing::FakeCodeMap;
using stackwalk::testing::FakeMemory;

constexpr uint64_t kStack = 0x7ff000000000;
constexpr uint64_t kStackSize = 0x10000;

// Walks with FpStepRecordAtFp and returns the PCs, innermost first.
template <class Arch>
std::vector<uint64_t> Walk(FakeMemory& mem, uint64_t pc, uint64_t sp, uint64_t fp,
                           StepResult* last = nullptr) {
  Regs<Arch> regs;
  regs.set_pc(pc);
  regs.set_sp(sp);
  regs.set_fp(fp);
  WalkState state;
  std::vector<uint64_t> pcs{regs.pc()};
  StepResult r;
  while ((r = FpStepRecordAtFp(regs, mem, &state)) == StepResult::kOk) {
    pcs.push_back(regs.pc());
    if (pcs.size() > 1000) break;
  }
  if (last) *last = r;
  return pcs;
}

// A chain of frame records: record i at fps[i] = {fps[i+1], ras[i]}.
template <class Arch>
void PutChain(FakeMemory& mem, const std::vector<uint64_t>& fps, const std::vector<uint64_t>& ras) {
  for (size_t i = 0; i < fps.size(); ++i) {
    uint64_t next = i + 1 < fps.size() ? fps[i + 1] : 0;
    if (Arch::kWordSize == 8) {
      mem.Put64(fps[i], next);
      mem.Put64(fps[i] + 8, ras[i]);
    } else {
      mem.Put32(fps[i], static_cast<uint32_t>(next));
      mem.Put32(fps[i] + 4, static_cast<uint32_t>(ras[i]));
    }
  }
}

template <class Arch>
class RecordAtFpTest : public ::testing::Test {};
using RecordArchs = ::testing::Types<ArchX86_64, ArchAarch64>;
TYPED_TEST_SUITE(RecordAtFpTest, RecordArchs);

TYPED_TEST(RecordAtFpTest, ExactChainEndsAtZeroFramePointer) {
  FakeMemory mem(kStack, kStackSize);
  std::vector<uint64_t> fps{kStack + 0x100, kStack + 0x180, kStack + 0x400};
  PutChain<TypeParam>(mem, fps, {0x401000, 0x402000, 0x403000});
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack + 0xf0, fps[0], &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000, 0x402000, 0x403000}));
  EXPECT_EQ(last, StepResult::kEndOfStack);
}

TYPED_TEST(RecordAtFpTest, CallerSpIsJustAboveTheRecord) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<TypeParam>(mem, {kStack + 0x100, kStack + 0x200}, {0x401000, 0x402000});
  Regs<TypeParam> regs;
  regs.set_pc(0x400000);
  regs.set_sp(kStack + 0x80);
  regs.set_fp(kStack + 0x100);
  WalkState state;
  ASSERT_EQ(FpStepRecordAtFp(regs, mem, &state), StepResult::kOk);
  EXPECT_EQ(regs.pc(), 0x401000u);
  EXPECT_EQ(regs.sp(), kStack + 0x110);
  EXPECT_EQ(regs.fp(), kStack + 0x200);
}

// A record that passes every stack check but holds a data word where the return address goes (a
// register that is no frame pointer, in code built without them): the walk ends before it.
TYPED_TEST(RecordAtFpTest, ReturnAddressOutsideCodeEndsTheWalk) {
  FakeMemory mem(kStack, kStackSize);
  std::vector<uint64_t> fps{kStack + 0x100, kStack + 0x180, kStack + 0x400};
  PutChain<TypeParam>(mem, fps, {0x401000, 0x6118b789ef00, 0x403000});
  FakeCodeMap code;
  code.AddCode(0x400000, 0x410000);
  Regs<TypeParam> regs;
  regs.set_pc(0x400500);
  regs.set_sp(kStack + 0xf0);
  regs.set_fp(fps[0]);
  WalkState state;
  ASSERT_EQ(FpStepRecordAtFp(regs, mem, code, &state), StepResult::kOk);
  EXPECT_EQ(regs.pc(), 0x401000u);
  EXPECT_EQ(FpStepRecordAtFp(regs, mem, code, &state), StepResult::kInvalidFrame);
  EXPECT_EQ(regs.pc(), 0x401000u);  // unchanged: the bad frame is not taken
}

TYPED_TEST(RecordAtFpTest, UnmappedFramePointerEndsCleanly) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<TypeParam>(mem, {kStack + 0x100}, {0x401000});
  mem.Put64(kStack + 0x100, 0xdead0000);  // the caller's fp points nowhere
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000}));
  EXPECT_EQ(last, StepResult::kInvalidFrame);  // below the stack pointer
  mem.Put64(kStack + 0x100, kStack + kStackSize + 0x1000);  // above the stack
  pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000}));
  EXPECT_EQ(last, StepResult::kUnreadable);
}

TYPED_TEST(RecordAtFpTest, SelfLoopStops) {
  FakeMemory mem(kStack, kStackSize);
  mem.Put64(kStack + 0x100, kStack + 0x100);
  mem.Put64(kStack + 0x108, 0x401000);
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000}));  // its return address is real
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TYPED_TEST(RecordAtFpTest, TwoRecordLoopStops) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<TypeParam>(mem, {kStack + 0x100, kStack + 0x200}, {0x401000, 0x402000});
  mem.Put64(kStack + 0x200, kStack + 0x100);  // points back down
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000, 0x402000}));
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TYPED_TEST(RecordAtFpTest, MisalignedFramePointerStops) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<TypeParam>(mem, {kStack + 0x100}, {0x401000});
  mem.Put64(kStack + 0x100, kStack + 0x203);
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000}));
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TYPED_TEST(RecordAtFpTest, ImplausiblyLargeFrameStops) {
  FakeMemory mem(kStack, kMaxFrameSize + 0x1000);
  PutChain<TypeParam>(mem, {kStack + 0x100, kStack + 0x200 + kMaxFrameSize},
                      {0x401000, 0x402000});
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500, 0x401000}));
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TYPED_TEST(RecordAtFpTest, FramePointerBelowStackPointerStops) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<TypeParam>(mem, {kStack + 0x100}, {0x401000});
  StepResult last;
  auto pcs = Walk<TypeParam>(mem, 0x400500, kStack + 0x200, kStack + 0x100, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400500}));
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TYPED_TEST(RecordAtFpTest, GarbageStackNeverLeavesTheRegion) {
  // Fill the stack with pseudo-random words: the walk must end, and reads stay bounded.
  FakeMemory mem(kStack, kStackSize);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint64_t a = kStack; a < kStack + kStackSize; a += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // Bias half of the words into the stack so that some chains go on for a while.
    mem.Put64(a, (x & 1) ? kStack + (x % kStackSize) : x);
  }
  for (uint64_t fp = kStack; fp < kStack + kStackSize; fp += 8) {
    auto pcs = Walk<TypeParam>(mem, 0x400000, kStack, fp);
    ASSERT_LE(pcs.size(), kStackSize / 8 + 1);
  }
}

// Two regions, as on a sigaltstack: the walk may move from one to the other once.
class TwoRegionMemory {
 public:
  TwoRegionMemory() : alt_(0x10000, 0x1000), stack_(kStack, kStackSize) {}
  bool Read(uint64_t addr, void* out, size_t size) {
    return alt_.RegionOf(addr) == 0 ? alt_.Read(addr, out, size) : stack_.Read(addr, out, size);
  }
  int RegionOf(uint64_t addr) const {
    return alt_.RegionOf(addr) == 0 ? 0 : stack_.RegionOf(addr) == 0 ? 1 : -1;
  }
  FakeMemory alt_;
  FakeMemory stack_;
};

TEST(RegionSwitch, RecordAtTheTopOfTheAltStackLeadsToTheThreadStack) {
  TwoRegionMemory mem;
  uint64_t top_record = 0x11000 - 16;  // the last 16 bytes of the altstack
  mem.alt_.Put64(top_record, kStack + 0x100);
  mem.alt_.Put64(top_record + 8, 0x401000);
  mem.stack_.Put64(kStack + 0x100, kStack + 0x200);
  mem.stack_.Put64(kStack + 0x108, 0x402000);
  mem.stack_.Put64(kStack + 0x200, 0x10100);  // back onto the altstack: a second switch
  mem.stack_.Put64(kStack + 0x208, 0x403000);
  Regs<ArchX86_64> regs;
  regs.set_pc(0x400000);
  regs.set_sp(0x10800);
  regs.set_fp(top_record);
  WalkState state;
  std::vector<uint64_t> pcs{regs.pc()};
  StepResult r;
  while ((r = FpStepRecordAtFp(regs, mem, &state)) == StepResult::kOk) pcs.push_back(regs.pc());
  EXPECT_EQ(pcs, (std::vector<uint64_t>{0x400000, 0x401000, 0x402000, 0x403000}));
  EXPECT_EQ(r, StepResult::kInvalidFrame);
}

TEST(Aarch64FpStep, StripsPointerAuthenticationCode) {
  FakeMemory mem(kStack, kStackSize);
  PutChain<ArchAarch64>(mem, {kStack + 0x100}, {0x002a0000004011f4ull});  // PAC in bits 48+
  auto pcs = Walk<ArchAarch64>(mem, 0x400500, kStack, kStack + 0x100);
  ASSERT_EQ(pcs.size(), 2u);
  EXPECT_EQ(pcs[1], 0x4011f4u);
}

// ---- arm32: the three layouts of fp_step_arm.h ----

constexpr uint64_t kArmStack = 0xbe000000;
constexpr uint64_t kArmCode = 0x10000;

class ArmFpStepTest : public ::testing::Test {
 protected:
  ArmFpStepTest() : mem_(kArmStack, kStackSize) { code_.AddCode(kArmCode, kArmCode + 0x100000); }

  std::vector<uint64_t> Walk(uint64_t pc, uint64_t r7, uint64_t r11, StepResult* last = nullptr) {
    Regs<ArchArm> regs;
    regs.set_pc(pc);
    regs.set_sp(kArmStack);
    regs.Set(ArchArm::kThumbFp, r7);
    regs.Set(ArchArm::kArmFp, r11);
    WalkState state;
    std::vector<uint64_t> pcs{ArchArm::ReportedPc(regs.pc())};
    StepResult r;
    while ((r = FpStepArm(regs, mem_, code_, &state)) == StepResult::kOk) {
      pcs.push_back(ArchArm::ReportedPc(regs.pc()));
      if (pcs.size() > 1000) break;
    }
    if (last) *last = r;
    return pcs;
  }

  FakeMemory mem_;
  FakeCodeMap code_;
};

TEST_F(ArmFpStepTest, GccArmLayoutFramePointerAtSavedLr) {
  // (b): fp points at the saved lr; the caller's fp sits below it and points at the caller's lr.
  uint64_t f0 = kArmStack + 0x104, f1 = kArmStack + 0x204;
  mem_.Put32(f0 - 4, f1);
  mem_.Put32(f0, kArmCode + 0x200);
  mem_.Put32(f1 - 4, 0);
  mem_.Put32(f1, kArmCode + 0x300);
  StepResult last;
  auto pcs = Walk(kArmCode + 0x100, 0, f0, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{kArmCode + 0x100, kArmCode + 0x200, kArmCode + 0x300}));
  EXPECT_EQ(last, StepResult::kEndOfStack);
}

TEST_F(ArmFpStepTest, ClangLayoutFramePointerAtSavedFp) {
  // (a) in ARM code: [fp] = caller fp, [fp + 4] = lr.
  uint64_t f0 = kArmStack + 0x100, f1 = kArmStack + 0x200;
  mem_.Put32(f0, f1);
  mem_.Put32(f0 + 4, kArmCode + 0x200);
  mem_.Put32(f1, 0);
  mem_.Put32(f1 + 4, kArmCode + 0x300);
  auto pcs = Walk(kArmCode + 0x100, 0, f0);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{kArmCode + 0x100, kArmCode + 0x200, kArmCode + 0x300}));
}

TEST_F(ArmFpStepTest, GccThumbLayoutRecordAboveLocals) {
  // (c): r7 points below 24 bytes of locals; {caller r7, lr} sits above them. The caller is
  // Thumb too (lr bit 0), so its r7 frames the next step.
  uint64_t r7 = kArmStack + 0x100, c_r7 = kArmStack + 0x200;
  for (int i = 0; i < 6; ++i) mem_.Put32(r7 + 4 * i, 0x1234 + i);  // locals: neither stack nor code
  mem_.Put32(r7 + 24, c_r7);
  mem_.Put32(r7 + 28, kArmCode + 0x201);
  mem_.Put32(c_r7 + 8, 0);
  mem_.Put32(c_r7 + 12, kArmCode + 0x301);
  StepResult last;
  auto pcs = Walk(kArmCode + 0x101, r7, 0, &last);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{kArmCode + 0x100, kArmCode + 0x200, kArmCode + 0x300}));
  EXPECT_EQ(last, StepResult::kEndOfStack);
}

TEST_F(ArmFpStepTest, ThumbCallerOfArmCodeKeepsItsR7) {
  // An ARM-code frame (r11, layout b) called from Thumb code: the caller is framed by r7, which
  // the ARM frame left untouched.
  uint64_t f0 = kArmStack + 0x104, thumb_r7 = kArmStack + 0x300;
  mem_.Put32(f0 - 4, 0);
  mem_.Put32(f0, kArmCode + 0x201);  // Thumb caller
  mem_.Put32(thumb_r7, 0);
  mem_.Put32(thumb_r7 + 4, kArmCode + 0x401);
  auto pcs = Walk(kArmCode + 0x100, thumb_r7, f0);
  EXPECT_EQ(pcs, (std::vector<uint64_t>{kArmCode + 0x100, kArmCode + 0x200, kArmCode + 0x400}));
}

TEST_F(ArmFpStepTest, NoRecordFoundGivesUp) {
  uint64_t r7 = kArmStack + 0x100;
  for (uint64_t a = kArmStack; a < kArmStack + kStackSize; a += 4) mem_.Put32(a, 0x5555);
  StepResult last;
  auto pcs = Walk(kArmCode + 0x101, r7, 0, &last);
  EXPECT_EQ(pcs.size(), 1u);
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TEST_F(ArmFpStepTest, SelfLoopingGccArmRecordStops) {
  // (b) whose caller fp is fp itself: must not be followed forever.
  uint64_t f0 = kArmStack + 0x104;
  mem_.Put32(f0 - 4, f0);
  mem_.Put32(f0, kArmCode + 0x200);
  StepResult last;
  auto pcs = Walk(kArmCode + 0x100, 0, f0, &last);
  EXPECT_LE(pcs.size(), 2u);
  EXPECT_EQ(last, StepResult::kInvalidFrame);
}

TEST_F(ArmFpStepTest, FramePointerOutsideStackIsUnreadable) {
  StepResult last;
  auto pcs = Walk(kArmCode + 0x100, 0, 0x40000000, &last);
  EXPECT_EQ(pcs.size(), 1u);
  EXPECT_EQ(last, StepResult::kUnreadable);
}

}  // namespace
}  // namespace stackwalk::internal
