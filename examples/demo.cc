// stackwalk demo: a small "geometry" program that prints its own symbolized backtrace, first
// from a normal call, then from inside a SIGSEGV handler through the signal's ucontext_t.
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "stackwalk/capture.h"
#include "stackwalk/format.h"
#include "stackwalk/stackwalk.h"
#if defined(STACKWALK_DEMO_WITH_SYMBOLIZER)
#include "stackwalk/symbolizer.h"
#endif

namespace geo {

// With the DWARF symbolizer: function, file:line:column and inline frames; without it (cross
// builds), names from the dynamic symbol table.
void PrintTrace(const char* title, void* const* pcs, int n, bool from_context) {
#if defined(STACKWALK_DEMO_WITH_SYMBOLIZER)
  static stackwalk::Symbolizer symbolizer;
  std::printf("%s (%d frames):\n%s\n", title, n,
              stackwalk::FormatFrames(symbolizer.SymbolizeTrace(pcs, n, from_context)).c_str());
#else
  std::printf("%s (%d frames):\n%s\n", title, n,
              stackwalk::FormatTrace(pcs, n, from_context).c_str());
#endif
}

struct Field {
  std::vector<double> cells;

  __attribute__((noinline)) double Total(int depth) const {
    if (depth > 0) {
      double t = Total(depth - 1);
      __asm__ volatile("" ::: "memory");  // keep the recursion a real call
      return t;
    }
    void* pcs[64];
    int n = stackwalk_backtrace(pcs, 64, STACKWALK_AUTO);
    if (n < 0) {
      std::printf("stackwalk_backtrace failed: %s\n", stackwalk_strerror(n));
      return 0;
    }
    PrintTrace("stackwalk_backtrace(STACKWALK_AUTO) inside geo::Field::Total", pcs, n, false);
    double sum = 0;
    for (double c : cells) sum += c;
    return sum;
  }
};

sigjmp_buf g_recover;

void OnSegv(int, siginfo_t* info, void* ucontext) {
  void* pcs[64];
  int n = stackwalk_backtrace_from_context(ucontext, pcs, 64, STACKWALK_AUTO);
  char title[128];
  std::snprintf(title, sizeof(title), "SIGSEGV at address %p, unwound from the ucontext_t",
                info->si_addr);
  // printf and the symbolizer in a handler: fine for a demo, not for real code (crash_handler.h
  // is the signal-safe way).
  PrintTrace(title, pcs, n, true);
  siglongjmp(g_recover, 1);
}

__attribute__((noinline)) int ReadCell(const double* cells, long index) {
  volatile double v = cells[index];  // index is far out of range: faults
  __asm__ volatile("" ::: "memory");
  return static_cast<int>(v);
}

__attribute__((noinline)) int Lookup(const Field& field, long index) {
  int r = ReadCell(field.cells.data(), index);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

}  // namespace geo

int main() {
  std::printf("stackwalk demo: methods available here: FP=%d EHFRAME=%d EXIDX=%d\n\n",
              stackwalk_method_available(STACKWALK_FP),
              stackwalk_method_available(STACKWALK_EHFRAME),
              stackwalk_method_available(STACKWALK_EXIDX));
  geo::Field field{{1.0, 2.0, 3.0}};
  double total = field.Total(3);

  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = geo::OnSegv;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  if (sigsetjmp(geo::g_recover, 1) == 0) {
    geo::Lookup(field, 1L << 40);
  }
  std::printf("total = %g; recovered from the fault\n", total);
  return 0;
}
