// A test helper: an anonymous mapping placed so that the next thread stack glibc maps lands right
// below it, where the kernel merges the two into one mapping (as it merges ld.so's, the program's
// and cached stacks' mappings). The kernel maps top-down into the highest gap that fits: a
// reservation of exactly the neighbour and the stack is taken, the neighbour mapped at its top,
// the rest given back; a thread created next with `stack_bytes` fills that gap, unless a higher
// gap fits it too (the caller checks, and may try again).
#ifndef STACKWALK_TESTS_STACK_NEIGHBOUR_H_
#define STACKWALK_TESTS_STACK_NEIGHBOUR_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

// The neighbour (`neighbour_bytes`, read-write, MAP_STACK as glibc's stacks), or MAP_FAILED.
inline void* MapAboveTheNextStack(size_t stack_bytes, size_t neighbour_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t below = stack_bytes + page;  // the stack and its guard page
  char* reserved = static_cast<char*>(
      mmap(nullptr, below + neighbour_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (reserved == MAP_FAILED) return MAP_FAILED;
  void* neighbour = mmap(reserved + below, neighbour_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_FIXED, -1, 0);
  munmap(reserved, below);
  if (neighbour == MAP_FAILED) munmap(reserved + below, neighbour_bytes);
  return neighbour;
}

#endif  // STACKWALK_TESTS_STACK_NEIGHBOUR_H_
