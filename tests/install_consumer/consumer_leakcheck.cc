// Uses the installed in-process leak checker on itself: one 48-byte block left live.
#include <stackwalk/leakcheck.h>

#include <cstdio>
#include <cstdlib>

void* volatile g_sink;

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
  std::free(std::malloc(1000));
  auto totals = stackwalk::leakcheck::Report();
  if (!totals.ok()) return 2;
  std::printf("live: %llu bytes in %llu allocations\n", static_cast<unsigned long long>(totals->bytes),
              static_cast<unsigned long long>(totals->allocations));
  return stackwalk::leakcheck::Stop().ok() ? 0 : 3;
}
