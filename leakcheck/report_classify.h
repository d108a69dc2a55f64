// The classify stage of a leak report (report_model.h): one leak check (scan/check.h) over the
// live blocks, whose verdicts say which are reachable and which are direct or indirect leaks.
// Not signal-safe: allocates (outside the check's stopped section), reads other threads' memory.
#ifndef STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_
#define STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_

#include "leakcheck/options.h"
#include "leakcheck/scan/check.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

// The check the options ask for (stop method, timeout, roots).
CheckRequest CheckRequestFor(const Options& options);

// Runs the check: `out` gets the live blocks, sorted by address, and one verdict per block
// (all kLive, with out->error saying why, if the scan could not finish). Call as RunCheck: under
// a ReentryGuard, with ReportLock() held.
void ClassifyBlocks(State& state, CheckOutcome* out);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_CLASSIFY_H_
