#include "leakcheck/report_classify.h"

namespace stackwalk::leakcheck {

CheckRequest CheckRequestFor(const Options&) {
  // The defaults (kAuto, 1 s, anonymous mappings as roots) until the options name them.
  return CheckRequest();
}

void ClassifyBlocks(State& state, CheckOutcome* out) {
  RunCheck(state, CheckRequestFor(state.options), out);
}

}  // namespace stackwalk::leakcheck
