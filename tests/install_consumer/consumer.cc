// Uses the installed C and C++ APIs; prints "consumer ok N" and exits 0 when they work.
#include <stackwalk/capture.h>
#include <stackwalk/cursor.h>
#include <stackwalk/stackwalk.h>

#include <cstdio>

__attribute__((noinline)) static int Inner() {
  void* pcs[32];
  int n = stackwalk_backtrace(pcs, 32, STACKWALK_FP);
  auto trace = stackwalk::StackTrace<32>::Current(stackwalk::Method::kFramePointer);
  stackwalk::Cursor cursor = stackwalk::Cursor::Here(stackwalk::Method::kFramePointer);
  int steps = 0;
  while (cursor.Step()) ++steps;
  if (n < 2 || trace.size() < 2 || steps < 1) return -1;
  return n;
}

int main() {
  int n = Inner();
  if (n < 0) {
    std::printf("consumer failed\n");
    return 1;
  }
  std::printf("consumer ok %d\n", n);
  return 0;
}
