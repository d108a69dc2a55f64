// Stacks for the tests of what a thread's cache serves repeated captures (frame_log_test.cc:
// FrameLog and FpChainLog; frame_cache_test.cc: FrameCache): leaf captures under callers with
// identical frames, a stack that differs in one middle frame, two capture sites of one layout,
// a frame whose return-address slot is smashed, and RunBoth(), which checks every cached capture
// against the same capture made uncached. Built with frame pointers (logged_stacks.cc).
#ifndef STACKWALK_TESTS_LOGGED_STACKS_H_
#define STACKWALK_TESTS_LOGGED_STACKS_H_

#include <cstdint>

#include "stackwalk/stackwalk.h"

constexpr int kTraceMax = 64;

struct Trace {
  void* pcs[kTraceMax];
  int n = 0;
};

// The method every capture below takes.
extern stackwalk_method g_method;

extern "C" {
// Captures into t.
void log_leaf(Trace* t);
// Two callers with identical frames: log_leaf's frame gets the same (pc, sp) under both.
void log_via_a(Trace* t);
void log_via_b(Trace* t);
// A stack that differs in one middle frame (log_mid_a or log_mid_b, the same layout) between
// the same outer and inner frames; log_inner's frame has the same (pc, sp, fp) under both.
void log_through_a(Trace* t);
void log_through_b(Trace* t);
// Two capture sites with one layout: the capture's frame has the same (pc, sp) under both.
void log_leaf_a(Trace* t);
void log_leaf_b(Trace* t);
// Every fourth call (the fourth, the eighth, ...) of log_smash_caller captures while
// log_smash_frame's return-address slot holds g_log_not_code (data); g_log_smash_layout_ok says
// whether the slot was the frame record's second word, as on x86_64 and AArch64.
void log_smash_caller(Trace* t);
extern char g_log_not_code[64];
// log_leaf under log_alloca_frame, whose CFA comes from fp, called from two callers with frames
// 64 bytes apart that alloca 64 bytes apart: the same sp, fp 64 bytes apart, as the frame's sp
// and fp say (g_alloca_sp/fp[0] under log_alloca_small, [1] under log_alloca_big).
void log_alloca_small(Trace* t);
void log_alloca_big(Trace* t);
extern uintptr_t g_alloca_sp[2];
extern uintptr_t g_alloca_fp[2];
extern int g_log_smash_calls;
extern bool g_log_smash_layout_ok;
}

// What the thread's cache served one capture: frames replayed from a log (FrameLog, FpChainLog),
// matches of the FrameLog, frames stepped through the FrameCache, walks retried uncached.
struct Served {
  uint64_t replayed = 0;
  uint64_t matched = 0;
  uint64_t frame_hits = 0;
  uint64_t full_retries = 0;  // walks walked again uncached after the cached walk refused a frame
  uint64_t frame_ends = 0;    // walks ended by a frame cache entry (the end of the stack)
};

// What the calling thread's cache has served so far (totals of the above).
Served ServedSoFar();

// Calls fn(t): RunBoth's one call site for every capture of both passes.
void Invoke(void (*fn)(Trace*), Trace* t);

// Runs seq[i] for each i twice from one call site, so that traces differ only by what seq does:
// first as usual into `cached` (what each served into served[i], if not null), then while
// holding the thread's cache into `reference`, where every capture is uncached and unlogged (as
// in a nested signal handler).
void RunBoth(void (*const* seq)(Trace*), int n, Trace* cached, Trace* reference,
             Served* served);

// Expects the cached captures to equal the reference ones, except at frame `run_both_frame`:
// RunBoth's call of its capture, which the compiler may place twice (once per pass).
void ExpectSame(const Trace* cached, const Trace* reference, int n, int run_both_frame = 3);

#endif  // STACKWALK_TESTS_LOGGED_STACKS_H_
