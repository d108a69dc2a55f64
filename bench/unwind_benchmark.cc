// Capture cost per frame: stackwalk's methods and the peers on the same stack, in one run.
// The stack is a recursion of the given depth compiled with frame pointers (so that every
// method can walk it) over main and libc's start-up frames.
//
// Peers whose symbols clash are loaded with dlopen(RTLD_LOCAL): nongnu libunwind
// (libunwind.so.8, unw_backtrace with its per-thread cache) and LLVM libunwind
// (libunwind.so.1, _Unwind_Backtrace). libgcc's _Unwind_Backtrace, glibc's backtrace() and
// abseil's GetStackTrace are linked as usual.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <ucontext.h>
#include <execinfo.h>
#include <unwind.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/debugging/stacktrace.h"
#include "no_fp_stack.h"
#include "core/rule_cache.h"
#include "stackwalk/stackwalk.h"

namespace {

constexpr int kMaxFrames = 256;

using UnwBacktraceFn = int (*)(void**, int);
using UnwindBacktraceFn = _Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void*);
using UnwindGetIpFn = uintptr_t (*)(_Unwind_Context*);

struct Peers {
  UnwBacktraceFn nongnu_backtrace = nullptr;
  UnwindBacktraceFn llvm_backtrace = nullptr;
  UnwindGetIpFn llvm_get_ip = nullptr;
};

const Peers& LoadPeers() {
  static Peers peers = [] {
    Peers p;
    if (void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
      p.nongnu_backtrace = reinterpret_cast<UnwBacktraceFn>(dlsym(h, "unw_backtrace"));
    }
    if (void* h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_LOCAL)) {
      p.llvm_backtrace = reinterpret_cast<UnwindBacktraceFn>(dlsym(h, "_Unwind_Backtrace"));
      p.llvm_get_ip = reinterpret_cast<UnwindGetIpFn>(dlsym(h, "_Unwind_GetIP"));
    }
    return p;
  }();
  return peers;
}

struct IpCollector {
  void** pcs;
  int n;
  int max;
  UnwindGetIpFn get_ip;
};

_Unwind_Reason_Code CollectIp(_Unwind_Context* ctx, void* arg) {
  auto* c = static_cast<IpCollector*>(arg);
  if (c->n == c->max) return _URC_END_OF_STACK;
  c->pcs[c->n++] = reinterpret_cast<void*>(c->get_ip(ctx));
  return _URC_NO_REASON;
}

using CaptureFn = std::function<int(void**, int)>;

// Recurses `depth` frames, then runs the benchmark loop at the bottom.
__attribute__((noinline)) void AtDepth(int depth, benchmark::State& state, const CaptureFn& fn) {
  if (depth > 0) {
    AtDepth(depth - 1, state, fn);
    __asm__ volatile("" ::: "memory");  // not a tail call
    return;
  }
  void* pcs[kMaxFrames];
  int frames = 0;
  for (auto _ : state) {
    frames = fn(pcs, kMaxFrames);
    benchmark::DoNotOptimize(pcs[0]);
  }
  state.counters["frames"] = frames;
  state.counters["per_frame"] = benchmark::Counter(
      static_cast<double>(frames) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (frames <= 0) state.SkipWithError("capture returned no frames");
}

// range(1) == 1: the stack below the benchmark has no frame pointers and passes through qsort.
struct Bottom {
  benchmark::State* state;
  const CaptureFn* fn;
};

void Run(benchmark::State& state, const CaptureFn& fn) {
  if (state.range(1) == 0) {
    AtDepth(static_cast<int>(state.range(0)), state, fn);
    return;
  }
  Bottom bottom{&state, &fn};
  bench::NoFpStack(static_cast<int>(state.range(0)),
                   [](void* arg) {
                     auto* b = static_cast<Bottom*>(arg);
                     AtDepth(0, *b->state, *b->fn);
                   },
                   &bottom);
}

void BM_StackwalkFp(benchmark::State& state) {
  Run(state, [](void** pcs, int max) { return stackwalk_backtrace(pcs, max, STACKWALK_FP); });
}
void BM_StackwalkEhFrame(benchmark::State& state) {
  Run(state, [](void** pcs, int max) { return stackwalk_backtrace(pcs, max, STACKWALK_EHFRAME); });
}
// Every capture starts with an empty rule cache and frame log: the cost of a first capture.
void BM_StackwalkEhFrameCold(benchmark::State& state) {
  Run(state, [](void** pcs, int max) {
    stackwalk::internal::RuleCache::ClearForThisThread();
    return stackwalk_backtrace(pcs, max, STACKWALK_EHFRAME);
  });
}
// The first capture after a dlopen (and dlclose) of a library and a module-map refresh: the new
// generation invalidates every compiled rule and the log. The loading itself is not timed.
void BM_StackwalkEhFrameAfterDlopen(benchmark::State& state) {
  Run(state, [&state](void** pcs, int max) {
    state.PauseTiming();
    if (void* plugin = dlopen(BENCH_PLUGIN, RTLD_NOW | RTLD_LOCAL)) dlclose(plugin);
    stackwalk_refresh_modules();
    state.ResumeTiming();
    return stackwalk_backtrace(pcs, max, STACKWALK_EHFRAME);
  });
}
// Rules cached, but the log never matches: alternating between two call paths whose frames
// differ at the bottom of the stack (every capture replaces the log).
__attribute__((noinline)) int CaptureViaA(void** pcs, int max) {
  int n = stackwalk_backtrace(pcs, max, STACKWALK_EHFRAME);
  __asm__ volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) int CaptureViaB(void** pcs, int max) {
  int n = CaptureViaA(pcs, max);
  __asm__ volatile("" ::: "memory");
  return n;
}
void BM_StackwalkEhFrameRulesOnly(benchmark::State& state) {
  Run(state, [flip = false](void** pcs, int max) mutable {
    flip = !flip;
    return flip ? CaptureViaA(pcs, max) : CaptureViaB(pcs, max);
  });
}
void BM_StackwalkAuto(benchmark::State& state) {
  Run(state, [](void** pcs, int max) { return stackwalk_backtrace(pcs, max, STACKWALK_AUTO); });
}
// From a ucontext_t, as a profiler's signal handler or a crash handler walks (getcontext here, so
// the loop measures the walk and not the signal delivery).
void BM_StackwalkFromContext(benchmark::State& state) {
  Run(state, [](void** pcs, int max) {
    ucontext_t uc;
    getcontext(&uc);
    return stackwalk_backtrace_from_context(&uc, pcs, max, STACKWALK_AUTO);
  });
}
void BM_GlibcBacktrace(benchmark::State& state) {
  Run(state, [](void** pcs, int max) { return backtrace(pcs, max); });
}
void BM_LibgccUnwindBacktrace(benchmark::State& state) {
  Run(state, [](void** pcs, int max) {
    IpCollector c{pcs, 0, max, &_Unwind_GetIP};
    _Unwind_Backtrace(CollectIp, &c);
    return c.n;
  });
}
void BM_NongnuUnwBacktrace(benchmark::State& state) {
  const Peers& peers = LoadPeers();
  if (peers.nongnu_backtrace == nullptr) {
    state.SkipWithError("libunwind.so.8 (nongnu) not found");
    return;
  }
  Run(state, [&](void** pcs, int max) { return peers.nongnu_backtrace(pcs, max); });
}
// abseil's frame-pointer walk with its sanity checks (no CFI: it stops in code without frame
// pointers; this stack has them).
void BM_AbseilGetStackTrace(benchmark::State& state) {
  Run(state, [](void** pcs, int max) { return absl::GetStackTrace(pcs, max, 0); });
}
void BM_LlvmUnwindBacktrace(benchmark::State& state) {
  const Peers& peers = LoadPeers();
  if (peers.llvm_backtrace == nullptr || peers.llvm_get_ip == nullptr) {
    state.SkipWithError("libunwind.so.1 (LLVM) not found");
    return;
  }
  Run(state, [&](void** pcs, int max) {
    IpCollector c{pcs, 0, max, peers.llvm_get_ip};
    peers.llvm_backtrace(CollectIp, &c);
    return c.n;
  });
}

// Arguments: depth, and 0 = a frame-pointer stack / 1 = no frame pointers, through qsort (the
// frame-pointer walkers are left out there: they stop at the first frame without one).
#define DEPTHS ->ArgNames({"", "nofp"})->ArgsProduct({{8, 32, 64, 128}, {0, 1}})
#define FP_DEPTHS ->ArgNames({"", "nofp"})->ArgsProduct({{8, 32, 64, 128}, {0}})
BENCHMARK(BM_StackwalkFp) FP_DEPTHS;
BENCHMARK(BM_StackwalkEhFrame) DEPTHS;
BENCHMARK(BM_StackwalkEhFrameRulesOnly) DEPTHS;
BENCHMARK(BM_StackwalkEhFrameCold) DEPTHS;
BENCHMARK(BM_StackwalkEhFrameAfterDlopen) DEPTHS;
BENCHMARK(BM_StackwalkAuto) DEPTHS;
BENCHMARK(BM_StackwalkFromContext) DEPTHS;
BENCHMARK(BM_NongnuUnwBacktrace) DEPTHS;
BENCHMARK(BM_LibgccUnwindBacktrace) DEPTHS;
BENCHMARK(BM_GlibcBacktrace) DEPTHS;
BENCHMARK(BM_LlvmUnwindBacktrace) DEPTHS;
BENCHMARK(BM_AbseilGetStackTrace) FP_DEPTHS;

}  // namespace

// Prints, after the usual table, every stackwalk row's cost per frame as a ratio to every peer's
// at the same depth, all from this one run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      auto it = run.counters.find("per_frame");
      if (it == run.counters.end() || run.error_occurred) continue;
      // With repetitions, the median of each benchmark's runs.
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      if (run.run_type == Run::RT_Iteration && run.repetitions > 1) continue;
      std::string name = run.run_name.str();
      size_t slash = name.find('/');
      std::string shape = name.substr(slash + 1);  // "64/nofp:0"
      for (const auto& [from, to] : {std::pair<std::string, std::string>{"/nofp:0", ""},
                                     {"/nofp:1", ", no frame pointers, through qsort"}}) {
        if (size_t at = shape.find(from); at != std::string::npos) shape.replace(at, from.size(), to);
      }
      rows_[shape][name.substr(3, slash - 3)] = it->second.value * 1e9;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    static const char* const kPeers[] = {"NongnuUnwBacktrace", "LibgccUnwindBacktrace",
                                         "GlibcBacktrace", "LlvmUnwindBacktrace",
                                         "AbseilGetStackTrace", "StackwalkFp"};
    std::printf("\nns per frame, and as a ratio to each peer at the same depth (same run):\n");
    for (const auto& [depth, by_name] : rows_) {
      std::printf("depth %s:\n", depth.c_str());
      for (const auto& [name, ns] : by_name) {
        if (name.rfind("Stackwalk", 0) != 0) continue;
        std::printf("  %-24s %8.2f ns/frame", name.c_str(), ns);
        for (const char* peer : kPeers) {
          auto p = by_name.find(peer);
          if (p == by_name.end() || p->first == name) continue;
          std::printf("  %.3gx %s", ns / p->second, peer);
        }
        std::printf("\n");
      }
    }
  }

 private:
  std::map<std::string, std::map<std::string, double>> rows_;  // depth -> benchmark -> ns/frame
};

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
