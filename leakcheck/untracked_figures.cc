#include "leakcheck/untracked_figures.h"

#include <cinttypes>
#include <cstdio>

namespace stackwalk::leakcheck {

std::string UntrackedFigures(const UntrackedCounts& u) {
  const uint64_t count = u.allocations();
  char text[96];
  std::snprintf(text, sizeof(text), "%" PRIu64 " allocation%s (%" PRIu64 " byte%s)", count,
                count == 1 ? "" : "s", u.bytes, u.bytes == 1 ? "" : "s");
  return text;
}

}  // namespace stackwalk::leakcheck
