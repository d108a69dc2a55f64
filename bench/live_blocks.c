// Keeps N live 32-byte blocks, made by T threads (each its own glibc arena, as a program's
// threads), reachable from a global array until exit: the allocation table's size per live block
// in the report's own-memory line (bench/live_table_bytes.sh runs it under the checker).
//   live_blocks N [THREADS]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void** g_blocks;
static long g_each;

static void* Make(void* arg) {
  const long t = (long)arg;
  for (long i = 0; i < g_each; ++i) g_blocks[t * g_each + i] = malloc(32);
  return NULL;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? atol(argv[1]) : 100000;
  const long threads = argc > 2 ? atol(argv[2]) : 1;
  if (n <= 0 || threads <= 0 || threads > 64) {
    fprintf(stderr, "usage: live_blocks N [THREADS]\n");
    return 2;
  }
  g_each = n / threads;
  g_blocks = calloc((size_t)(g_each * threads), sizeof(void*));
  pthread_t ids[64];
  for (long t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, Make, (void*)t);
  for (long t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  printf("live %ld\n", g_each * threads);
  return 0;
}
