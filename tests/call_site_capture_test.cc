// CaptureFromCallSite (src/api/call_site_capture.h): a walk from what a called function knows of
// its caller (its return address, CFA and saved frame pointer) gives the caller's stack as a
// capture inside the caller does, with every method, from a caller with and without a frame
// pointer, and repeated through the thread's frame logs.
#include "api/call_site_capture.h"

#include <gtest/gtest.h>

#include "call_site_traces.h"
#include "core/rule_cache.h"

namespace {

// Frames either log served so far (the CFI walk's FrameLog, the frame-pointer walk's FpChainLog).
uint64_t ReplayedSoFar() {
  stackwalk::internal::RuleCache* cache = stackwalk::internal::RuleCache::Acquire();
  const uint64_t n =
      cache != nullptr ? cache->log().replayed_frames() + cache->fp_log().replayed() : 0;
  if (cache != nullptr) cache->Release();
  return n;
}

}  // namespace

extern "C" {
__attribute__((noinline)) void call_site_callee(CallSiteTraces* t) {
  t->return_address = __builtin_return_address(0);
  const uint64_t before = ReplayedSoFar();
  t->n_site = stackwalk::internal::CaptureFromCallSite(STACKWALK_CALL_SITE(), t->from_site,
                                                       CallSiteTraces::kMax, t->method);
  t->replayed = ReplayedSoFar() - before;
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void call_site_caller(CallSiteTraces* t) {
  t->n_here = stackwalk_backtrace(t->here, CallSiteTraces::kMax, t->method);  // here[0]: this one
  call_site_callee(t);
  __asm__ volatile("" ::: "memory");
}
}

class CallSiteCapture : public ::testing::TestWithParam<stackwalk_method> {};

TEST_P(CallSiteCapture, GivesTheCallersStackFromItsCallOn) {
  if (!STACKWALK_HAS_CALL_SITE_CAPTURE) GTEST_SKIP() << "no capture from a call site here";
  for (int round = 0; round < 6; ++round) {
    // A frame-pointer walk through a caller without one follows whatever rbp/x29 holds at each
    // point, which such a caller may change between its capture and its call: not comparable.
    if (GetParam() == STACKWALK_FP && round >= 3) break;
    CallSiteTraces t;
    t.method = GetParam();
    (round < 3 ? call_site_caller : call_site_caller_without_fp)(&t);
    // FP: gtest has no frame pointers (2 or 3 frames here; fewer where a sanitizer's build adds
    // frames without records).
    ASSERT_GE(t.n_here, GetParam() == STACKWALK_FP ? 1 : 3) << round;
    // The caller's call of the callee first, then the caller's callers as the caller saw them.
    ASSERT_EQ(t.n_site, t.n_here) << round;
    EXPECT_EQ(t.from_site[0], t.return_address) << round;
    EXPECT_NE(t.from_site[0], t.here[0]) << round;
    for (int i = 1; i < t.n_here; ++i) EXPECT_EQ(t.from_site[i], t.here[i]) << round << " " << i;
    // The caller's own capture has just logged the frames outside it (their rules cached since
    // the first round): the walk from the call site takes them from the log.
    if (round % 3 != 0 && t.n_here > 2) EXPECT_GT(t.replayed, 0u) << round;
  }
}

TEST(CallSiteCaptureArguments, AreCheckedAsCapturesAre) {
  if (!STACKWALK_HAS_CALL_SITE_CAPTURE) GTEST_SKIP() << "no capture from a call site here";
  void* pcs[4];
  const stackwalk::internal::CallSite site{0, 0, 0};
  EXPECT_EQ(stackwalk::internal::CaptureFromCallSite(site, nullptr, 4, STACKWALK_EHFRAME),
            STACKWALK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stackwalk::internal::CaptureFromCallSite(site, pcs, -1, STACKWALK_EHFRAME),
            STACKWALK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stackwalk::internal::CaptureFromCallSite(site, pcs, 0, STACKWALK_EHFRAME), 0);
  // No stack holds sp 0.
  EXPECT_EQ(stackwalk::internal::CaptureFromCallSite(site, pcs, 4, STACKWALK_EHFRAME),
            STACKWALK_ERROR_NO_STACK);
}

INSTANTIATE_TEST_SUITE_P(Methods, CallSiteCapture,
                         ::testing::Values(STACKWALK_FP, STACKWALK_EHFRAME, STACKWALK_AUTO),
                         [](const auto& info) {
                           return info.param == STACKWALK_FP      ? "Fp"
                                  : info.param == STACKWALK_AUTO ? "Auto"
                                                                 : "EhFrame";
                         });
