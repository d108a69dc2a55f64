#include "leakcheck/report_suppress.h"

#include <algorithm>

#include "leakcheck/sampler.h"

namespace stackwalk::leakcheck {

void SuppressLeaks(const Allocation* blocks, size_t n, const std::vector<NamedStack>& stacks,
                   const LeakSpread& spread, Suppressions* suppressions,
                   std::vector<Verdict>* verdicts, LeakReport* report) {
  if (suppressions->empty() || verdicts->size() < n) return;
  const std::vector<SuppressionRule>& rules = suppressions->rules();
  // The first matching rule of each stack, looked up once per stack: -1 none, -2 not yet.
  std::vector<int> rule_of_stack(stacks.size(), -2);
  auto rule_of = [&](uint32_t stack_id) -> int {
    if (stack_id >= stacks.size()) return -1;
    int& rule = rule_of_stack[stack_id];
    if (rule == -2) {
      const SuppressionRule* match = suppressions->Match(stacks[stack_id].frames);
      rule = match != nullptr ? static_cast<int>(match - rules.data()) : -1;
    }
    return rule;
  };
  // Each leaked block's own rule, then, rule by rule, the blocks its leaks hold.
  std::vector<int> suppressed_by(n, -1);
  std::vector<uint8_t> any_seed(rules.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    if (!IsLeak((*verdicts)[i])) continue;
    suppressed_by[i] = rule_of(blocks[i].stack_id);
    if (suppressed_by[i] >= 0) any_seed[static_cast<size_t>(suppressed_by[i])] = 1;
  }
  if (spread) {
    std::vector<uint8_t> seeds(n), out(n);
    for (size_t r = 0; r < rules.size(); ++r) {
      if (!any_seed[r]) continue;
      for (size_t i = 0; i < n; ++i) seeds[i] = suppressed_by[i] == static_cast<int>(r);
      std::fill(out.begin(), out.end(), 0);
      if (!spread(blocks, n, verdicts->data(), seeds.data(), out.data())) continue;
      for (size_t i = 0; i < n; ++i) {
        if (out[i] && suppressed_by[i] < 0 && IsLeak((*verdicts)[i])) {
          suppressed_by[i] = static_cast<int>(r);
        }
      }
    }
  }
  // The figures are estimates when sampled (report->sample_bytes), summed then rounded.
  ReportSummary& summary = report->summary;
  std::vector<EstimateSum> rule_sums(rules.size());
  EstimateSum all;
  for (size_t i = 0; i < n; ++i) {
    if (suppressed_by[i] < 0) continue;
    rule_sums[static_cast<size_t>(suppressed_by[i])].Add(blocks[i].size, report->sample_bytes);
    all.Add(blocks[i].size, report->sample_bytes);
    (*verdicts)[i] = Verdict::kIgnored;
  }
  for (size_t r = 0; r < rules.size(); ++r) {
    if (rule_sums[r].count == 0) continue;
    SuppressionRule* rule = suppressions->MutableRule(&rules[r]);
    rule->count += rule_sums[r].rounded_count();
    rule->bytes += rule_sums[r].rounded_bytes();
  }
  summary.suppressed_allocations += all.rounded_count();
  summary.suppressed_bytes += all.rounded_bytes();
  for (const SuppressionRule& rule : suppressions->Used()) {
    report->suppressions.push_back({rule.pattern, rule.count, rule.bytes, rule.builtin});
  }
}

}  // namespace stackwalk::leakcheck
