// The library's symbolization throughput: every address of a file (link-time addresses, one per
// line, hex), through stackwalk::Symbolizer::SymbolizeFile, twice: cold (a new symbolizer:
// opening the file and its debug file, indexing) and warm (the same symbolizer again).
//   symbolize_throughput FILE ADDRESSES
// Prints "cold_ms warm_ms frames" on one line.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "stackwalk/symbolizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: symbolize_throughput FILE ADDRESSES\n");
    return 2;
  }
  std::vector<uint64_t> addresses;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) addresses.push_back(std::stoull(line, nullptr, 16));
  }
  stackwalk::Symbolizer symbolizer;
  size_t frames = 0;
  auto pass = [&] {
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t address : addresses) {
      auto found = symbolizer.SymbolizeFile(argv[1], address);
      if (found.ok()) frames += found->size();
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  const double cold = pass();
  const double warm = pass();
  std::printf("%.1f %.1f %zu\n", cold, warm, frames / 2);
  return 0;
}
