#include "leakcheck/report_classify.h"

#include <algorithm>

#include "leakcheck/reachability.h"

namespace stackwalk::leakcheck {

std::vector<Verdict> ClassifyBlocks(Allocation* blocks, size_t n, bool scan,
                                    const ThreadRegistry& threads, uint32_t self_serial,
                                    uintptr_t stack_pointer) {
  std::vector<Verdict> verdicts(n, Verdict::kLive);
  if (!scan) return verdicts;
  std::sort(blocks, blocks + n,
            [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
  const std::vector<uint8_t> reachable =
      MarkReachable(blocks, n, threads, self_serial, stack_pointer);
  for (size_t i = 0; i < n && i < reachable.size(); ++i) {
    verdicts[i] = reachable[i] ? Verdict::kReachable : Verdict::kDirect;
  }
  return verdicts;
}

}  // namespace stackwalk::leakcheck
