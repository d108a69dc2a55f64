// The stacks the frame log and frame cache tests capture (logged_stacks.h), built with frame
// pointers.
#include "logged_stacks.h"

#include <gtest/gtest.h>

#include "core/rule_cache.h"
#include "stackwalk/stackwalk.h"

using stackwalk::internal::RuleCache;

Served ServedSoFar() {
  Served served;
  RuleCache* cache = RuleCache::Acquire();
  if (cache == nullptr) return served;
  served.replayed = cache->log().replayed_frames() + cache->fp_log().replayed();
  served.matched = cache->log().matches();
  served.frame_hits = cache->frame_cache_hits();
  served.full_retries = cache->full_retries();
  served.frame_ends = cache->frame_cache_ends();
  cache->Release();
  return served;
}


__attribute__((noinline)) void Invoke(void (*fn)(Trace*), Trace* t) {
  fn(t);
  __asm__ volatile("" ::: "memory");
}

stackwalk_method g_method = STACKWALK_EHFRAME;

extern "C" {
__attribute__((noinline)) void log_leaf(Trace* t) {
  t->n = stackwalk_backtrace(t->pcs, 64, g_method);
  __asm__ volatile("" ::: "memory");
}
// Two callers with identical frames: log_leaf's frame gets the same (pc, sp) under both.
__attribute__((noinline)) void log_via_a(Trace* t) {
  volatile char pad[32] = {};
  log_leaf(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_via_b(Trace* t) {
  volatile char pad[32] = {};
  log_leaf(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}

// A stack that differs in one middle frame: outer frames, then mid_a or mid_b (same layout),
// then the same inner frames. log_inner's frame has the same (pc, sp, fp) under both; its
// return-address slot tells them apart.
__attribute__((noinline)) void log_inner(Trace* t) {
  volatile char pad[16] = {};
  log_leaf(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_mid_a(Trace* t) {
  volatile char pad[16] = {};
  log_inner(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_mid_b(Trace* t) {
  volatile char pad[16] = {};
  log_inner(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_outer2(void (*mid)(Trace*), Trace* t) {
  volatile char pad[16] = {};
  mid(t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_outer1(void (*mid)(Trace*), Trace* t) {
  volatile char pad[16] = {};
  log_outer2(mid, t);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_through_a(Trace* t) {
  log_outer1(log_mid_a, t);
  __asm__ volatile("" ::: "memory");  // not a tail call: RunBoth stays frame 7
}
__attribute__((noinline)) void log_through_b(Trace* t) {
  log_outer1(log_mid_b, t);
  __asm__ volatile("" ::: "memory");
}
}

extern "C" {
// Two capture sites with one layout, called from one call site: the capture's frame has the
// same (pc, sp) under both, and only its return-address slot tells them apart.
__attribute__((noinline)) void log_leaf_a(Trace* t) {
  volatile char pad[16] = {};
  t->n = stackwalk_backtrace(t->pcs, 64, g_method);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
__attribute__((noinline)) void log_leaf_b(Trace* t) {
  volatile char pad[16] = {};
  t->n = stackwalk_backtrace(t->pcs, 64, g_method);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
}

extern "C" {
// Data, not code: what a smashed return address points at.
char g_log_not_code[64];
int g_log_smash_calls = 0;
bool g_log_smash_layout_ok = false;
// Every fourth call (the fourth, the eighth, ...), while log_leaf captures, this frame's own
// return-address slot holds g_log_not_code, restored before it returns: one function for every
// capture, so that the smashed capture's frames lie where the warm ones' did. The slot is the
// frame record's second word (x86_64, AArch64, built with frame pointers);
// g_log_smash_layout_ok says whether it held the return address.
__attribute__((noinline)) void log_smash_frame(Trace* t) {
  void** record = static_cast<void**>(__builtin_frame_address(0));
  void* const saved = record[1];
  g_log_smash_layout_ok = saved == __builtin_return_address(0);
  // A value stored either way, not a branch: one call of log_leaf, whose return address the
  // warm captures logged and whose caller's rule they cached.
  const bool smash = g_log_smash_calls++ % 4 == 3 && g_log_smash_layout_ok;
  void* value = smash ? static_cast<void*>(g_log_not_code) : saved;
  __asm__ volatile("" : "+r"(value));
  record[1] = value;
  __asm__ volatile("" ::: "memory");
  log_leaf(t);
  __asm__ volatile("" ::: "memory");
  record[1] = saved;
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void log_smash_caller(Trace* t) {
  log_smash_frame(t);
  __asm__ volatile("" ::: "memory");
}
}


extern "C" {
uintptr_t g_alloca_sp[2];
uintptr_t g_alloca_fp[2];
// A frame whose CFA comes from fp (it allocas): its sp is (fp - n - its fixed part).
__attribute__((noinline)) void log_alloca_frame(size_t n, Trace* t, int which) {
  char* p = static_cast<char*>(__builtin_alloca(n));
  p[0] = 0;
  __asm__ volatile("" : : "r"(p) : "memory");
  g_alloca_sp[which] = reinterpret_cast<uintptr_t>(p);
  g_alloca_fp[which] = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  log_leaf(t);
  __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) void log_alloca_small(Trace* t) {
  volatile uintptr_t pad[2] = {};
  log_alloca_frame(128, t, 0);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
// 64 bytes more of frame, 64 bytes less alloca'd: log_alloca_frame's sp is the same, its fp 64
// bytes lower. The frame's words hold a code address, which a step with the other fp's CFA
// would read as a return address and take.
__attribute__((noinline)) void log_alloca_big(Trace* t) {
  volatile uintptr_t pad[10];
  for (int i = 0; i < 10; ++i) pad[i] = reinterpret_cast<uintptr_t>(&log_leaf) + 4;
  log_alloca_frame(64, t, 1);
  __asm__ volatile("" : : "r"(pad) : "memory");
}
}

void RunBoth(void (*const* seq)(Trace*), int n, Trace* cached, Trace* reference, Served* served) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < n; ++i) {
      RuleCache* hold = pass == 1 ? RuleCache::Acquire() : nullptr;
      const Served before = ServedSoFar();
      Invoke(seq[i], pass == 0 ? &cached[i] : &reference[i]);
      if (pass == 0 && served != nullptr) {
        const Served after = ServedSoFar();
        served[i] = Served{after.replayed - before.replayed, after.matched - before.matched,
                           after.frame_hits - before.frame_hits,
                           after.full_retries - before.full_retries,
                           after.frame_ends - before.frame_ends};
      }
      if (hold != nullptr) hold->Release();
    }
  }
}

void ExpectSame(const Trace* cached, const Trace* reference, int n, int run_both_frame) {
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(cached[i].n, reference[i].n) << i;
    ASSERT_GT(cached[i].n, 4);
    for (int k = 1; k < cached[i].n; ++k) {
      if (k != run_both_frame) EXPECT_EQ(cached[i].pcs[k], reference[i].pcs[k]) << i << " " << k;
    }
  }
}
