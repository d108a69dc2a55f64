/* fork_workload BLOCKS FORKS [exec] (scripts/bench_record.sh): keeps BLOCKS live blocks of 32 bytes,
 * then forks FORKS children that _exit at once, or with "exec" run /bin/true (a checked child's
 * _exit checks it for leaks; an exec does not); prints the mean microseconds per fork and wait:
 * what a fork costs the checked program, whose tables the record region copies at each fork. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char** argv) {
  long blocks = atol(argv[1]), forks = atol(argv[2]);
  void** keep = malloc(sizeof(void*) * blocks);
  for (long i = 0; i < blocks; ++i) keep[i] = malloc(32);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < forks; ++i) {
    pid_t c = fork();
    if (c == 0) {
      if (argc > 3) execl("/bin/true", "true", (char*)NULL);
      _exit(0);
    }
    waitpid(c, NULL, 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f us per fork\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / forks);
  return keep[0] == NULL;
}
