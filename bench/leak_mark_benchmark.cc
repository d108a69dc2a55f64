// The leak check's mark phase (leakcheck/scan/mark.h) over N live 64-byte malloc'ed blocks, all
// reachable from one root through a chain (in allocation order, or shuffled), each also pointing
// at a random block, the rest of its words small integers: the page index build, the flood fill
// and the block reads through a DirectReader or a SafeReader. `ns_per_word` is the time per
// scanned word (roots and blocks), printed with an "s" suffix but in nanoseconds (the counter is
// inverted from a rate of 1e-9 words). Run: build/test-native/bench/leak_mark_benchmark
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "leakcheck/scan/mark.h"
#include "leakcheck/scan/safe_reader.h"

namespace {

using stackwalk::leakcheck::Allocation;

// The timed part: MarkFromRoots over `blocks` from the one root word at `root`, then the check
// that every block was marked and the time per scanned word.
void MarkEveryIteration(benchmark::State& state, const std::vector<Allocation>& blocks,
                        const uintptr_t* root, stackwalk::leakcheck::MemoryReader& reader,
                        double words) {
  stackwalk::leakcheck::RootSet roots;
  roots.Add({reinterpret_cast<uintptr_t>(root), reinterpret_cast<uintptr_t>(root + 1),
             stackwalk::leakcheck::RootKind::kGlobals, 0, false});
  std::vector<uint8_t> marks(blocks.size());
  for (auto _ : state) {
    state.PauseTiming();
    std::fill(marks.begin(), marks.end(), 0);
    state.ResumeTiming();
    stackwalk::leakcheck::ScratchArena scratch;
    if (!stackwalk::leakcheck::MarkFromRoots(blocks.data(), blocks.size(), roots, reader,
                                             marks.data(), &scratch)) {
      state.SkipWithError("scratch exhausted");
      break;
    }
  }
  if (std::count(marks.begin(), marks.end(), 1) != static_cast<long>(blocks.size())) {
    state.SkipWithError("not every block was marked");
  }
  state.counters["ns_per_word"] = benchmark::Counter(
      words * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_MarkFromRoots(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  constexpr size_t kSize = 64;
  std::mt19937_64 rng(16);
  std::vector<uintptr_t*> memory(n);
  for (auto& p : memory) p = static_cast<uintptr_t*>(malloc(kSize));
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  // The chain in allocation order (mostly address order), or shuffled: then every step is a
  // cache and TLB miss that waits on the one before, the worst case for any marker.
  if (state.range(1) != 0) std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < n; ++i) {
    uintptr_t* words = memory[order[i]];
    words[0] = i + 1 < n ? reinterpret_cast<uintptr_t>(memory[order[i + 1]]) : 0;
    words[1] = reinterpret_cast<uintptr_t>(memory[rng() % n]);
    for (size_t w = 2; w < kSize / sizeof(uintptr_t); ++w) words[w] = rng() % 100000;
  }
  std::vector<Allocation> blocks(n);
  for (size_t i = 0; i < n; ++i) {
    blocks[i] = Allocation{reinterpret_cast<uintptr_t>(memory[i]), kSize, i, 1, 1};
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
  const uintptr_t root_word = reinterpret_cast<uintptr_t>(memory[order[0]]);
  // Blocks read directly, or as a check reads them (SafeReader: process_vm_readv where it works).
  stackwalk::leakcheck::DirectReader direct;
  stackwalk::leakcheck::MapsSnapshot maps;
  maps.Read();
  stackwalk::leakcheck::SafeReader safe(&maps);
  stackwalk::leakcheck::MemoryReader& reader =
      state.range(2) != 0 ? static_cast<stackwalk::leakcheck::MemoryReader&>(safe) : direct;
  MarkEveryIteration(state, blocks, &root_word, reader,
                     1.0 + static_cast<double>(n) * (kSize / sizeof(uintptr_t)));
  for (auto* p : memory) free(p);
}
BENCHMARK(BM_MarkFromRoots)
    ->ArgNames({"blocks", "shuffled", "safe_reader"})
    ->ArgsProduct({{100000, 1000000}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

// N blocks of 64 KiB and more (as a compiler's arenas: each block a cluster of its own in the
// index), every fourth word a pointer into a random block at a random offset, the rest small
// integers; all reachable through a chain as above. Read directly.
void BM_MarkFromRootsLargeBlocks(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(17);
  std::vector<uintptr_t*> memory(n);
  std::vector<size_t> sizes(n);
  size_t total_words = 0;
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = (size_t{64} << 10) + 64 * (rng() % 512);
    memory[i] = static_cast<uintptr_t*>(malloc(sizes[i]));
    total_words += sizes[i] / sizeof(uintptr_t);
  }
  for (size_t i = 0; i < n; ++i) {
    uintptr_t* words = memory[i];
    const size_t count = sizes[i] / sizeof(uintptr_t);
    words[0] = i + 1 < n ? reinterpret_cast<uintptr_t>(memory[i + 1]) : 0;
    for (size_t w = 1; w < count; ++w) {
      const size_t to = rng() % n;
      words[w] = w % 4 == 0
                     ? reinterpret_cast<uintptr_t>(memory[to]) + 8 * (rng() % (sizes[to] / 8))
                     : rng() % 100000;
    }
  }
  std::vector<Allocation> blocks(n);
  for (size_t i = 0; i < n; ++i) {
    blocks[i] = Allocation{reinterpret_cast<uintptr_t>(memory[i]), sizes[i], i, 1, 1};
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
  const uintptr_t root_word = reinterpret_cast<uintptr_t>(memory[0]);
  stackwalk::leakcheck::DirectReader direct;
  MarkEveryIteration(state, blocks, &root_word, direct, static_cast<double>(total_words + 1));
  for (auto* p : memory) free(p);
}
BENCHMARK(BM_MarkFromRootsLargeBlocks)
    ->ArgNames({"blocks"})
    ->Arg(200)
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
