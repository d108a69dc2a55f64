/* The C API from C: the header compiles as C99, and the calls work. Exits non-zero on failure. */
#include <stdio.h>
#include <ucontext.h>

#include "stackwalk/stackwalk.h"

static int failures;
#define CHECK(cond)                                               \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                 \
    }                                                             \
  } while (0)

__attribute__((noinline)) static int capture_here(void **pcs, int max) {
  int n = stackwalk_backtrace(pcs, max, STACKWALK_FP);
  __asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame */
  return n;
}

int main(void) {
  void *pcs[32];
  int n = capture_here(pcs, 32);
  CHECK(n >= 2);
  CHECK(stackwalk_method_available(STACKWALK_FP) == 1);
  CHECK(stackwalk_method_available(STACKWALK_AUTO) == 1);
  CHECK(stackwalk_backtrace(NULL, 1, STACKWALK_FP) == STACKWALK_ERROR_INVALID_ARGUMENT);
  CHECK(stackwalk_refresh_modules() >= 0);
  CHECK(stackwalk_prepare() == 0);  /* done at load: nothing changed since */
  CHECK(capture_here(pcs, 32) == n);

  ucontext_t uc;
  getcontext(&uc);
  n = stackwalk_backtrace_from_context(&uc, pcs, 32, STACKWALK_AUTO);
  CHECK(n >= 1);

  /* The library's own mappings: counted without a buffer, then listed, page-aligned and whole. */
  {
    uintptr_t ranges[2 * 64];
    size_t count = stackwalk_private_mappings(NULL, 0);
    size_t listed = stackwalk_private_mappings(ranges, 64);
    size_t i;
    CHECK(listed == count);
    for (i = 0; i < listed && i < 64; ++i) {
      CHECK(ranges[2 * i] < ranges[2 * i + 1]);
      CHECK(ranges[2 * i] % 4096 == 0 && ranges[2 * i + 1] % 4096 == 0);
    }
  }
  printf("c_api_test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
