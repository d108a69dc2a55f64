// StepResult: why a walker step did or did not produce a caller frame. "End of stack" (the chain
// ends as the ABI says it ends) and "gave up" (the frame failed validation or could not be read)
// are told apart so that callers and tests can count them.
#ifndef STACKWALK_SRC_CORE_STEP_RESULT_H_
#define STACKWALK_SRC_CORE_STEP_RESULT_H_

namespace stackwalk::internal {

enum class StepResult {
  kOk,            // regs now describe the caller
  kEndOfStack,    // a zero frame pointer or return address: the outermost frame was reached
  kUnreadable,    // the frame record lies outside every known stack region
  kInvalidFrame,  // misaligned, not increasing, too large, or no layout matched
  kNoRule,        // this method has nothing to say about this PC
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_STEP_RESULT_H_
