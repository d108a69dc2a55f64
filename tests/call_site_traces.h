// What call_site_capture_test.cc's callers and callee share (the callers are in two files, one
// compiled without frame pointers).
#ifndef STACKWALK_TESTS_CALL_SITE_TRACES_H_
#define STACKWALK_TESTS_CALL_SITE_TRACES_H_

#include <cstdint>

#include "stackwalk/stackwalk.h"

struct CallSiteTraces {
  static constexpr int kMax = 64;
  stackwalk_method method = STACKWALK_EHFRAME;
  void* from_site[kMax];
  int n_site = 0;
  void* return_address = nullptr;  // where the callee returns to, as it sees it
  uint64_t replayed = 0;           // frames the thread's logs served the callee's capture
  void* here[kMax];
  int n_here = 0;
};

extern "C" {
// Captures from its call site into from_site[].
void call_site_callee(CallSiteTraces* t);
// Capture into here[], then call call_site_callee: with a frame pointer, and without
// (call_site_caller_without_fp.cc, compiled with -fomit-frame-pointer).
void call_site_caller(CallSiteTraces* t);
void call_site_caller_without_fp(CallSiteTraces* t);
}

#endif  // STACKWALK_TESTS_CALL_SITE_TRACES_H_
