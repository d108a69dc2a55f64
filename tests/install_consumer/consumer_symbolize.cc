// Uses the installed symbolizer: prints its own trace with file:line.
#include <stackwalk/stackwalk.h>
#include <stackwalk/symbolizer.h>

#include <cstdio>

int main() {
  void* pcs[16];
  int n = stackwalk_backtrace(pcs, 16, STACKWALK_AUTO);
  stackwalk::Symbolizer symbolizer;
  std::printf("%s", stackwalk::FormatFrames(symbolizer.SymbolizeTrace(pcs, n)).c_str());
  return n > 0 ? 0 : 1;
}
