// The leak report's driver. BuildReport runs the stages of report_model.h that make the model —
// collect, classify, name, group and filter — each in a file of its own; WriteReport renders it
// and writes it out.
#include <memory>
#include <string>
#include <vector>

#include "leakcheck/checks.h"
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
#include "leakcheck/suppressions.h"
#include "leakcheck/recording.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

SpinLock& ReportLock() {
  static SpinLock lock;  // constant-initialized
  return lock;
}

namespace {

// The suppress stage (report_suppress.h) with the built-in rule and the `suppressions` files; a
// file that cannot be read or parsed leaves every file out, and the report says why.
void ApplySuppressions(const Options& options, const Allocation* blocks, size_t n,
                       const std::vector<NamedStack>& stacks, std::vector<Verdict>* verdicts,
                       LeakReport* report) {
  Suppressions suppressions;
  if (const absl::Status status = suppressions.AddFiles(options.suppressions); !status.ok()) {
    report->suppressions_error = std::string(status.message());
    suppressions = Suppressions();
  }
  suppressions.AddBuiltin();
  // No spread yet: only blocks whose own stack matches are suppressed.
  SuppressLeaks(blocks, n, stacks, LeakSpread(), &suppressions, verdicts, report);
}

}  // namespace

int& ReportCount() {
  static int reports_written = 0;
  return reports_written;
}

LeakReport BuildReport(State& state, const char* occasion, int number,
                       std::unique_ptr<FrameNamer>* namer, CheckScope* scope) {
  // Where the reachability scan starts on this thread's stack: above this frame's callees, which
  // hold the scan's own copies of block addresses.
  const int stack_mark = 0;
  const Options& options = state.options;
  const bool scan = true;  // every report and check scans: leaks only by default
  LeakReport report;
  CollectHeader(state, occasion, number, &report);
  {
    LiveSnapshot live(state.allocations);
    std::vector<Verdict> verdicts =
        ClassifyBlocks(live.begin(), live.size(), scan, state.threads,
                       KnownThreadSerial(), reinterpret_cast<uintptr_t>(&stack_mark));
    // Ignored blocks out, and for a check those an earlier check returned (checks.h).
    const size_t n = SelectBlocks(live.begin(), live.size(), &verdicts, scope);
    // Every stack is named before the tallies: at exit some are not the program's.
    std::vector<NamedStack> stacks = CollectStacks(live.begin(), n, state.stacks);
    report.naming_error = NameStacks(&stacks, state.closed.load(std::memory_order_acquire), namer);
    ApplySuppressions(options, live.begin(), n, stacks, &verdicts, &report);
    GroupBlocks(live.begin(), n, verdicts, stacks, report.at_exit, &report);
  }
  report.summary.scanned = scan;
  FilterEntries(options.libraries, options.ignore_libraries, options.show_reachable, &report);
  LabelThreads(state.threads, &report);
  return report;
}

ReportTotals WriteReport(State& state, const char* occasion) {
  SpinLockHolder hold(ReportLock());
  int& reports_written = ReportCount();
  const Options& options = state.options;
  std::unique_ptr<FrameNamer> namer;  // loaded only when there are stacks to name
  const LeakReport report = BuildReport(state, occasion, reports_written + 1, &namer);
  const std::string text =
      options.json ? RenderJson(report)
                   : RenderText(report, [&namer](const std::vector<SymbolizedFrame>& frames) {
                       return namer != nullptr ? namer->Format(frames) : std::string();
                     });
  DeliverReport(options.output, reports_written == 0, text);
  ++reports_written;
  return {report.summary.bytes, report.summary.allocations};
}

}  // namespace stackwalk::leakcheck
