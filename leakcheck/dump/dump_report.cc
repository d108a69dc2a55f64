#include "leakcheck/dump/dump_report.h"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>

#include "leakcheck/allocation_table.h"
#include "leakcheck/report_group.h"
#include "leakcheck/report_render_json.h"
#include "leakcheck/report_render_text.h"
#include "leakcheck/report_suppress.h"
#include "leakcheck/suppressions.h"

namespace stackwalk::leakcheck::dump {
namespace {

// Stack ids and thread serials come from the dump: renumbered densely (in order, so that ties
// sort as the program's do) before the stages index vectors by them. A sorted vector, not a map:
// clang's exit dump has ~47,000 stacks, each found several times.
template <class T>
class DenseNumbers {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  explicit DenseNumbers(std::vector<T> values) : values_(std::move(values)) {
    std::sort(values_.begin(), values_.end());
    values_.erase(std::unique(values_.begin(), values_.end()), values_.end());
  }
  // The dense number of `value`, kNone if it was not among the values.
  uint32_t Find(T value) const {
    const auto at = std::lower_bound(values_.begin(), values_.end(), value);
    return at != values_.end() && *at == value ? static_cast<uint32_t>(at - values_.begin())
                                               : kNone;
  }
  size_t size() const { return values_.size(); }
  T value(uint32_t number) const { return values_[number]; }

 private:
  std::vector<T> values_;
};

void CopyHeader(const DumpContents& dump, LeakReport* report) {
  const DumpProcess& p = dump.process;
  report->occasion = p.occasion;
  report->at_exit = p.at_exit;
  report->number = static_cast<int>(p.number);
  report->pid = p.pid;
  report->program = p.program.empty() ? "?" : p.program;
  report->sample_bytes = dump.sample_bytes;
  static_cast<RecordedSummary&>(report->summary) = dump.summary;  // the one type both share
}

// The suppress stage's spread over the dump's leak edges: what each seed holds, transitively.
LeakSpread SpreadOverEdges(const DumpContents& dump) {
  if (!dump.has_edges) return {};
  auto next = std::make_shared<std::vector<std::vector<uint32_t>>>(dump.blocks.size());
  for (const DumpEdge& e : dump.edges) (*next)[e.from].push_back(e.to);
  return [next](const Allocation*, size_t n, const Verdict* verdicts, const uint8_t* seeds,
                uint8_t* out) {
    std::vector<size_t> work;
    for (size_t i = 0; i < n; ++i) {
      if (seeds[i] && IsLeak(verdicts[i])) {
        out[i] = 1;
        work.push_back(i);
      }
    }
    while (!work.empty()) {
      const size_t from = work.back();
      work.pop_back();
      if (from >= next->size()) continue;
      for (uint32_t to : (*next)[from]) {
        if (to >= n || out[to] || !IsLeak(verdicts[to])) continue;
        out[to] = 1;
        work.push_back(to);
      }
    }
    return true;
  };
}

}  // namespace

LeakReport ReportFromDump(const DumpContents& dump, const RenderRequest& request,
                          DumpNamer* namer) {
  const DumpRendering& r = dump.rendering;
  LeakReport report;
  CopyHeader(dump, &report);

  std::vector<uint32_t> stack_ids, serials;
  for (const DumpStack& s : dump.stacks) stack_ids.push_back(s.id);
  for (const DumpBlock& b : dump.blocks) serials.push_back(static_cast<uint32_t>(b.thread));
  const DenseNumbers<uint32_t> stack_index(std::move(stack_ids));
  const DenseNumbers<uint32_t> thread_index(std::move(serials));

  // The name stage, through the one namer: in full the stacks the report may show (those of
  // blocks not reachable, or every one with show_reachable); of the others only the first frame
  // (GroupBlocks asks its function), and the rest by module and offset when the library filters
  // ask those. clang leaves ~27,000 reachable blocks from ~4,600 stacks at exit and shows 6.
  const bool show_reachable = request.show_reachable.value_or(r.show_reachable);
  std::vector<uint8_t> shown(stack_index.size(), 0);  // by dense number
  for (const DumpBlock& b : dump.blocks) {
    if (static_cast<Verdict>(b.verdict) == Verdict::kReachable) continue;
    const uint32_t index = stack_index.Find(b.stack_id);
    if (index != stack_index.kNone) shown[index] = 1;
  }
  std::vector<NamedStack> stacks(stack_index.size());
  std::vector<DumpNamer::ToName> to_name;
  std::vector<uint8_t> listed(stack_index.size(), 0);
  for (const DumpStack& s : dump.stacks) {
    const uint32_t index = stack_index.Find(s.id);  // every stack's id is among them
    if (listed[index]) continue;  // a stack listed twice: its first
    if (s.earliest == UINT64_MAX) continue;  // no live block: the profile's, not the report's
    listed[index] = 1;
    to_name.push_back({&s, show_reachable || shown[index] ? INT_MAX : 1});
  }
  namer->OpenFiles(to_name);  // the objects read in parallel, not as their first frame comes
  // The library filters read every frame's module; without them a stack not shown needs only
  // the frames looked up (clang's ~29,000 such stacks held ~700,000 frames, 34 MB named).
  const std::string libraries = request.libraries.value_or(r.libraries);
  const std::string ignore_libraries = request.ignore_libraries.value_or(r.ignore_libraries);
  const bool filtered = !libraries.empty() || !ignore_libraries.empty();
  for (const DumpNamer::ToName& s : to_name) {
    NamedStack& named = stacks[stack_index.Find(s.stack->id)];
    named.earliest = s.stack->earliest;
    named.pcs.reserve(s.stack->frames.size());
    for (const DumpFrame& f : s.stack->frames) {
      named.pcs.push_back(static_cast<uintptr_t>(
          f.module == kUnknownModule ? f.offset : dump.modules[f.module].load_bias + f.offset));
    }
    named.frames = namer->Name(*s.stack, s.look_up, filtered ? INT_MAX : s.look_up);
  }
  if (!namer->missing().empty()) {
    report.naming_error = "no file for " + std::to_string(namer->missing().size()) +
                          " object(s): ";
    for (size_t i = 0; i < namer->missing().size(); ++i) {
      report.naming_error += (i ? "; " : "") + namer->missing()[i];
    }
  }

  std::vector<Allocation> blocks;
  std::vector<Verdict> verdicts;
  blocks.reserve(dump.blocks.size());
  for (const DumpBlock& b : dump.blocks) {
    const uint32_t stack = stack_index.Find(b.stack_id);
    blocks.push_back({static_cast<uintptr_t>(b.address), b.size, b.sequence,
                      stack != stack_index.kNone ? stack : static_cast<uint32_t>(stacks.size()),
                      static_cast<int32_t>(thread_index.Find(static_cast<uint32_t>(b.thread)))});
    verdicts.push_back(static_cast<Verdict>(b.verdict));
  }

  Suppressions suppressions;
  const std::string files = request.suppressions.value_or(r.suppressions);
  if (const SuppressionsStatus status = suppressions.AddFiles(files); !status.ok()) {
    report.suppressions_error = std::string(status.message());
    suppressions = Suppressions();
  }
  suppressions.AddBuiltin();
  SuppressLeaks(blocks.data(), blocks.size(), stacks, SpreadOverEdges(dump), &suppressions,
                &verdicts, &report);
  GroupBlocks(blocks.data(), blocks.size(), verdicts, stacks, report.at_exit, &report);
  report.summary.scanned = dump.process.scanned;
  FilterEntries(libraries.c_str(), ignore_libraries.c_str(), show_reachable, stacks, &report);

  // The label stage, from the dump's threads (by their serials in the program).
  std::map<uint32_t, const DumpThread*> by_serial;
  for (const DumpThread& t : dump.threads) by_serial.emplace(t.serial, &t);
  auto label = [&](uint32_t index, std::string* name, int* tid) -> const DumpThread* {
    if (index >= thread_index.size()) return nullptr;
    const auto found = by_serial.find(thread_index.value(index));
    if (found == by_serial.end()) return nullptr;
    *name = found->second->name.empty() ? "?" : found->second->name;
    *tid = found->second->tid;
    return found->second;
  };
  for (ThreadEntry& thread : report.threads) {
    if (const DumpThread* t = label(thread.serial, &thread.name, &thread.tid)) {
      thread.peak_bytes = t->peak_bytes;
    }
    if (thread.serial < thread_index.size()) thread.serial = thread_index.value(thread.serial);
  }
  for (ReportEntry& entry : report.entries) {
    label(entry.thread, &entry.thread_name, &entry.tid);
    if (entry.thread < thread_index.size()) entry.thread = thread_index.value(entry.thread);
  }
  return report;
}

std::string RenderDumpReport(const DumpContents& dump, const RenderRequest& request,
                             const NamingPlaces& places, uint64_t* leaked_allocations) {
  DumpNamer namer(dump, places);
  const LeakReport report = ReportFromDump(dump, request, &namer);
  if (leaked_allocations != nullptr) *leaked_allocations = report.summary.allocations;
  if (request.json.value_or(dump.rendering.json)) return RenderJson(report);
  return RenderText(report, [](const std::vector<SymbolizedFrame>& frames) {
    return FormatFrames(frames);
  });
}

}  // namespace stackwalk::leakcheck::dump
