// The leak report's driver. BuildReport runs the stages of report_model.h that make the model —
// collect, classify, name, group and filter — each in a file of its own; WriteReport renders it
// and writes it out.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "leakcheck/checks.h"
#include "leakcheck/dump/dump_collect.h"
#include "leakcheck/dump/dump_encode.h"
#include "leakcheck/frame_namer.h"
#include "leakcheck/report_classify.h"
#include "leakcheck/report_collect.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/report_group.h"
#include "leakcheck/report_model.h"
#include "leakcheck/report_name.h"
#include "leakcheck/report_render_json.h"
#include "leakcheck/report_render_text.h"
#include "leakcheck/report_suppress.h"
#include "leakcheck/sampler.h"
#include "leakcheck/snapshots.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/mark.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/scratch_arena.h"
#include "leakcheck/suppressions.h"
#include "leakcheck/recording.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

FairLock& ReportLock() {
  static FairLock lock;  // constant-initialized
  return lock;
}

namespace {

// The suppress stage (report_suppress.h) with the built-in rule and the `suppressions` files; a
// file that cannot be read or parsed leaves every file out, and the report says why.
void ApplySuppressions(const Options& options, const Allocation* blocks, size_t n,
                       const std::vector<NamedStack>& stacks, std::vector<Verdict>* verdicts,
                       LeakReport* report) {
  Suppressions suppressions;
  if (const SuppressionsStatus status = suppressions.AddFiles(options.suppressions); !status.ok()) {
    report->suppressions_error = std::string(status.message());
    suppressions = Suppressions();
  }
  suppressions.AddBuiltin();
  // The spread reads leaked blocks after the world resumed (another thread may free one
  // meanwhile): through a SafeReader over a fresh maps snapshot, read only if a rule matched.
  MapsSnapshot maps;
  std::optional<SafeReader> reader;
  ScratchArena scratch;
  const LeakSpread spread = [&](const Allocation* b, size_t count, const Verdict* v,
                                const uint8_t* seeds, uint8_t* out) {
    if (!reader) {
      maps.Read();
      reader.emplace(&maps);
    }
    return SpreadFrom(b, count, v, seeds, *reader, out, &scratch);
  };
  SuppressLeaks(blocks, n, stacks, spread, &suppressions, verdicts, report);
}

// How the check stopped the world, for the report's header and "stop".
void FillStop(const CheckOutcome& check, ReportSummary* summary) {
  summary->method = check.method == StopMethod::kPtrace   ? "ptrace"
                    : check.method == StopMethod::kSignal ? "signal"
                                                          : "none";
  summary->fallback_reason = check.fallback_reason;
  summary->stopped_threads = check.stopped_threads;
  for (const UnstoppedThread& t : check.unstopped) {
    summary->unstopped.push_back({t.tid, t.why != nullptr ? t.why : ""});
  }
  summary->pause_ns = check.pause_ns;
  summary->check_ns = check.check_ns;
}

// The stages up to the raw record (report_model.h): the check's blocks and verdicts, the blocks
// selected, each stack's earliest selected block; the header's stop figures.
struct Classified {
  CheckOutcome check;
  size_t n = 0;  // blocks selected, at the front of check.blocks
  std::vector<uint64_t> earliest;  // by stack id (EarliestBlocks): the dump's and the report's
};

void ClassifyForReport(State& state, CheckScope* scope, LeakReport* report, Classified* out) {
  CheckOutcome& check = out->check;
  ClassifyBlocks(state, &check);
  // Ignored blocks out, and for a check those an earlier check returned (checks.h).
  out->n = SelectBlocks(check.blocks.data(), check.blocks.size(), &check.verdicts, scope);
  out->earliest = EarliestBlocks(check.blocks.data(), out->n, state.stacks);
  report->summary.scanned = check.complete;
  FillStop(check, &report->summary);
}

std::string EncodeDumpOf(State& state, const LeakReport& report, const Classified& c) {
  dump::CollectedDump d =
      dump::CollectDump(state, report, c.check.blocks.data(), c.n, c.check.verdicts, c.earliest);
  return dump::EncodeDump(d.contents, *d.stacks, *d.stats);
}

// A report the program does not name (program_report=0): its dump alone. Its totals are the
// leaks before any suppression (suppressions match names), every live block if no scan ran.
ReportTotals WriteDumpOnly(State& state, const char* occasion, int number, bool first) {
  LeakReport header;
  CollectHeader(state, occasion, number, &header);
  Classified c;
  ClassifyForReport(state, nullptr, &header, &c);
  // Written as it is encoded: the dump's bytes are never whole in memory at once (clang's exit
  // dump is ~20 MB), nor its stacks' frames (read from the stack table as they are written).
  dump::CollectedDump d =
      dump::CollectDump(state, header, c.check.blocks.data(), c.n, c.check.verdicts, c.earliest);
  DeliverDump(state.options.dump, first, [&d](const DumpWriter& write) {
    dump::EncodeDump(d.contents, *d.stacks, *d.stats, write);
  });
  EstimateSum leaks;  // estimates when sampled
  for (size_t i = 0; i < c.n; ++i) {
    const Verdict v = i < c.check.verdicts.size() ? c.check.verdicts[i] : Verdict::kLive;
    if (IsLeak(v) || v == Verdict::kLive) leaks.Add(c.check.blocks[i].size, header.sample_bytes);
  }
  return {leaks.rounded_bytes(), leaks.rounded_count(), header.summary.untracked};
}

// Nothing for the user to act on or asked to see: no entry shown (no leak, no reachable block
// listed with show_reachable), nothing untracked, no thread left running through the check,
// frames named and suppressions read.
bool IsClean(const LeakReport& report) {
  const ReportSummary& s = report.summary;
  return report.entries.empty() && s.allocations == 0 && s.untracked.allocations() == 0 &&
         s.unstopped.empty() && report.naming_error.empty() && report.suppressions_error.empty();
}

}  // namespace

int& ReportCount() {
  static int reports_written = 0;
  return reports_written;
}

LeakReport BuildReport(State& state, const char* occasion, int number,
                       std::unique_ptr<FrameNamer>* namer, CheckScope* scope,
                       std::string* dump) {
  // The check reads this thread's stack from the outermost entry up (WriteReport's, else here).
  CheckEntry entry;
  const Options& options = state.options;
  LeakReport report;
  CollectHeader(state, occasion, number, &report);
  {
    Classified c;
    ClassifyForReport(state, scope, &report, &c);
    const size_t n = c.n;
    const Allocation* blocks = c.check.blocks.data();
    std::vector<Verdict>& verdicts = c.check.verdicts;
    // The raw record, before anything is named or suppressed (the world has resumed).
    if (dump != nullptr) *dump = EncodeDumpOf(state, report, c);
    std::vector<NamedStack> stacks = CollectStacks(c.earliest, state.stacks);
    // Every stack is named before the tallies: at exit some are not the program's.
    report.naming_error = NameStacks(&stacks, state.closed.load(std::memory_order_acquire), namer);
    ApplySuppressions(options, blocks, n, stacks, &verdicts, &report);
    GroupBlocks(blocks, n, verdicts, stacks, report.at_exit, &report);
    FilterEntries(options.libraries, options.ignore_libraries, options.show_reachable, stacks,
                  &report);
  }
  LabelThreads(state.threads, &report);
  return report;
}

ReportTotals WriteReport(State& state, const char* occasion) {
  CheckEntry entry;  // the check reads this thread's stack from here up: the caller's
  FairLockHolder hold(ReportLock());
  int& reports_written = ReportCount();
  const Options& options = state.options;
  const bool dumping = options.dump[0] != '\0';
  if (dumping && !options.program_report) {
    const ReportTotals leaks = WriteDumpOnly(state, occasion, reports_written + 1,
                                             DumpsWritten() == 0);
    ++reports_written;
    return leaks;
  }
  std::unique_ptr<FrameNamer> namer;  // loaded only when there are stacks to name
  std::string dump;
  const LeakReport report = BuildReport(state, occasion, reports_written + 1, &namer, nullptr,
                                        dumping ? &dump : nullptr);
  if (dumping) DeliverDump(options.dump, DumpsWritten() == 0, dump);
  const std::string text =
      options.json ? RenderJson(report)
                   : RenderText(report, [&namer](const std::vector<SymbolizedFrame>& frames) {
                       return namer != nullptr ? namer->Format(frames) : std::string();
                     });
  // A clean exit says nothing on stderr in a process preloaded by hand or started below the
  // launcher's program (State::quiet_clean_exit): the checker may be in every process of a
  // build, whose stderr other programs read.
  const bool quiet =
      report.at_exit && options.output[0] == '\0' && state.quiet_clean_exit && IsClean(report);
  if (!quiet) DeliverReport(options.output, reports_written == 0, text);
  ++reports_written;
  return {report.summary.bytes, report.summary.allocations, report.summary.untracked};
}

}  // namespace stackwalk::leakcheck
