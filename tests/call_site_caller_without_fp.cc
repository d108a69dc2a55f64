// call_site_capture_test.cc's caller without a frame pointer (this file is compiled with
// -fomit-frame-pointer): a CFI walk from the callee's call site finds this frame's CFA from sp.
#include "call_site_traces.h"

extern "C" __attribute__((noinline)) void call_site_caller_without_fp(CallSiteTraces* t) {
  volatile char pad[40] = {};
  t->n_here = stackwalk_backtrace(t->here, CallSiteTraces::kMax, t->method);
  call_site_callee(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
