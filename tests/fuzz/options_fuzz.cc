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
  // Each value that parsed appears in the input as given.
  if (o.output[0] != '\0') Check(text.find(std::string("output=") + o.output) != std::string::npos);
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
  const Options again = ParseOptions(text.c_str());
  Check(memcmp(&again, &o, sizeof(o)) == 0);
  return 0;
}
