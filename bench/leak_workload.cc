// The leak checker's benchmark workload (issue: 2 threads x ~1M allocations at a call depth of
// ~20, 256 distinct stacks, a known fraction kept live and some leaked). Run plain, under
// stackwalk-leakcheck, heaptrack, valgrind, or built with -fsanitize=leak; see
// scripts/bench_leakcheck.sh, which times each.
//   leak_workload [THREADS] [ALLOCATIONS_PER_THREAD]
// Each thread keeps a ring of 4096 live blocks (each slot freed and refilled) and leaks every
// 1000th block: with the defaults, 2 x 1000 blocks of 16..528 bytes are leaked.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace workload {

constexpr int kRing = 4096;

struct Thread {
  long allocations = 0;
  void* ring[kRing] = {};
  long leaked = 0;
};

void* volatile g_leak_sink;

__attribute__((noinline)) void Allocate(Thread& t, long i) {
  const size_t size = 16 + (static_cast<size_t>(i) * 2654435761u) % 512;
  void* p = std::malloc(size);
  std::memset(p, 0, 16);
  if (i % 1000 == 999) {
    g_leak_sink = p;  // leaked
    ++t.leaked;
    return;
  }
  void*& slot = t.ring[i % kRing];
  std::free(slot);
  slot = p;
}

// 12 fixed frames, then 8 levels choosing one of two functions by the bits of i: 256 stacks.
template <int kLevel>
__attribute__((noinline)) void Branch(Thread& t, long i);

template <int kLevel, int kSide>
__attribute__((noinline)) void Side(Thread& t, long i) {
  Branch<kLevel + 1>(t, i);
  asm volatile("" ::: "memory");  // not a tail call: the frame stays
}

template <int kLevel>
__attribute__((noinline)) void Branch(Thread& t, long i) {
  if constexpr (kLevel == 8) {
    Allocate(t, i);
  } else if ((i >> kLevel) & 1) {
    Side<kLevel, 1>(t, i);
  } else {
    Side<kLevel, 0>(t, i);
  }
  asm volatile("" ::: "memory");
}

template <int kDepth>
__attribute__((noinline)) void Fixed(Thread& t, long i) {
  if constexpr (kDepth == 0) {
    Branch<0>(t, i);
  } else {
    Fixed<kDepth - 1>(t, i);
  }
  asm volatile("" ::: "memory");
}

void* Run(void* arg) {
  Thread& t = *static_cast<Thread*>(arg);
  for (long i = 0; i < t.allocations; ++i) Fixed<4>(t, i);
  for (void* p : t.ring) std::free(p);
  return nullptr;
}

}  // namespace workload

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long allocations = argc > 2 ? std::atol(argv[2]) : 1000000;
  if (threads < 1 || threads > 64 || allocations < 1) {
    std::fprintf(stderr, "usage: leak_workload [THREADS 1..64] [ALLOCATIONS_PER_THREAD]\n");
    return 2;
  }
  auto* state = new workload::Thread[threads];
  pthread_t ids[64];
  for (int i = 0; i < threads; ++i) {
    state[i].allocations = allocations;
    pthread_create(&ids[i], nullptr, workload::Run, &state[i]);
  }
  long leaked = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(ids[i], nullptr);
    leaked += state[i].leaked;
  }
  std::printf("leaked %ld blocks\n", leaked);
  delete[] state;
  return 0;
}
