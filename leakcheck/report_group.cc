#include "leakcheck/report_group.h"

#include <algorithm>

#include "leakcheck/options.h"
#include "leakcheck/sampler.h"

namespace stackwalk::leakcheck {
namespace {

constexpr size_t kVerdicts = kVerdictCount;

// The exit report runs inside exit(), from one of its exit handlers: the blocks of glibc's list
// of exit handlers (__new_exitfn adds one per 32 atexit/__cxa_atexit registrations, which a C++
// program with many static destructors reaches) are still allocated then, and exit() frees them
// once the handlers have run. Not the program's leaks (valgrind, checking later, never sees them).
bool FreedByExitAfterTheReport(const std::vector<SymbolizedFrame>& frames) {
  return !frames.empty() && frames[0].function == "__new_exitfn";
}

// Stack `id` of `stacks`; one of no frames for an id past them (a block of no known stack).
const NamedStack& StackOf(const std::vector<NamedStack>& stacks, uint32_t id) {
  static const NamedStack kUnknown;
  return id < stacks.size() ? stacks[id] : kUnknown;
}

}  // namespace

void GroupBlocks(const Allocation* blocks, size_t n, const std::vector<Verdict>& verdicts,
                 const std::vector<NamedStack>& stacks, bool at_exit, LeakReport* report) {
  auto stack_of = [&](uint32_t id) -> const NamedStack& { return StackOf(stacks, id); };
  std::vector<uint32_t> slot;  // (stack id, verdict) -> 1 + index in report->entries
  std::vector<ThreadEntry> threads;
  // Each entry's and thread's figures, estimates when sampled (report->sample_bytes).
  const uint64_t mean = report->sample_bytes;
  std::vector<EstimateSum> entry_sums, thread_sums;
  for (size_t i = 0; i < n; ++i) {
    const Allocation& a = blocks[i];
    const NamedStack& stack = stack_of(a.stack_id);
    if (at_exit && FreedByExitAfterTheReport(stack.frames)) continue;
    const Verdict verdict = i < verdicts.size() ? verdicts[i] : Verdict::kLive;
    const size_t key = a.stack_id * kVerdicts + static_cast<size_t>(verdict);
    if (key >= slot.size()) slot.resize(key + 1, 0);
    if (slot[key] == 0) {
      ReportEntry entry;
      entry.stack_id = a.stack_id;
      entry.verdict = verdict;  // its frames come with FilterEntries, if it is shown
      report->entries.push_back(std::move(entry));
      entry_sums.emplace_back();
      slot[key] = static_cast<uint32_t>(report->entries.size());
    }
    ReportEntry& entry = report->entries[slot[key] - 1];
    entry_sums[slot[key] - 1].Add(a.size, mean);
    if (a.sequence < entry.first_sequence) {
      entry.first_sequence = a.sequence;
      entry.thread = static_cast<uint32_t>(a.thread);
    }
    const uint32_t serial = static_cast<uint32_t>(a.thread);
    if (serial >= threads.size()) {
      threads.resize(serial + 1);
      thread_sums.resize(serial + 1);
    }
    threads[serial].serial = serial;
    thread_sums[serial].Add(a.size, mean);
    ++threads[serial].count;  // blocks, until replaced by the estimate below
  }
  for (size_t i = 0; i < report->entries.size(); ++i) {
    report->entries[i].bytes = entry_sums[i].rounded_bytes();
    report->entries[i].count = entry_sums[i].rounded_count();
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].count == 0) continue;
    threads[i].bytes = thread_sums[i].rounded_bytes();
    threads[i].count = thread_sums[i].rounded_count();
  }
  threads.erase(std::remove_if(threads.begin(), threads.end(),
                               [](const ThreadEntry& t) { return t.count == 0; }),
                threads.end());
  std::sort(threads.begin(), threads.end(), [](const ThreadEntry& a, const ThreadEntry& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.serial < b.serial;
  });
  report->threads = std::move(threads);
}

bool PassesLibraryFilters(const char* libraries, const char* ignore_libraries,
                          const std::vector<SymbolizedFrame>& frames) {
  bool selected = libraries == nullptr || libraries[0] == '\0';
  for (const SymbolizedFrame& f : frames) {
    if (f.module.empty()) continue;
    if (MatchesAnyPattern(ignore_libraries, f.module.c_str())) return false;
    if (!selected && MatchesAnyPattern(libraries, f.module.c_str())) selected = true;
  }
  return selected;
}

void FilterEntries(const char* libraries, const char* ignore_libraries, bool show_reachable,
                   const std::vector<NamedStack>& stacks, LeakReport* report) {
  auto stack_of = [&](uint32_t id) -> const NamedStack& { return StackOf(stacks, id); };
  std::vector<ReportEntry>& entries = report->entries;
  ReportSummary& summary = report->summary;
  report->show_reachable = show_reachable;
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [&](const ReportEntry& entry) {
                                 return entry.verdict == Verdict::kIgnored ||
                                        !PassesLibraryFilters(libraries, ignore_libraries,
                                                              stack_of(entry.stack_id).frames);
                               }),
                entries.end());
  summary.reachable_bytes = summary.reachable_allocations = 0;
  for (const ReportEntry& entry : entries) {
    if (entry.verdict != Verdict::kReachable) continue;
    summary.reachable_bytes += entry.bytes;
    summary.reachable_allocations += entry.count;
  }
  if (!show_reachable) {
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [](const ReportEntry& entry) {
                                   return entry.verdict == Verdict::kReachable;
                                 }),
                  entries.end());
  }
  // Copied only now, into the entries shown: clang leaves ~4,800 (stack, verdict) entries at
  // exit, of which it shows 6, and copying every entry's frames cost its report ~60 ms.
  for (ReportEntry& entry : entries) {
    const NamedStack& stack = stack_of(entry.stack_id);
    entry.pcs = stack.pcs;
    entry.frames = stack.frames;
  }
  std::sort(entries.begin(), entries.end(), [](const ReportEntry& a, const ReportEntry& b) {
    const bool a_reachable = a.verdict == Verdict::kReachable;
    const bool b_reachable = b.verdict == Verdict::kReachable;
    if (a_reachable != b_reachable) return b_reachable;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.first_sequence < b.first_sequence;
  });
  summary.bytes = summary.allocations = 0;
  summary.direct_bytes = summary.direct_allocations = 0;
  summary.indirect_bytes = summary.indirect_allocations = 0;
  for (const ReportEntry& entry : entries) {
    if (entry.verdict == Verdict::kReachable) continue;
    summary.bytes += entry.bytes;
    summary.allocations += entry.count;
    if (entry.verdict == Verdict::kDirect) {
      summary.direct_bytes += entry.bytes;
      summary.direct_allocations += entry.count;
    } else if (entry.verdict == Verdict::kIndirect) {
      summary.indirect_bytes += entry.bytes;
      summary.indirect_allocations += entry.count;
    }
  }
}

}  // namespace stackwalk::leakcheck
