#include "leakcheck/dump/dump_collect.h"

#include <algorithm>
#include <ctime>

#include "leakcheck/dump/dump_table_stacks.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/mark.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/scratch_arena.h"

namespace stackwalk::leakcheck::dump {
namespace {

uint64_t NowUnixNs() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

void CollectHeader(const LeakReport& report, bool scanned, DumpContents* out) {
  DumpProcess& p = out->process;
  p.pid = report.pid;
  p.number = static_cast<uint32_t>(report.number);
  p.at_exit = report.at_exit;
  p.scanned = scanned;
  p.machine = NativeMachine();
  p.unix_time_ns = NowUnixNs();
  p.program = report.program;
  p.occasion = report.occasion;
  out->summary = report.summary;  // the recorded figures (the one type both share)
}

// The pointers between leaked blocks, each pair once.
bool CollectEdges(const Allocation* blocks, size_t n, const std::vector<Verdict>& verdicts,
                  std::vector<DumpEdge>* edges) {
  if (verdicts.size() < n ||
      std::none_of(verdicts.begin(), verdicts.begin() + static_cast<long>(n), IsLeak)) {
    return true;
  }
  MapsSnapshot maps;
  maps.Read();
  SafeReader reader(&maps);
  ScratchArena scratch;
  const bool done = LeakEdges(
      blocks, n, verdicts.data(), reader,
      [](size_t from, size_t to, void* context) {
        static_cast<std::vector<DumpEdge>*>(context)->push_back(
            {static_cast<uint32_t>(from), static_cast<uint32_t>(to)});
      },
      edges, &scratch);
  std::sort(edges->begin(), edges->end(), [](const DumpEdge& a, const DumpEdge& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  });
  edges->erase(std::unique(edges->begin(), edges->end(),
                           [](const DumpEdge& a, const DumpEdge& b) {
                             return a.from == b.from && a.to == b.to;
                           }),
               edges->end());
  return done;
}

// Which stacks the profile's statistics list (their figures are read as the section is written,
// TableStackStats), and the frames of those no longer live (the allocations and temporary views
// need them). Their modules are resolved as of now: a stack none of whose blocks is live has no
// earliest block to date its frames by.
void CollectStackStats(State& state, const std::vector<uint64_t>& earliest, TableStacks* stacks,
                       TableStackStats* stats, DumpContents* out) {
  out->has_stack_stats = true;
  const uint64_t final_epoch = stats->final_epoch();
  const uint64_t now = state.allocations.next_sequence();
  const uint32_t end = state.stacks.size() + 1;
  stats->Reserve(end - 1);
  for (uint32_t id = 1; id < end; ++id) {
    StackStatsTotals totals;
    if (!state.stacks.Totals(id, final_epoch, &totals)) continue;
    if (totals.allocations == 0 && totals.live_blocks == 0) continue;
    stats->Add(id);
    if (id < earliest.size() && earliest[id] != UINT64_MAX) continue;  // listed already
    stacks->Add(id, UINT64_MAX, now);
  }
}

// Every thread that allocated: its live bytes now and their peak.
void CollectThreadTotals(const ThreadRegistry& threads, DumpContents* out) {
  out->has_thread_totals = true;
  ThreadRegistry::Thread t;
  for (uint32_t serial = 1; serial < threads.end(); ++serial) {
    if (!threads.Lookup(serial, &t)) continue;
    out->thread_totals.push_back({serial, t.tid, t.exited, t.live_bytes, t.peak_bytes, t.name});
  }
}

// The timeline's points, their times from its first; the last one taken now (the state at the
// dump, whenever the last allocation was).
void CollectTimeline(State& state, DumpContents* out) {
  Timeline& timeline = state.timeline;
  timeline.Sample(Timeline::CoarseNowNs(), state.live_bytes.live.load(std::memory_order_relaxed),
                  false, state.threads);
  std::vector<Timeline::Point> points(Timeline::kPoints);
  const uint32_t n = timeline.Copy(points.data(), Timeline::kPoints, &out->timeline_interval_ns);
  out->has_timeline = true;
  for (uint32_t i = 0; i < n; ++i) {
    const Timeline::Point& p = points[i];
    DumpTimelinePoint point;
    point.time_ns = p.time_ns - points[0].time_ns;
    point.live_bytes = p.live_bytes;
    point.at_peak = p.at_peak != 0;
    for (uint32_t t = 0; t < p.threads && t < Timeline::kThreadsPerPoint; ++t) {
      point.threads.push_back({p.thread[t].serial, p.thread[t].live_bytes});
    }
    out->timeline.push_back(std::move(point));
  }
}

}  // namespace

CollectedDump CollectDump(State& state, const LeakReport& report, const Allocation* blocks,
                          size_t n, const std::vector<Verdict>& verdicts,
                          const std::vector<uint64_t>& earliest) {
  CollectedDump collected;
  DumpContents& out = collected.contents;
  CollectHeader(report, report.summary.scanned, &out);
  const Options& options = state.options;
  out.sample_bytes = report.sample_bytes;
  out.rendering.json = options.json;
  out.rendering.show_reachable = options.show_reachable;
  out.rendering.libraries = options.libraries;
  out.rendering.ignore_libraries = options.ignore_libraries;
  out.rendering.suppressions = options.suppressions;

  collected.stacks = std::make_unique<TableStacks>(state.stacks, state.closed);
  TableStacks& listed = *collected.stacks;
  for (uint32_t id = 0; id < earliest.size(); ++id) {
    if (earliest[id] != UINT64_MAX) listed.Add(id, earliest[id], earliest[id]);
  }
  collected.stats = std::make_unique<TableStackStats>(
      state.stacks, state.peak_epoch.load(std::memory_order_relaxed));
  CollectStackStats(state, earliest, &listed, collected.stats.get(), &out);
  out.modules = listed.TakeModules();

  std::vector<uint32_t> serials;
  out.blocks.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Allocation& a = blocks[i];
    const Verdict verdict = i < verdicts.size() ? verdicts[i] : Verdict::kLive;
    out.blocks.push_back({a.address, a.size, a.sequence, a.stack_id, a.thread,
                          static_cast<uint8_t>(verdict)});
    serials.push_back(static_cast<uint32_t>(a.thread));
  }
  out.has_edges = CollectEdges(blocks, n, verdicts, &out.edges);

  std::sort(serials.begin(), serials.end());
  serials.erase(std::unique(serials.begin(), serials.end()), serials.end());
  ThreadRegistry::Thread t;
  for (uint32_t serial : serials) {
    if (!state.threads.Lookup(serial, &t)) continue;
    out.threads.push_back({serial, t.tid, t.peak_bytes, t.name});
  }
  CollectThreadTotals(state.threads, &out);
  CollectTimeline(state, &out);
  return collected;
}

}  // namespace stackwalk::leakcheck::dump
