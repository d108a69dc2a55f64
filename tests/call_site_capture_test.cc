// CaptureFromCallSite (src/api/call_site_capture.h): a walk from what a called function knows of
// its caller (its return address, CFA and saved frame pointer) gives the caller's stack as a
// capture inside the caller does, with every method, and twice in a row (the second through the
// thread's frame logs).
#include "api/call_site_capture.h"

#include <gtest/gtest.h>

#include "stackwalk/stackwalk.h"

namespace {

constexpr int kMax = 64;

struct Traces {
  void* from_site[kMax];
  int n_site = 0;
  void* return_address = nullptr;  // where the callee returns to, as it sees it
  void* here[kMax];
  int n_here = 0;
};

stackwalk_method g_method = STACKWALK_EHFRAME;

}  // namespace

extern "C" {
__attribute__((noinline)) void call_site_callee(Traces* t) {
  t->return_address = __builtin_return_address(0);
  t->n_site = stackwalk::internal::CaptureFromCallSite(STACKWALK_CALL_SITE(), t->from_site, kMax,
                                                       g_method);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void call_site_caller(Traces* t) {
  t->n_here = stackwalk_backtrace(t->here, kMax, g_method);  // here[0] is in this function
  call_site_callee(t);
  __asm__ volatile("" ::: "memory");
}
// The same without a frame pointer (GCC), so that the CFI walk finds the caller's CFA from the
// call site's sp, not from fp.
#if defined(__clang__)
#define STACKWALK_TEST_NO_FP
#else
#define STACKWALK_TEST_NO_FP __attribute__((optimize("omit-frame-pointer")))
#endif
__attribute__((noinline)) STACKWALK_TEST_NO_FP void call_site_caller_without_fp(Traces* t) {
  volatile char pad[40] = {};
  t->n_here = stackwalk_backtrace(t->here, kMax, g_method);
  call_site_callee(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
}

class CallSiteCapture : public ::testing::TestWithParam<stackwalk_method> {};

TEST_P(CallSiteCapture, GivesTheCallersStackFromItsCallOn) {
  g_method = GetParam();
  for (int round = 0; round < 4; ++round) {
    Traces t;
    (round < 2 ? call_site_caller : call_site_caller_without_fp)(&t);
    ASSERT_GE(t.n_here, 2) << round;  // gtest itself has no frame pointers: 2 or 3 with FP
    // The caller's call of the callee first, then the caller's callers as the caller saw them.
    ASSERT_EQ(t.n_site, t.n_here) << round;
    EXPECT_EQ(t.from_site[0], t.return_address) << round;
    EXPECT_NE(t.from_site[0], t.here[0]) << round;
    for (int i = 1; i < t.n_here; ++i) EXPECT_EQ(t.from_site[i], t.here[i]) << round << " " << i;
  }
}

TEST(CallSiteCaptureArguments, AreCheckedAsCapturesAre) {
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
