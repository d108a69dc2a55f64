#include "leakcheck/sampler.h"

#include <time.h>

#include <atomic>

namespace stackwalk::leakcheck {

__thread SamplerThread t_sampler __attribute__((tls_model("initial-exec"))) = {0, 0, 0, 0, 0};
std::atomic<uint64_t> g_sampler_generation{1};

namespace {

// The threads that started a countdown, in order: the stream of the n-th under a fixed seed.
std::atomic<uint64_t> g_sampling_threads{0};
// This process's place in its fork tree (0 in the process the checker started in), mixed into
// every stream, and the forks it made so far.
uint64_t g_process_salt = 0;
std::atomic<uint64_t> g_forks{0};

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The byte index of the next sample point: floor of an exponential variate of mean `mean`
// (inverse transform of a uniform in (0, 1] with 53 random bits), capped far beyond any heap.
uint64_t DrawBytesLeft(SamplerThread& t, uint64_t mean) {
  const double uniform = (static_cast<double>(SplitMix64(&t.random) >> 11) + 1.0) * 0x1p-53;
  const double x = -std::log(uniform) * static_cast<double>(mean);
  return x < 0x1p62 ? static_cast<uint64_t>(x) : uint64_t{1} << 62;
}

}  // namespace

bool SampleSlow(size_t size, uint64_t mean, uint64_t seed) {
  SamplerThread& t = t_sampler;
  if (t.mean != mean || t.seed != seed) {  // first sampled allocation, or new options
    const uint64_t n = g_sampling_threads.fetch_add(1, std::memory_order_relaxed);
    if (seed != 0) {
      t.random = seed ^ (n * 0xd1b54a32d192ed03ull) ^ g_process_salt;
    } else {
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
      t.random = static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(now.tv_sec) << 30) ^
                 reinterpret_cast<uintptr_t>(&t) ^ (n << 48) ^ g_process_salt;
    }
    t.mean = mean;
    t.seed = seed;
    t.bytes_left = DrawBytesLeft(t, mean);
    if (t.bytes_left >= size) {
      t.bytes_left -= size;
      return false;
    }
  }
  // The point lies in this block: record it, and draw the next point from its end.
  t.bytes_left = DrawBytesLeft(t, mean);
  return true;
}

void SamplerBeforeFork() { g_forks.fetch_add(1, std::memory_order_relaxed); }

void SamplerAfterForkChild() {
  // The fork's number in its parent, hashed with the parent's own salt: distinct for every child
  // of every process in the tree, and the same from run to run.
  uint64_t state = g_process_salt ^ (g_forks.load(std::memory_order_relaxed) << 32);
  g_process_salt = SplitMix64(&state) | 1;
  g_forks.store(0, std::memory_order_relaxed);
  g_sampling_threads.store(0, std::memory_order_relaxed);
  t_sampler.mean = 0;  // the forking thread draws its countdown again, from the child's stream
  t_sampler.armed = 0;
  NewSamplerGeneration();  // and a licence a guard kept across the fork is void too
}

}  // namespace stackwalk::leakcheck
