// libFuzzer target for the leak checker's option parser (leakcheck/options.cc): the
// STACKWALK_LEAKCHECK string ("key=value:key=value") and the library globs it carries. Any bytes
// must parse without a crash or a read outside the input (AddressSanitizer), and the result
// must keep its invariants: values in their ranges, strings terminated inside their arrays.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "leakcheck/options.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stackwalk::leakcheck::MatchesAnyPattern;
  using stackwalk::leakcheck::Options;
  using stackwalk::leakcheck::ParseOptions;
  // The parser reads a C string: the input up to its first NUL.
  const std::string text(reinterpret_cast<const char*>(data), size);
  int problems = -1;
  const Options o = ParseOptions(text.c_str(), &problems);
  Check(problems >= 0);
  Check(o.max_frames >= 1 && o.max_frames <= 64);
  Check(o.method >= 0 && o.method <= 2);
  Check(o.exitcode >= 0 && o.exitcode <= 255);
  Check(o.report_signal >= 0 && o.report_signal < 65);
  Check(memchr(o.output, '\0', sizeof(o.output)) != nullptr);
  Check(memchr(o.libraries, '\0', sizeof(o.libraries)) != nullptr);
  Check(memchr(o.ignore_libraries, '\0', sizeof(o.ignore_libraries)) != nullptr);
  Check(memchr(o.suppressions, '\0', sizeof(o.suppressions)) != nullptr);
  Check(o.stop_method >= 0 && o.stop_method <= 2);
  Check(o.stop_timeout_ms >= 1 && o.stop_timeout_ms <= 600000);
  Check(o.stop_signal >= 0 && o.stop_signal < 65);
  Check(o.check_interval >= 0 && o.check_interval <= 86400);
  // Each value that parsed appears in the input as given (where nothing in it was escaped).
  if (o.output[0] != '\0' && text.find('\\') == std::string::npos) {
    Check(text.find(std::string("output=") + o.output) != std::string::npos);
  }
  // The globs against paths from the input itself and fixed ones.
  const char* paths[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6", "libfoo.so", "", "/",
                         o.output};
  for (const char* path : paths) {
    MatchesAnyPattern(o.libraries, path);
    MatchesAnyPattern(o.ignore_libraries, path);
  }
  const size_t half = text.size() / 2;
  MatchesAnyPattern(text.substr(0, half).c_str(), text.c_str() + half);
  MatchesAnyPattern(nullptr, "x");
  MatchesAnyPattern("x", nullptr);
  // Parsing is a function of the text: the same input gives the same options.
  // Field by field: the struct's padding bytes are not part of it.
  const Options again = ParseOptions(text.c_str());
  Check(again.min_size == o.min_size && again.max_frames == o.max_frames &&
        again.method == o.method && again.exitcode == o.exitcode &&
        again.report_at_exit == o.report_at_exit && again.json == o.json &&
        again.report_signal == o.report_signal && again.follow_exec == o.follow_exec &&
        again.unreachable_only == o.unreachable_only &&
        again.show_reachable == o.show_reachable && again.anonymous_roots == o.anonymous_roots &&
        again.stop_method == o.stop_method && again.stop_timeout_ms == o.stop_timeout_ms &&
        again.stop_signal == o.stop_signal && again.check_interval == o.check_interval &&
        strcmp(again.suppressions, o.suppressions) == 0 &&
        strcmp(again.output, o.output) == 0 && strcmp(again.libraries, o.libraries) == 0 &&
        strcmp(again.ignore_libraries, o.ignore_libraries) == 0);
  return 0;
}
