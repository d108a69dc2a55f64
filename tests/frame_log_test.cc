// The frame logs on real stacks (FrameLog for CFI walks, FpChainLog for frame-pointer walks):
// repeated captures replay logged frames, and a frame reached with the same (pc, sp) through
// another caller is caught by its changed return-address slot.
#include "core/frame_log.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/rule_cache.h"
#include "logged_stacks.h"
#include "stackwalk/capture.h"
#include "stackwalk/stackwalk.h"


// The log tests' view of RunBoth: what the log replayed in the last capture, and what each
// capture matched.
static void RunBoth(void (*const* seq)(Trace*), int n, Trace* cached, Trace* reference,
                    uint64_t* replayed_by_last, uint64_t* matched = nullptr) {
  std::vector<Served> served(static_cast<size_t>(n));
  RunBoth(seq, n, cached, reference, served.data());
  *replayed_by_last = served[static_cast<size_t>(n - 1)].replayed;
  for (int i = 0; matched != nullptr && i < n; ++i) matched[i] = served[static_cast<size_t>(i)].matched;
}

class FrameLog : public ::testing::TestWithParam<stackwalk_method> {
 protected:
  void SetUp() override {
    g_method = GetParam();
    // The log, not the frame cache, whatever the thread's earlier walks chose.
    ASSERT_TRUE(stackwalk::internal::RuleCache::UseFrameCacheForThisThread(false));
  }
};

TEST_P(FrameLog, RepeatedCapturesReplayAndStayExact) {
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_a};
  Trace cached[4], reference[4];
  uint64_t replayed = 0;
  RunBoth(seq, 4, cached, reference, &replayed);
  EXPECT_GT(replayed, 0u) << "the warm capture did not use the log";
  ExpectSame(cached, reference, 4);
}

TEST_P(FrameLog, ChangedReturnAddressSlotIsCaught) {
  // log_leaf's frame has the same (pc, sp) under both callers; only the slot holding its return
  // address tells them apart.
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_b, log_via_a};
  Trace cached[5], reference[5];
  uint64_t replayed = 0;
  uint64_t matched[5] = {};
  RunBoth(seq, 5, cached, reference, &replayed, matched);
  EXPECT_GT(matched[3], 0u) << "log_via_b's capture never reached a logged frame";
  ExpectSame(cached, reference, 5);
  EXPECT_NE(cached[3].pcs[1], cached[2].pcs[1]) << "the two callers must differ";
  EXPECT_EQ(cached[4].pcs[1], cached[2].pcs[1]);
}

TEST_P(FrameLog, AChangedMiddleFrameIsSplicedAndTheFramesAroundItReplay) {
  // Alternating middles: every capture diverges at log_inner's frame, steps the middle and
  // meets the logged outer frames again; the frames it stepped replace the stale ones (before
  // this, the first changed slot dropped the log and the rest of the walk was stepped).
  void (*const seq[])(Trace*) = {log_through_a, log_through_a, log_through_b, log_through_a,
                                 log_through_b, log_through_a, log_through_b};
  constexpr int n = 7;
  Trace cached[n], reference[n];
  uint64_t replayed = 0;
  uint64_t matched[n] = {};
  RunBoth(seq, n, cached, reference, &replayed, matched);
  ExpectSame(cached, reference, n, 7);
  EXPECT_NE(cached[2].pcs[2], cached[1].pcs[2]) << "the two middles must differ";
  // From the fifth capture on both middles' rules are cached: each capture matches the log
  // three times (log_inner's frame, outer2's and Invoke's: log_through_a/_b differ as well),
  // and steps only the first frame and two frames at each of the two divergences.
  for (int i = 4; i < n; ++i) EXPECT_GE(matched[i], 3u) << i;
  EXPECT_GE(replayed + 5, static_cast<uint64_t>(cached[n - 1].n));
}

TEST_P(FrameLog, ARepeatedCaptureReplaysFromItsFirstFrame) {
  // The same capture site at the same depth: the capture's own frame (its pc exact) matches the
  // logged one, so every frame after it is replayed and none is stepped. Before, an exact frame
  // never matched and each capture stepped its first frame.
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_a};
  Trace cached[4], reference[4];
  uint64_t replayed = 0;
  uint64_t matched[4] = {};
  RunBoth(seq, 4, cached, reference, &replayed, matched);
  ExpectSame(cached, reference, 4);
  // The entry's own frame is dropped (pcs[0] is log_leaf): all n frames come from the log.
  EXPECT_EQ(replayed, static_cast<uint64_t>(cached[3].n));
  EXPECT_EQ(matched[3], 1u);
}

TEST_P(FrameLog, AFirstFrameWhoseOwnSlotChangedStaysExact) {
  // Alternating capture sites: each capture matches at its first frame, finds that frame's own
  // return-address slot changed, and steps from it with its pc still exact; the frame it logs
  // in place of the stale one is exact too, so the next capture matches it again (a frame
  // logged as inexact would never match an exact one: one match a capture instead of two).
  void (*const seq[])(Trace*) = {log_leaf_a, log_leaf_a, log_leaf_b, log_leaf_a, log_leaf_b,
                                 log_leaf_a, log_leaf_b};
  constexpr int n = 7;
  Trace cached[n], reference[n];
  uint64_t replayed = 0;
  uint64_t matched[n] = {};
  RunBoth(seq, n, cached, reference, &replayed, matched);
  ExpectSame(cached, reference, n, 2);
  EXPECT_NE(cached[2].pcs[0], cached[1].pcs[0]) << "the two capture sites must differ";
  // The first frame, then Invoke's frame (the same call site through a pointer) and the rest.
  for (int i = 4; i < n; ++i) EXPECT_EQ(matched[i], 2u) << i;
}

TEST_P(FrameLog, AReturnAddressOutsideCodeEndsTheWalkThroughTheLog) {
  // Warm captures cache the rules, log the frames and keep the code range the walk checks return
  // addresses against; then the same frames with one return-address slot pointing at data. The
  // cached loop reaches that slot by the log's divergence and must refuse it (as the full step
  // does), ending the walk at the frame that holds it, as the uncached walk does.
  void (*const seq[])(Trace*) = {log_smash_caller, log_smash_caller, log_smash_caller,
                                 log_smash_caller};
  g_log_smash_calls = 0;  // the fourth capture of each pass is the smashed one
  Trace cached[4], reference[4];
  uint64_t replayed = 0;
  uint64_t matched[4] = {};
  RunBoth(seq, 4, cached, reference, &replayed, matched);
  if (!g_log_smash_layout_ok) GTEST_SKIP() << "the return address is not beside the frame record";
  EXPECT_GT(matched[3], 0u) << "the smashed capture never reached a logged frame";
  ASSERT_GT(cached[2].n, 4) << "the warm captures went on past log_smash_frame";
  // log_leaf, then log_smash_frame (through the call the warm captures logged), whose caller is
  // refused.
  ASSERT_EQ(cached[3].n, 2);
  EXPECT_EQ(cached[3].pcs[1], cached[2].pcs[1]);
  ASSERT_EQ(reference[3].n, 2);
  EXPECT_EQ(reference[3].pcs[1], cached[3].pcs[1]);
  for (int k = 0; k < cached[3].n; ++k) {
    const char* pc = static_cast<const char*>(cached[3].pcs[k]);
    EXPECT_FALSE(pc >= g_log_not_code && pc <= g_log_not_code + sizeof(g_log_not_code)) << k;
  }
  // And the walk recovers: the next capture through the restored slot goes on past it (from
  // here, not RunBoth: the frames from Invoke's caller on differ).
  Trace after;
  g_log_smash_calls = 0;
  Invoke(log_smash_caller, &after);
  ASSERT_GE(after.n, 4);
  for (int k = 1; k < 4; ++k) EXPECT_EQ(after.pcs[k], cached[2].pcs[k]) << k;
}

// A walker without a log, and one of a log that holds no walk yet, match nothing and never
// read past their frames (the search for a frame to replay from stops at the log's sentinel).
TEST(FrameLogCfi, AnEmptyLogMatchesNothing) {
  stackwalk::internal::FrameLog::Walker none;
  EXPECT_EQ(none.Match(0x1000, 0x7000, 0, false, false), -1);
  EXPECT_EQ(none.Match(0, UINT64_MAX - 1, 0, false, true), -1);
  auto log = std::make_unique<stackwalk::internal::FrameLog>();
  log->BeginWalk(stackwalk::internal::FrameLog::Tag(1, STACKWALK_EHFRAME));
  stackwalk::internal::FrameLog::Walker empty(*log);
  EXPECT_EQ(empty.Match(0x1000, 0x7000, 0, false, false), -1);
  EXPECT_EQ(empty.Match(0x1000, UINT64_MAX - 1, 0, false, false), -1);
}

// Skip and truncation through a replay (shared by both methods; the CFI walk reaches deep
// enough here for the skipped frames to lie in the logged part).
TEST(FrameLogCfi, SkipAndMaxWithALoggedStack) {
  g_method = STACKWALK_EHFRAME;
  Trace warm;
  for (int i = 0; i < 3; ++i) log_via_a(&warm);
  ASSERT_GT(warm.n, 4);
  // Captures from the same depth as log_leaf's: skip and truncation through the replay.
  void* some[3];
  int n = 0;
  const auto method = stackwalk::Method::kEhFrame;
  for (int i = 0; i < 3; ++i) n = stackwalk::Capture(some, 3, method, 1);
  ASSERT_EQ(n, 3);
  void* all[64];
  int n_all = stackwalk::Capture(all, 64, method, 0);
  ASSERT_GT(n_all, 4);
  EXPECT_EQ(some[0], all[1]);
  EXPECT_EQ(some[1], all[2]);
  EXPECT_EQ(some[2], all[3]);
}

// The frame-pointer walk's own log (FpChainLog): every capture checked against the same capture
// made without the thread's cache, where nothing is logged or replayed.
TEST(FpChainLog, RepeatedCapturesReplayEveryRecordAndStayExact) {
  g_method = STACKWALK_FP;
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_a};
  Trace cached[4], reference[4];
  uint64_t replayed = 0;
  RunBoth(seq, 4, cached, reference, &replayed);
  ExpectSame(cached, reference, 4);
  // Every frame after the capture's own comes from a record the last capture logged.
  EXPECT_EQ(replayed, static_cast<uint64_t>(cached[3].n));
}

TEST(FpChainLog, ChangedReturnAddressSlotIsCaught) {
  g_method = STACKWALK_FP;
  // log_leaf's record sits at the same address under both callers; only its return address
  // tells them apart.
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_via_a, log_via_b, log_via_a};
  Trace cached[5], reference[5];
  uint64_t replayed = 0;
  RunBoth(seq, 5, cached, reference, &replayed);
  ExpectSame(cached, reference, 5);
  EXPECT_NE(cached[3].pcs[1], cached[2].pcs[1]) << "the two callers must differ";
  EXPECT_EQ(cached[4].pcs[1], cached[2].pcs[1]);
  EXPECT_GT(replayed, 0u);
}

TEST(FpChainLog, AChangedMiddleRecordIsSteppedAndTheRecordsAroundItReplay) {
  g_method = STACKWALK_FP;
  // Alternating middles: each capture replays the inner records, finds the middle's changed,
  // steps it and joins the logged outer records again.
  void (*const seq[])(Trace*) = {log_through_a, log_through_a, log_through_b, log_through_a,
                                 log_through_b, log_through_a, log_through_b};
  constexpr int n = 7;
  Trace cached[n], reference[n];
  uint64_t replayed = 0;
  RunBoth(seq, n, cached, reference, &replayed);
  ExpectSame(cached, reference, n, 7);
  EXPECT_NE(cached[2].pcs[2], cached[1].pcs[2]) << "the two middles must differ";
  // At most the records whose words changed (the middle's and its neighbours') are stepped.
  EXPECT_GE(replayed + 4, static_cast<uint64_t>(cached[n - 1].n));
}

TEST(FpChainLog, ADeeperCaptureReplaysTheOuterRecordsItShares) {
  g_method = STACKWALK_FP;
  // log_through_a has four more records than log_via_a above the part they share (Invoke's,
  // RunBoth's and the test body's): written in place, its inner records would overwrite the
  // shared ones before it reached them.
  void (*const seq[])(Trace*) = {log_via_a, log_via_a, log_through_a};
  Trace cached[3], reference[3];
  uint64_t replayed = 0;
  // RunBoth's call of Invoke is frame 3 under log_via_a and 7 under log_through_a.
  RunBoth(seq, 3, cached, reference, &replayed, nullptr);
  ExpectSame(&cached[0], &reference[0], 2, 3);
  ExpectSame(&cached[2], &reference[2], 1, 7);
  EXPECT_GE(replayed, 2u) << "the deeper capture replayed none of the records it shares";
  // And back: the shallower capture joins the deeper one's log (a copy to lower indices).
  void (*const back[])(Trace*) = {log_through_a, log_through_a, log_via_a};
  RunBoth(back, 3, cached, reference, &replayed, nullptr);
  ExpectSame(&cached[0], &reference[0], 2, 7);
  ExpectSame(&cached[2], &reference[2], 1, 3);
  EXPECT_GE(replayed, 2u) << "the shallower capture replayed none of the records it shares";
}

extern "C" {
// A capture three frame records deep (gtest's own frames have none).
__attribute__((noinline)) int fp_capture_1(void** pcs, int max, int skip) {
  int n = stackwalk::Capture(pcs, max, stackwalk::Method::kFramePointer, skip);
  __asm__ volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int fp_capture_2(void** pcs, int max, int skip) {
  int n = fp_capture_1(pcs, max, skip);
  __asm__ volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int fp_capture_3(void** pcs, int max, int skip) {
  int n = fp_capture_2(pcs, max, skip);
  __asm__ volatile("" ::: "memory");
  return n;
}
}

// One call site for every capture, so that only the test body's own frame differs.
__attribute__((noinline)) static int FpCaptureHere(void** pcs, int max, int skip) {
  int n = fp_capture_3(pcs, max, skip);
  __asm__ volatile("" ::: "memory");
  return n;
}

TEST(FpChainLog, SkipAndMaxThroughTheLog) {
  // pcs[0..3]: fp_capture_1, _2, _3 and FpCaptureHere; then the test body's call site.
  void* all[64];
  int n_all = 0;
  for (int i = 0; i < 3; ++i) n_all = FpCaptureHere(all, 64, 0);
  ASSERT_GE(n_all, 5);
  // Skip and truncation through a replay of the same records.
  void* some[3];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(FpCaptureHere(some, 3, 1), 3);
  EXPECT_EQ(some[0], all[1]);
  EXPECT_EQ(some[1], all[2]);
  EXPECT_EQ(some[2], all[3]);
  // A short capture leaves a short log: the next full one replays it and steps the rest.
  void* again[64];
  ASSERT_EQ(FpCaptureHere(again, 64, 0), n_all);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(again[i], all[i]) << i;
  // The same from the thread's cache held (no log at all): what a fresh climb gives.
  stackwalk::internal::RuleCache* hold = stackwalk::internal::RuleCache::Acquire();
  void* fresh[64];
  void* fresh_some[3];
  const int n_fresh = FpCaptureHere(fresh, 64, 0);
  const int n_fresh_some = FpCaptureHere(fresh_some, 3, 1);
  if (hold != nullptr) hold->Release();
  ASSERT_EQ(n_fresh, n_all);
  ASSERT_EQ(n_fresh_some, 3);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fresh[i], all[i]) << i;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fresh_some[i], some[i]) << i;
}

// The two methods that walk CFI keep FrameLog; a frame-pointer walk keeps FpChainLog (above).
INSTANTIATE_TEST_SUITE_P(Methods, FrameLog, ::testing::Values(STACKWALK_EHFRAME, STACKWALK_AUTO),
                         [](const auto& info) { return info.param == STACKWALK_AUTO ? "Auto" : "EhFrame"; });
