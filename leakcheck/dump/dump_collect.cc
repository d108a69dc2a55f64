#include "leakcheck/dump/dump_collect.h"

#include <algorithm>
#include <ctime>

#include "leakcheck/dump/dump_modules.h"
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
  const ReportSummary& from = report.summary;
  DumpSummary& s = out->summary;
  s.peak_bytes = from.peak_bytes;
  s.live_allocations = from.live_allocations;
  s.distinct_stacks = from.distinct_stacks;
  s.table_bytes = from.table_bytes;
  s.stack_bytes = from.stack_bytes;
  s.method = from.method;
  s.fallback_reason = from.fallback_reason;
  s.stopped_threads = from.stopped_threads;
  s.pause_ns = from.pause_ns;
  s.check_ns = from.check_ns;
  for (const UnstoppedEntry& u : from.unstopped) s.unstopped.push_back({u.tid, u.why});
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

}  // namespace

DumpContents CollectDump(State& state, const LeakReport& report, const Allocation* blocks,
                         size_t n, const std::vector<Verdict>& verdicts,
                         const std::vector<NamedStack>& stacks) {
  DumpContents out;
  CollectHeader(report, report.summary.scanned, &out);
  const Options& options = state.options;
  out.sample_bytes = report.sample_bytes;
  out.rendering.json = options.json;
  out.rendering.show_reachable = options.show_reachable;
  out.rendering.libraries = options.libraries;
  out.rendering.ignore_libraries = options.ignore_libraries;
  out.rendering.suppressions = options.suppressions;

  ModuleIndexer modules(state.closed.load(std::memory_order_acquire));
  for (uint32_t id = 0; id < stacks.size(); ++id) {
    const NamedStack& stack = stacks[id];
    if (stack.earliest == UINT64_MAX) continue;
    DumpStack s;
    s.id = id;
    s.earliest = stack.earliest;
    for (uintptr_t pc : stack.pcs) s.frames.push_back(modules.Resolve(pc, stack.earliest));
    out.stacks.push_back(std::move(s));
  }
  out.modules = std::move(modules.modules());

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
  return out;
}

}  // namespace stackwalk::leakcheck::dump
