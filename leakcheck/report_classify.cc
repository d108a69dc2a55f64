#include "leakcheck/report_classify.h"

namespace stackwalk::leakcheck {

CheckRequest CheckRequestFor(const Options& options) {
  CheckRequest request;
  switch (options.stop_method) {
    case 1: request.stop = StopRequest::kPtrace; break;
    case 2: request.stop = StopRequest::kSignal; break;
    default: request.stop = StopRequest::kAuto; break;
  }
  request.stop_timeout_ms = options.stop_timeout_ms;
  request.roots.anonymous_mappings = options.anonymous_roots;
  return request;
}

void ClassifyBlocks(State& state, CheckOutcome* out) {
  // The signal method's signal is process-wide (its handler stays installed); 0 keeps SIGRTMIN+5.
  SetStopSignal(state.options.stop_signal);
  RunCheck(state, CheckRequestFor(state.options), out);
}

}  // namespace stackwalk::leakcheck
