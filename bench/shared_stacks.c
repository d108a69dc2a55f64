// Threads allocating from one stack at once: what the checker's shared per-stack bookkeeping
// costs between cores, with little walk around it. Each thread keeps a ring of 1,024 blocks (each
// slot freed and refilled) of 16 sizes, all allocated by one call one frame deep, so every
// allocation of every thread has the same stack.
//   shared_stacks THREADS ALLOCATIONS_PER_THREAD
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kRing = 1024, kMaxThreads = 64 };
static long g_each;

__attribute__((noinline)) static void* Site(int k) {
  void* p = malloc(16 + (size_t)k * 8);
  __asm__ volatile("" ::: "memory");  // not a tail call: the frame stays
  return p;
}

static void* Run(void* arg) {
  (void)arg;
  void** ring = calloc(kRing, sizeof(void*));
  if (ring == NULL) return NULL;
  for (long i = 0; i < g_each; ++i) {
    free(ring[i % kRing]);
    ring[i % kRing] = Site((int)(i & 15));
  }
  for (int i = 0; i < kRing; ++i) free(ring[i]);
  free(ring);
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  g_each = argc > 2 ? atol(argv[2]) : 2000000;
  if (threads < 1 || threads > kMaxThreads || g_each < 0) {
    fprintf(stderr, "usage: shared_stacks THREADS(1-%d) ALLOCATIONS_PER_THREAD\n", kMaxThreads);
    return 2;
  }
  pthread_t t[kMaxThreads];
  for (int i = 0; i < threads; ++i) {
    if (pthread_create(&t[i], NULL, Run, NULL) != 0) return 1;
  }
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  return 0;
}
