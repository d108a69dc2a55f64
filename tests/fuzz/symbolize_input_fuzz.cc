// libFuzzer target for what stackwalk-symbolize reads from its user: the command line (the
// input's first byte picks how many leading NUL-separated words are arguments) and the stdin
// text of each style (addr2line pieces and addresses, llvm-symbolizer lines, MODULE+OFFSET
// words, /proc/PID/maps lines). Hostile bytes must give a usage error or "not a request",
// never a crash or a read outside the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace stackwalk::tools;
  const size_t argument_count = data[0] % 16;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<std::string> words{"stackwalk-symbolize"};
  while (words.size() <= argument_count && !rest.empty()) {
    size_t nul = rest.find('\0');
    words.emplace_back(rest.substr(0, nul));
    rest.remove_prefix(nul == std::string_view::npos ? rest.size() : nul + 1);
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  CommandLine command = ParseCommandLine(static_cast<int>(argv.size() - 1), argv.data());
  // A usage error or --help/--version always says something; otherwise nothing to say.
  if ((command.exit_status >= 0) == command.message.empty()) __builtin_trap();

  volatile uint64_t sink = 0;
  for (const std::string& piece : SplitAddr2lineInput(rest)) {
    if (piece.empty() || piece.size() > 99) __builtin_trap();
    sink = sink + ParseAddr2lineAddress(piece);
  }
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find('\n', start);
    if (end == std::string_view::npos) end = rest.size();
    std::string_view line = rest.substr(start, end - start);
    Request r;
    if (ParseLlvmLine(line, true, &r)) sink = sink + r.address;
    if (ParseLlvmLine(line, false, &r) && r.module.empty()) __builtin_trap();
    MapsLine m;
    if (ParseMapsLine(line, &m) && (m.hi <= m.lo || m.path.empty() || m.path[0] != '/')) {
      __builtin_trap();
    }
    start = end + 1;
  }
  for (const std::string& word : SplitWords(rest)) {
    Request r;
    if (word.empty()) __builtin_trap();
    if (ParseStackwalkWord(word, false, &r) && r.module.empty()) __builtin_trap();
    if (ParseStackwalkWord(word, true, &r)) sink = sink + r.address;
  }
  (void)sink;
  return 0;
}
