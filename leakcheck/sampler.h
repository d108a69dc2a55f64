// Sampler: which allocations are recorded when sampling (option sample_bytes = N > 0), and how
// many bytes and allocations a recorded one stands for. Sampling is a Poisson process over the
// bytes each thread allocates, as in heapprofd and tcmalloc: every byte is a sample point with
// probability 1/N, independently, so a block of s bytes holds at least one point, and is
// recorded, with probability p(s) = 1 - exp(-s/N). Each thread counts down the bytes to its next
// point, drawn from an exponential distribution of mean N (memoryless: after a recorded block the
// next point is drawn afresh from its end). A block of N bytes or more is always recorded
// (p = 1) and does not move the countdown. An unrecorded block costs a few compares and a
// subtraction (SkipUnsampled, inlined into the exported functions), and its free a look at the
// filter of recorded addresses (recorded_filter.h); only recorded blocks pay for their stack.
//
// Estimates (Horvitz-Thompson: each recorded block weighs 1/p(s)): a recorded block of s < N
// bytes stands for SampleWeight(s, N) = 1 / (1 - exp(-s/N)) allocations and s times that many
// bytes; a block of s >= N bytes for itself. Every total and per-stack figure of a sampled report
// sums these weights (report_group.cc), so its expectation is the true total.
#ifndef STACKWALK_LEAKCHECK_SAMPLER_H_
#define STACKWALK_LEAKCHECK_SAMPLER_H_

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

// The largest mean sampling accepts (1 TiB): the options refuse more and so does a dump's reader,
// so that no estimate of a block (about the mean) nor a sum of them leaves the range of a uint64.
constexpr uint64_t kMaxSampleBytes = uint64_t{1} << 40;

// `x` rounded to the nearest integer, UINT64_MAX if beyond (a cast of a double at or past 2^64
// is undefined).
inline uint64_t SaturatedRound(double x) {
  if (!(x > 0)) return 0;
  const double r = x + 0.5;
  return r >= 0x1p64 ? UINT64_MAX : static_cast<uint64_t>(r);
}

// How many allocations a recorded block of `size` bytes stands for with sampling mean `mean`
// (0: no sampling, every block is recorded and stands for itself). Async-signal-safe.
inline double SampleWeight(uint64_t size, uint64_t mean) {
  // A block of 0 bytes holds no sample point and is never recorded while sampling.
  if (mean == 0 || size >= mean || size == 0) return 1.0;
  return 1.0 / -std::expm1(-static_cast<double>(size) / static_cast<double>(mean));
}

// The bytes a recorded block of `size` bytes stands for, rounded: what the live-byte counters
// add when it is recorded and subtract when it is freed (the same figure both ways).
inline uint64_t EstimatedBytes(uint64_t size, uint64_t mean) {
  if (mean == 0 || size >= mean) return size;
  return SaturatedRound(static_cast<double>(size) * SampleWeight(size, mean));
}

// A sum of recorded blocks' estimates, rounded once when read (rounding each block's count
// would be biased: a block of 0.7 N stands for 1.99 allocations, one of N - 1 bytes for 1.58).
// Without sampling, the exact sums.
struct EstimateSum {
  double bytes = 0;
  double count = 0;
  void Add(uint64_t size, uint64_t mean) {
    const double weight = SampleWeight(size, mean);
    bytes += static_cast<double>(size) * weight;
    count += weight;
  }
  uint64_t rounded_bytes() const { return SaturatedRound(bytes); }
  uint64_t rounded_count() const { return SaturatedRound(count); }
};

// The calling thread's countdown. Plain data in static TLS (initial-exec): no allocation, no
// constructor, usable from an allocation hook and a signal handler.
struct SamplerThread {
  uint64_t mean;        // the mean the countdown was drawn for (0: not drawn yet)
  uint64_t seed;        // the seed option it was drawn with
  uint64_t bytes_left;  // bytes this thread allocates before its next sample point
  uint64_t random;      // the thread's PRNG state (splitmix64)
  // The fast path's licence (SkipUnsampled): the sampler generation at which this thread's last
  // allocation through the full hook found that only the countdown decides whether its next
  // ones are recorded (sampling, no min_size, the checker active, this thread outside the
  // checker, not forking, not stopping the world). 0: not licensed, every allocation takes the
  // full hook.
  uint64_t armed;
};
extern __thread SamplerThread t_sampler __attribute__((tls_model("initial-exec")));

// Raised whenever an option the hooks read is published (state.h) and in a forked child: a
// licence of an earlier generation is void. Starts at 1, so that 0 never matches.
extern std::atomic<uint64_t> g_sampler_generation;
inline void NewSamplerGeneration() {
  g_sampler_generation.fetch_add(1, std::memory_order_acq_rel);
}
// Read before the options it licenses (acquire: the options published before it are seen).
inline uint64_t SamplerGeneration() {
  return g_sampler_generation.load(std::memory_order_acquire);
}

// The whole hook of an allocation sampling leaves out, inlined into the exported allocation
// functions ahead of everything else: true if this thread is licensed and the block holds no
// sample point (the countdown moves past it, exactly as ShouldRecord would), false if the full
// hook must decide. A relaxed read of the generation: a hook racing an in-process Start() may
// use the options it began with, as the full hook may too. Async-signal-safe.
inline bool SkipUnsampled(size_t size) {
  SamplerThread& t = t_sampler;
  if (t.armed != g_sampler_generation.load(std::memory_order_relaxed) || size >= t.mean ||
      t.bytes_left < size) {
    return false;
  }
  t.bytes_left -= size;
  return true;
}

// Licenses SkipUnsampled on this thread for `generation` (read before `mean` and `seed`), if its
// countdown is drawn for them. Call only where nothing but the countdown decides (see armed).
inline void LicenseUnsampled(uint64_t generation, uint64_t mean, uint64_t seed) {
  SamplerThread& t = t_sampler;
  if (mean != 0 && t.mean == mean && t.seed == seed) t.armed = generation;
}
// Takes this thread's licence away (returning it, for a guard to give back).
inline uint64_t RevokeUnsampled() {
  const uint64_t armed = t_sampler.armed;
  t_sampler.armed = 0;
  return armed;
}
inline void RestoreUnsampled(uint64_t armed) { t_sampler.armed = armed; }
// Whether this thread is licensed, of any generation: nothing but the filter then decides
// whether one of its frees needs the table (recording.h).
inline bool LicensedUnsampled() { return t_sampler.armed != 0; }

// The slow path: a countdown to (re)start or a sample point inside this block. Returns whether
// the block is recorded and draws the next point.
bool SampleSlow(size_t size, uint64_t mean, uint64_t seed);

// Around fork(): the child must not sample the bytes its parent samples (a pre-forked server's
// workers would all record the same sites). The prepare handler counts the fork; the child mixes
// the count into its streams and draws its countdowns afresh, so a fixed seed still repeats a run
// whose forks come in the same order. Async-signal-safe.
void SamplerBeforeFork();
void SamplerAfterForkChild();

// Whether an allocation of `size` bytes is recorded, with sampling mean `mean` (0: all are) and
// `seed` (0: a seed of the thread's own from the clock; else every run draws the same points: the
// n-th thread to sample uses a stream derived from the seed and n). Async-signal-safe.
inline bool ShouldRecord(size_t size, uint64_t mean, uint64_t seed) {
  if (mean == 0 || size >= mean) return true;
  SamplerThread& t = t_sampler;
  if (t.mean == mean && t.seed == seed && t.bytes_left >= size) {
    t.bytes_left -= size;
    return false;
  }
  return SampleSlow(size, mean, seed);
}

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SAMPLER_H_
