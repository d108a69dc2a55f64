// The frame cache (core/frame_cache.h): which steps it enters, when a thread's walks step through
// it, and, on real stacks, that a walk through it gives what an uncached walk gives: each frame's
// slots are read afresh (a frame reached through another caller, a return address smashed to
// point at data) and a module map rebuild retires every entry.
#include "core/frame_cache.h"

#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/mman.h>

#include <memory>
#include <string>
#include <thread>

#include "core/arch_aarch64.h"
#include "core/arch_x86_64.h"
#include "core/module_map.h"
#include "core/rule_cache.h"
#include "logged_stacks.h"

namespace stackwalk::internal {
namespace {

constexpr uint64_t kSp = 0x7fff0000;
constexpr uint64_t kPc = 0x401000;
constexpr uint64_t kKey = FrameCache::Key(kPc, false);

// A rule of `kind` with the CFA at base + cfa_offset, the return address at cfa + ra_offset and
// the caller's fp at cfa + fp_offset (0: unchanged).
CompactRule RuleOf(CompactRule::Kind kind, int32_t cfa_offset, int16_t ra_offset,
                   int16_t fp_offset) {
  CompactRule rule = CompactRule::Cfa(kind, cfa_offset);
  rule.ra_offset = ra_offset;
  rule.fp_offset = fp_offset;
  return rule;
}

// The slots a step by `rule` from sp read (values made up: the cache keeps addresses only).
RuleSlots SlotsOf(const CompactRule& rule, uint64_t cfa) {
  RuleSlots slots;
  slots.ra_addr = cfa + static_cast<int64_t>(rule.ra_offset);
  slots.ra_val = kPc + 0x100;
  if (rule.fp_offset != 0) {
    slots.fp_addr = cfa + static_cast<int64_t>(rule.fp_offset);
    slots.fp_val = kSp + 0x200;
  }
  return slots;
}

template <class Arch>
const FrameCache::Entry* PutAndFind(FrameCache& cache, const CompactRule& rule, uint64_t cfa) {
  cache.Retag(7);
  cache.Put<Arch>(kKey, kSp, 0x1234, rule, cfa, SlotsOf(rule, cfa));
  return cache.Find(kKey, kSp);
}

TEST(FrameCache, KeepsAStepsCfaAndSlotsForItsFrameAndWalkKind) {
  auto cache = std::make_unique<FrameCache>();
  // x86_64 with a frame pointer: cfa = fp + 16, ra at cfa - 8, fp at cfa - 16.
  const CompactRule rule = RuleOf(CompactRule::Kind::kCfaFp, 16, -8, -16);
  const FrameCache::Entry* e = PutAndFind<ArchX86_64>(*cache, rule, kSp + 64);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->cfa, kSp + 64);
  EXPECT_EQ(e->ra_addr, kSp + 56);
  EXPECT_EQ(e->fp_addr, kSp + 48);
  EXPECT_EQ(e->fp_slot_offset, -8);
  EXPECT_EQ(e->fp, 0x1234u);
  EXPECT_EQ(e->flags, FrameLog::kCfaFromFp | FrameLog::kRestoresFp);
  // Another frame, an exact pc: none of them.
  EXPECT_EQ(cache->Find(kKey, kSp + 16), nullptr);
  EXPECT_EQ(cache->Find(kKey + 1, kSp), nullptr);
  EXPECT_EQ(cache->Find(FrameCache::Key(kPc, true), kSp), nullptr);
  // The same tag keeps it; a walk of another generation or clear count empties the cache.
  cache->Retag(7);
  EXPECT_NE(cache->Find(kKey, kSp), nullptr);
  cache->Retag(8);
  EXPECT_EQ(cache->Find(kKey, kSp), nullptr);
  // A frame without a frame pointer: cfa = sp + 32, fp unchanged (its slot is ra's).
  const CompactRule sp_rule = RuleOf(CompactRule::Kind::kCfaSp, 32, -8, 0);
  e = PutAndFind<ArchX86_64>(*cache, sp_rule, kSp + 32);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->flags, 0u);
  EXPECT_EQ(e->fp_addr, e->ra_addr);
  EXPECT_EQ(e->fp_slot_offset, 0);
}

TEST(FrameCache, AnEndOfTheStackIsAnEntryNoRegionHolds) {
  auto cache = std::make_unique<FrameCache>();
  cache->Retag(7);
  cache->PutEnd(kKey, kSp);
  const FrameCache::Entry* e = cache->Find(kKey, kSp);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->flags, FrameCache::kEndsStack);
  EXPECT_EQ(e->cfa, ~uint64_t{0}) << "above every region's end: the walk's loop stops at it";
  EXPECT_EQ(cache->Find(FrameCache::Key(kPc, true), kSp), nullptr) << "an exact pc's rule is another";
}

TEST(FrameCache, AnEntryNamesItsCallersEntryWhileThatFrameHoldsTheSlot) {
  auto cache = std::make_unique<FrameCache>();
  cache->Retag(7);
  // The callee's step (cfa = sp + 32) read kPc + 0x100 (SlotsOf) as its return address.
  const CompactRule rule = RuleOf(CompactRule::Kind::kCfaSp, 32, -8, 0);
  const uint64_t cfa = kSp + 32, caller_pc = kPc + 0x100;
  cache->Put<ArchX86_64>(kKey, kSp, 0, rule, cfa, SlotsOf(rule, cfa));
  const FrameCache::Entry* callee = cache->Find(kKey, kSp);
  ASSERT_NE(callee, nullptr);
  EXPECT_EQ(FrameCache::HintedCaller(*callee, caller_pc), nullptr) << "no caller entry yet";
  cache->Put<ArchX86_64>(FrameCache::Key(caller_pc, false), cfa, 0, rule, cfa + 32,
                         SlotsOf(rule, cfa + 32));
  const FrameCache::Entry* caller = cache->Find(FrameCache::Key(caller_pc, false), cfa);
  ASSERT_NE(caller, nullptr);
  EXPECT_EQ(FrameCache::HintedCaller(*callee, caller_pc), caller);
  // Another caller now (the slot read afresh says so): Find() decides.
  EXPECT_EQ(FrameCache::HintedCaller(*callee, caller_pc + 4), nullptr);
  // The same pc at another sp (a recursion's other depth) that takes the caller's slot of the
  // direct-mapped cache: not the callee's caller, whose CFA differs.
  uint64_t other_sp = cfa + 16;
  while (FrameCache::Slot(FrameCache::Key(caller_pc, false), other_sp) !=
         FrameCache::Slot(FrameCache::Key(caller_pc, false), cfa)) {
    other_sp += 16;
  }
  cache->Put<ArchX86_64>(FrameCache::Key(caller_pc, false), other_sp, 0, rule, other_sp + 32,
                         SlotsOf(rule, other_sp + 32));
  ASSERT_NE(cache->Find(FrameCache::Key(caller_pc, false), other_sp), nullptr);
  EXPECT_EQ(FrameCache::HintedCaller(*callee, caller_pc), nullptr);
  EXPECT_EQ(cache->Find(FrameCache::Key(caller_pc, false), cfa), nullptr);
}

TEST(FrameCache, ACallersLookupNeverNamesAnExactEntry) {
  auto cache = std::make_unique<FrameCache>();
  cache->Retag(7);
  // A walk's first frame (its pc exact) at kSp, and a callee whose step read kPc with the exact
  // bit set (a garbage return address: x86_64 keeps all 64 bits) at CFA kSp.
  const CompactRule rule = RuleOf(CompactRule::Kind::kCfaSp, 32, -8, 0);
  cache->Put<ArchX86_64>(FrameCache::Key(kPc, true), kSp, 0, rule, kSp + 32,
                         SlotsOf(rule, kSp + 32));
  ASSERT_NE(cache->Find(FrameCache::Key(kPc, true), kSp), nullptr);
  const uint64_t garbage = kPc | FrameCache::kExactPc;
  RuleSlots slots = SlotsOf(rule, kSp);
  slots.ra_val = garbage;
  cache->Put<ArchX86_64>(kKey + 0x40, kSp - 32, 0, rule, kSp, slots);
  const FrameCache::Entry* callee = cache->Find(kKey + 0x40, kSp - 32);
  ASSERT_NE(callee, nullptr);
  EXPECT_EQ(FrameCache::HintedCaller(*callee, garbage), nullptr);
  EXPECT_EQ(cache->FindCaller(garbage, kSp), nullptr);
  // A caller's pc without the bit finds its (non-exact) entry as before.
  cache->Put<ArchX86_64>(kKey, kSp, 0, rule, kSp + 32, SlotsOf(rule, kSp + 32));
  EXPECT_EQ(cache->FindCaller(kPc, kSp), cache->Find(kKey, kSp));
  EXPECT_NE(cache->FindCaller(kPc, kSp), nullptr);
}

TEST(FrameCache, EntersOnlyStepsWhoseSlotsLieBetweenTheFrameAndItsCfa) {
  auto cache = std::make_unique<FrameCache>();
  using Kind = CompactRule::Kind;
  // The return address in the link register: a register, not a slot.
  EXPECT_EQ(PutAndFind<ArchAarch64>(*cache, RuleOf(Kind::kCfaSp, 0, 0, 0), kSp + 16), nullptr);
  // A slot below the frame's sp (cfa = sp + 8, ra at cfa - 16).
  EXPECT_EQ(PutAndFind<ArchX86_64>(*cache, RuleOf(Kind::kCfaSp, 8, -16, 0), kSp + 8), nullptr);
  // The fp slot at the CFA or above, or below sp.
  EXPECT_EQ(PutAndFind<ArchX86_64>(*cache, RuleOf(Kind::kCfaSp, 32, -8, 8), kSp + 32), nullptr);
  EXPECT_EQ(PutAndFind<ArchX86_64>(*cache, RuleOf(Kind::kCfaSp, 32, -8, -40), kSp + 32), nullptr);
  // A CFA that does not climb.
  EXPECT_EQ(PutAndFind<ArchX86_64>(*cache, RuleOf(Kind::kCfaFp, 0, -8, 0), kSp), nullptr);
  // AArch64: lr from the return address's slot is entered; lr from a slot of its own is not.
  CompactRule lr_rule = RuleOf(Kind::kCfaFp, 16, -8, -16);
  lr_rule.lr_offset = -8;
  const FrameCache::Entry* e = PutAndFind<ArchAarch64>(*cache, lr_rule, kSp + 16);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->flags & FrameCache::kRestoresLr, 0u);
  auto other = std::make_unique<FrameCache>();
  lr_rule.lr_offset = -24;
  lr_rule.kind = Kind::kCfaSp;
  lr_rule.cfa_offset = 32;
  EXPECT_EQ(PutAndFind<ArchAarch64>(*other, lr_rule, kSp + 32), nullptr);
}

// A thread's walks choose between the log and the frame cache by windows of kWalkWindow walks.
TEST(FrameCache, AThreadStepsThroughItWhileItsLogServesFewFrames) {
  auto cache = std::make_unique<RuleCache>();
  auto window = [&](uint32_t steps_per_walk) {
    for (uint32_t i = 0; i < RuleCache::kWalkWindow; ++i) {
      cache->CountWalk();
      if (cache->frames() == nullptr) cache->CountSteps(steps_per_walk);
    }
  };
  window(RuleCache::kFrameCacheSteps - 1);
  EXPECT_EQ(cache->frames(), nullptr) << "the log served enough";
  window(RuleCache::kFrameCacheSteps + 1);
  ASSERT_NE(cache->frames(), nullptr) << "a window stepping many frames";
  for (uint32_t i = 1; i < RuleCache::kLogProbe; ++i) window(0);
  EXPECT_NE(cache->frames(), nullptr);
  window(0);
  EXPECT_EQ(cache->frames(), nullptr) << "every kLogProbe-th window walks with the log";
  window(RuleCache::kFrameCacheSteps + 1);
  EXPECT_NE(cache->frames(), nullptr) << "which still served few frames";
  for (uint32_t i = 0; i < RuleCache::kLogProbe; ++i) window(0);
  window(1);
  EXPECT_EQ(cache->frames(), nullptr) << "and now serves them";
}

}  // namespace
}  // namespace stackwalk::internal

// No capture of `served` was walked again uncached: each cached walk went on as the uncached one.
static void ExpectNoRetry(const Served* served, int n) {
  for (int i = 0; i < n; ++i) EXPECT_EQ(served[i].full_retries, 0u) << i;
}

// Captures through the thread's frame cache (EHFRAME, or AUTO), each checked against the same
// capture made uncached.
class FrameCacheWalk : public ::testing::TestWithParam<stackwalk_method> {
 protected:
  void SetUp() override {
    g_method = GetParam();
    ASSERT_TRUE(stackwalk::internal::RuleCache::UseFrameCacheForThisThread(true));
  }
  void TearDown() override { stackwalk::internal::RuleCache::UseFrameCacheForThisThread(false); }
};

// Runs `attempt` (true: the cache served all it should) on a thread that steps through its frame
// cache, on up to three threads until one attempt succeeds; returns how many it took, 0 if none
// did. Which frames share a slot of the direct-mapped cache depends on their sps: about one stack
// layout in a hundred has three or more frames of a test's stacks sharing slots (seen: 3 runs in
// 300). Each thread runs on a stack of its own, all mapped at once: glibc would give a joined
// thread's stack, and so its layout, to the next.
template <class Attempt>
static int LayoutsUntil(Attempt attempt) {
  constexpr size_t kStackBytes = 1 << 20;
  struct Run {
    Attempt* attempt;
    bool done;
  };
  void* stacks[3] = {};
  int layouts = 0;
  bool done = false;
  while (!done && layouts < 3) {
    void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) break;
    stacks[layouts++] = stack;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, kStackBytes);
    Run run{&attempt, false};
    pthread_t thread;
    auto body = [](void* arg) -> void* {
      Run* r = static_cast<Run*>(arg);
      if (!stackwalk::internal::RuleCache::UseFrameCacheForThisThread(true)) return nullptr;
      r->done = (*r->attempt)();
      stackwalk::internal::RuleCache::UseFrameCacheForThisThread(false);
      return nullptr;
    };
    if (pthread_create(&thread, &attr, body, &run) == 0) pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
    done = run.done;
  }
  for (void* stack : stacks) {
    if (stack != nullptr) munmap(stack, kStackBytes);
  }
  return done ? layouts : 0;
}

TEST_P(FrameCacheWalk, RepeatedCapturesStepThroughItAndStayExact) {
  const int layouts = LayoutsUntil([] {
    void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_a};
    Trace cached[4], reference[4];
    Served served[4];
    RunBoth(seq, 4, cached, reference, served);
    ExpectSame(cached, reference, 4);
    ExpectNoRetry(served, 4);
    EXPECT_EQ(served[0].frame_ends, 0u) << "nothing entered yet";
    EXPECT_EQ(served[3].replayed, 0u);
    EXPECT_EQ(served[3].matched, 0u);
    // Once entered, every caller from an entry (but two that may share a slot of the cache), and
    // the end, which the outermost frame's rule says, from the entry that rule's step made.
    return served[3].frame_hits + 3 >= uint64_t(cached[3].n) && served[2].frame_ends == 1 &&
           served[3].frame_ends == 1;
  });
  EXPECT_NE(layouts, 0) << "frames or the end missed in 3 stack layouts";
}

TEST_P(FrameCacheWalk, AFrameReachedThroughAnotherCallerReadsItsOwnReturnAddress) {
  // log_leaf's frame has the same (pc, sp) under both callers: its entry, made under log_via_a,
  // serves log_via_b's capture, whose caller only the slot read afresh tells.
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_b, log_via_a};
  Trace cached[5], reference[5];
  Served served[5];
  RunBoth(seq, 5, cached, reference, served);
  ExpectSame(cached, reference, 5);
  ExpectNoRetry(served, 5);
  EXPECT_NE(cached[3].pcs[1], cached[2].pcs[1]) << "the two callers must differ";
  EXPECT_EQ(cached[4].pcs[1], cached[2].pcs[1]);
  EXPECT_GT(served[3].frame_hits, 0u);
}

// Seven captures of a stack whose middle frame alternates (log_through_a, then b, a, b, ...),
// each checked against the uncached one.
constexpr int kAlternations = 7;
static void AlternateMiddles(Trace* cached, Served* served) {
  void (*const seq[kAlternations])(Trace*) = {log_through_a, log_through_a, log_through_b,
                                              log_through_a, log_through_b, log_through_a,
                                              log_through_b};
  Trace reference[kAlternations];
  RunBoth(seq, kAlternations, cached, reference, served);
  ExpectSame(cached, reference, kAlternations, 7);
  ExpectNoRetry(served, kAlternations);
  EXPECT_NE(cached[2].pcs[2], cached[1].pcs[2]) << "the two middles must differ";
}

TEST_P(FrameCacheWalk, StacksThatDifferInAMiddleFrameComeWholeFromItOnceBothAreSeen) {
  // A frame is entered the second time it is stepped (the first, a rule's first use, is a full
  // step): from the third capture of either stack on, every frame but the end's, and but two
  // that may share a slot of the direct-mapped cache (LayoutsUntil).
  const int layouts = LayoutsUntil([] {
    constexpr int n = kAlternations;
    Trace cached[n];
    Served served[n];
    AlternateMiddles(cached, served);
    bool whole = true;
    for (int i = 5; i < n; ++i) whole &= served[i].frame_hits + 3 >= uint64_t(cached[i].n);
    return whole;
  });
  EXPECT_NE(layouts, 0) << "more than the end's and two frames a capture missed, in 3 layouts";
}

TEST_P(FrameCacheWalk, TwoCaptureSitesOfOneLayoutStayExact) {
  // The capture's own frame (its pc exact) has the same (pc, sp) under both sites.
  void (*const seq[])(Trace*) = {log_leaf_a, log_leaf_a, log_leaf_b, log_leaf_a, log_leaf_b,
                                 log_leaf_a, log_leaf_b};
  constexpr int n = 7;
  Trace cached[n], reference[n];
  Served served[n];
  RunBoth(seq, n, cached, reference, served);
  ExpectSame(cached, reference, n, 2);
  ExpectNoRetry(served, n);
  EXPECT_NE(cached[2].pcs[0], cached[1].pcs[0]) << "the two capture sites must differ";
  EXPECT_GT(served[n - 1].frame_hits, 0u);
}

// Four captures through log_smash_caller, the fourth while a return-address slot holds data
// (g_log_not_code): the walk must refuse it as the rule's step does, ending at the frame that
// holds it, as the uncached walk does. Returns what the cache served the fourth.
static Served SmashedCaptureEndsAtTheSmashedFrame() {
  void (*const seq[])(Trace*) = {log_smash_caller, log_smash_caller, log_smash_caller,
                                 log_smash_caller};
  g_log_smash_calls = 0;  // the fourth capture of each pass is the smashed one
  Trace cached[4], reference[4];
  Served served[4];
  RunBoth(seq, 4, cached, reference, served);
  if (!g_log_smash_layout_ok) return served[3];
  EXPECT_GT(cached[2].n, 4);
  EXPECT_EQ(cached[3].n, 2);
  EXPECT_EQ(reference[3].n, 2);
  EXPECT_EQ(cached[3].pcs[1], reference[3].pcs[1]);
  for (int k = 0; k < cached[3].n; ++k) {
    const char* pc = static_cast<const char*>(cached[3].pcs[k]);
    EXPECT_FALSE(pc >= g_log_not_code && pc <= g_log_not_code + sizeof(g_log_not_code)) << k;
  }
  return served[3];
}

TEST_P(FrameCacheWalk, AReturnAddressOutsideCodeEndsTheWalk) {
  const Served served = SmashedCaptureEndsAtTheSmashedFrame();
  if (!g_log_smash_layout_ok) GTEST_SKIP() << "the return address is not beside the frame record";
  EXPECT_GT(served.frame_hits, 0u) << "the smashed capture never stepped through an entry";
}

TEST_P(FrameCacheWalk, AnEntryWhoseCfaCameFromFpServesThatFpOnly) {
  // log_alloca_frame's frame has the same (pc, sp) under both callers and another fp: its entry,
  // made under log_alloca_small, must not give log_alloca_big's walk the other CFA.
  void (*const seq[])(Trace*) = {log_alloca_small, log_alloca_small, log_alloca_small,
                                 log_alloca_big, log_alloca_small};
  Trace cached[5], reference[5];
  Served served[5];
  RunBoth(seq, 5, cached, reference, served);
  if (g_alloca_sp[0] != g_alloca_sp[1] || g_alloca_fp[0] == g_alloca_fp[1]) {
    GTEST_SKIP() << "the two callers' frames do not give one sp and two fps here";
  }
  ExpectSame(cached, reference, 5, 4);  // log_leaf, log_alloca_frame, the caller, Invoke
  ExpectNoRetry(served, 5);
  EXPECT_NE(cached[3].pcs[2], cached[2].pcs[2]) << "the two callers must differ";
  EXPECT_GT(served[3].frame_hits, 0u);
}

TEST_P(FrameCacheWalk, AModuleMapRebuildRetiresEveryEntry) {
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a};
  Trace cached[3], reference[3];
  Served served[3];
  RunBoth(seq, 3, cached, reference, served);
  ASSERT_GT(served[2].frame_hits, 0u);
  // A rebuild may move code (dlclose, then dlopen at the same address): no entry of the old
  // generation serves a walk of the new one.
  ASSERT_TRUE(stackwalk::internal::ModuleMap::Global().Rebuild());
  RunBoth(seq, 1, cached, reference, served);
  EXPECT_EQ(served[0].frame_hits, 0u);
  ExpectSame(cached, reference, 1);
  RunBoth(seq, 2, cached, reference, served);
  EXPECT_GT(served[1].frame_hits, 0u) << "entered again for the new generation";
}

// Captures of a thread that has a frame cache and logs its walks (its log serves them well): a
// frame the log does not replay is stepped from its entry and recorded in the log.
class FrameCacheWhileLogging : public ::testing::TestWithParam<stackwalk_method> {
 protected:
  void SetUp() override {
    g_method = GetParam();
    ASSERT_TRUE(stackwalk::internal::RuleCache::UseFrameCacheForThisThread(true));
    ASSERT_TRUE(stackwalk::internal::RuleCache::UseFrameCacheForThisThread(false));
  }
};

TEST_P(FrameCacheWhileLogging, AMiddleFrameTheLogDoesNotReplayIsSteppedFromItsEntry) {
  // Each capture diverges from the log at the middle, steps the frames there and joins the
  // logged outer frames again: from the third capture of either stack on, those steps come from
  // entries, and what they record lets the log replay as before.
  constexpr int n = kAlternations;
  Trace cached[n];
  Served served[n];
  AlternateMiddles(cached, served);
  for (int i = 5; i < n; ++i) {
    EXPECT_GT(served[i].frame_hits, 0u) << i;
    EXPECT_GE(served[i].matched, 3u) << i;
    EXPECT_GE(served[i].replayed + served[i].frame_hits + 1, static_cast<uint64_t>(cached[i].n))
        << i;
  }
}

TEST_P(FrameCacheWhileLogging, AReturnAddressOutsideCodeEndsTheWalk) {
  SmashedCaptureEndsAtTheSmashedFrame();
  if (!g_log_smash_layout_ok) GTEST_SKIP() << "the return address is not beside the frame record";
}

// Random stacks: two functions of different frame sizes chosen by the bits of a number, at
// random depths, each capture made twice at the leaf from one call site, through the thread's
// cache and then uncached (holding it).
struct TwoTraces {
  Trace cached;
  Trace reference;
};
extern "C" {
__attribute__((noinline)) void random_leaf(TwoTraces* t) {
  for (int pass = 0; pass < 2; ++pass) {
    stackwalk::internal::RuleCache* hold =
        pass == 1 ? stackwalk::internal::RuleCache::Acquire() : nullptr;
    Trace& out = pass == 0 ? t->cached : t->reference;
    out.n = stackwalk_backtrace(out.pcs, kTraceMax, g_method);
    if (hold != nullptr) hold->Release();
  }
  __asm__ volatile("" ::: "memory");
}
void random_b(int depth, uint32_t bits, TwoTraces* t);
__attribute__((noinline)) void random_a(int depth, uint32_t bits, TwoTraces* t) {
  volatile char pad[16] = {};
  if (depth == 0) {
    random_leaf(t);
  } else {
    ((bits & 1) != 0 ? random_a : random_b)(depth - 1, bits >> 1, t);
  }
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void random_b(int depth, uint32_t bits, TwoTraces* t) {
  volatile char pad[48] = {};
  if (depth == 0) {
    random_leaf(t);
  } else {
    ((bits & 1) != 0 ? random_a : random_b)(depth - 1, bits >> 1, t);
  }
  __asm__ volatile("" : : "r"(pad) : "memory");
}
}

TEST_P(FrameCacheWhileLogging, RandomStacksOfAFreshThreadStayExactWhicheverWayItWalks) {
  // A fresh thread's own cache: it starts logging, its windows step many frames (each stack
  // differs from the last at a random depth), it switches to stepping through the frame cache,
  // and every 16th window logs again. 24 windows of walks; every capture against the uncached.
  const stackwalk_method method = GetParam();
  int mismatched = 0, compared = 0;
  std::string first_mismatch;
  Served served;
  std::thread worker([&] {
    g_method = method;
    const Served before = ServedSoFar();
    uint32_t x = 12345;
    for (uint32_t i = 0; i < 24 * stackwalk::internal::RuleCache::kWalkWindow; ++i) {
      x = x * 1103515245u + 12345u;
      TwoTraces t;
      random_a(4 + static_cast<int>((x >> 8) % 8), x >> 12, &t);
      ++compared;
      bool same = t.cached.n == t.reference.n && t.cached.n > 4;
      // From frame 1 on: frame 0 is the capture's own call, which the compiler may place twice.
      for (int k = 1; same && k < t.cached.n; ++k) same = t.cached.pcs[k] == t.reference.pcs[k];
      if (!same && mismatched++ == 0) {
        first_mismatch = "capture " + std::to_string(i) + ": " + std::to_string(t.cached.n) +
                         " frames against " + std::to_string(t.reference.n);
        for (int k = 1; k < t.cached.n && k < t.reference.n; ++k) {
          if (t.cached.pcs[k] != t.reference.pcs[k]) {
            first_mismatch += ", first differing at " + std::to_string(k);
            break;
          }
        }
      }
    }
    const Served after = ServedSoFar();
    served = Served{after.replayed - before.replayed, after.matched - before.matched,
                    after.frame_hits - before.frame_hits, after.full_retries - before.full_retries};
  });
  worker.join();
  EXPECT_EQ(mismatched, 0) << "of " << compared << "; " << first_mismatch;
  EXPECT_GT(served.frame_hits, 0u) << "the thread never stepped through its frame cache";
  EXPECT_GT(served.replayed, 0u) << "the thread never replayed its log";
  EXPECT_EQ(served.full_retries, 0u);
}

INSTANTIATE_TEST_SUITE_P(Methods, FrameCacheWhileLogging,
                         ::testing::Values(STACKWALK_EHFRAME, STACKWALK_AUTO),
                         [](const auto& info) {
                           return info.param == STACKWALK_AUTO ? "Auto" : "EhFrame";
                         });

INSTANTIATE_TEST_SUITE_P(Methods, FrameCacheWalk,
                         ::testing::Values(STACKWALK_EHFRAME, STACKWALK_AUTO),
                         [](const auto& info) {
                           return info.param == STACKWALK_AUTO ? "Auto" : "EhFrame";
                         });

// A thread's table goes back to the pool at its exit, before later keys' destructors run on it:
// one that captures must go uncached, as another thread may hold the table by then.
namespace {
pthread_key_t g_late_key;
bool g_late_destructor_had_a_table = true;
void LateDestructor(void*) {
  void* pcs[8];
  stackwalk_backtrace(pcs, 8, STACKWALK_EHFRAME);
  stackwalk::internal::RuleCache* cache = stackwalk::internal::RuleCache::Acquire();
  g_late_destructor_had_a_table = cache != nullptr;
  if (cache != nullptr) cache->Release();
}
}  // namespace

TEST(FrameCacheThreads, AThreadPastItsTableGivenBackWalksUncached) {
  ASSERT_EQ(pthread_key_create(&g_late_key, LateDestructor), 0);  // after the library's key
  std::thread worker([] {
    void* pcs[8];
    stackwalk_backtrace(pcs, 8, STACKWALK_EHFRAME);  // claims a table
    pthread_setspecific(g_late_key, &g_late_key);
  });
  worker.join();
  pthread_key_delete(g_late_key);
  EXPECT_FALSE(g_late_destructor_had_a_table);
}

TEST(FrameCacheThreads, AThreadThatClaimsADeadThreadsTableStartsLogging) {
  stackwalk::internal::RuleCache* first = nullptr;
  std::thread stepping([&] {
    ASSERT_TRUE(stackwalk::internal::RuleCache::UseFrameCacheForThisThread(true));
    first = stackwalk::internal::RuleCache::Acquire();
    ASSERT_NE(first->frames(), nullptr);
    first->Release();
  });
  stepping.join();
  stackwalk::internal::RuleCache* second = nullptr;
  bool logging = false;
  std::thread next([&] {
    second = stackwalk::internal::RuleCache::Acquire();
    if (second == nullptr) return;
    logging = second->frames() == nullptr;
    second->Release();
  });
  next.join();
  if (second != first) GTEST_SKIP() << "the next thread got another table from the pool";
  EXPECT_TRUE(logging) << "the dead thread's way of walking stayed with its table";
}
