// Uses the installed in-process leak checker on itself: a 48-byte block held by a global
// (reachable, not a leak) and a 100-byte block dropped (the leak).
#include <stackwalk/leakcheck.h>

#include <cstdio>
#include <cstdlib>

void* volatile g_sink;

__attribute__((noinline)) void Drop() {
  void* volatile dropped = std::malloc(100);
  (void)dropped;
}
// The dropped block's address is left in Drop's dead frame: cleared, so that the report's own
// frames (scanned from where it was asked for up) cannot meet a stale copy.
__attribute__((noinline)) void ClearDeadFrames() {
  volatile char area[4096];
  for (char& c : const_cast<char(&)[4096]>(area)) c = 0;
}

int main() {
  stackwalk::leakcheck::LeakCheckOptions options;
  options.libraries = {"consumer_leakcheck"};
  options.output = "/dev/null";
  options.report_at_exit = false;
  absl::Status started = stackwalk::leakcheck::Start(options);
  if (!started.ok()) {
    std::printf("start: %s\n", started.ToString().c_str());
    return 1;
  }
  g_sink = std::malloc(48);
  Drop();
  std::free(std::malloc(1000));
  ClearDeadFrames();
  auto totals = stackwalk::leakcheck::Report();
  if (!totals.ok()) return 2;
  std::printf("leaks: %llu bytes in %llu allocations\n", static_cast<unsigned long long>(totals->bytes),
              static_cast<unsigned long long>(totals->allocations));
  return stackwalk::leakcheck::Stop().ok() ? 0 : 3;
}
