// A stack without frame pointers and through libc: `depth` frames of this file (built with
// -fomit-frame-pointer), then qsort, whose comparator calls `bottom` — where the benchmark loop
// runs. Only unwinders reading the unwind tables get through it.
#include "no_fp_stack.h"

#include <cstdlib>

namespace bench {
namespace {

void (*g_bottom)(void*);
void* g_arg;
bool g_ran;

int CompareAndRun(const void* a, const void* b) {
  if (!g_ran) {
    g_ran = true;
    g_bottom(g_arg);
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

}  // namespace

__attribute__((noinline)) void NoFpStack(int depth, void (*bottom)(void*), void* arg) {
  if (depth > 0) {
    NoFpStack(depth - 1, bottom, arg);
    __asm__ volatile("" ::: "memory");  // not a tail call
    return;
  }
  int values[2] = {2, 1};
  g_bottom = bottom;
  g_arg = arg;
  g_ran = false;
  std::qsort(values, 2, sizeof(int), CompareAndRun);
}

}  // namespace bench
