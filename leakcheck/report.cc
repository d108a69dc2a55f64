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
#include "leakcheck/recording.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

SpinLock& ReportLock() {
  static SpinLock lock;  // constant-initialized
  return lock;
}

int& ReportCount() {
  static int reports_written = 0;
  return reports_written;
}

LeakReport BuildReport(State& state, const char* occasion, int number,
                       std::unique_ptr<FrameNamer>* namer, CheckScope* scope) {
  // The check reads this thread's stack from the outermost entry up (WriteReport's, else here).
  CheckEntry entry;
  const Options& options = state.options;
  LeakReport report;
  CollectHeader(state, occasion, number, &report);
  {
    CheckOutcome check;
    ClassifyBlocks(state, &check);
    // Ignored blocks out, and for a check those an earlier check returned (checks.h).
    const size_t n =
        SelectBlocks(check.blocks.data(), check.blocks.size(), &check.verdicts, scope);
    const Allocation* blocks = check.blocks.data();
    // Every stack is named before the tallies: at exit some are not the program's.
    std::vector<NamedStack> stacks = CollectStacks(blocks, n, state.stacks);
    report.naming_error = NameStacks(&stacks, state.closed.load(std::memory_order_acquire), namer);
    GroupBlocks(blocks, n, check.verdicts, stacks, report.at_exit, &report);
    report.summary.scanned = check.complete;
  }
  FilterEntries(options.libraries, options.ignore_libraries, &report);
  LabelThreads(state.threads, &report);
  return report;
}

ReportTotals WriteReport(State& state, const char* occasion) {
  CheckEntry entry;  // the check reads this thread's stack from here up: the caller's
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
