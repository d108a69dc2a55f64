// LastCodeSpan: the code range a walk's last return address fell in, kept in the thread's frame
// logs (FrameLog, FpChainLog) so that its next walk of the same module map generation checks
// return addresses against it first ([lo, lo + span), a subtraction and a compare); and the one
// before it (other), which a walk through the frame cache takes back when a return address leaves
// the first: walks mostly go from one module to another and back. Zeroed
// memory is a valid empty one: the logs live in arena memory that is never constructed.
#ifndef STACKWALK_SRC_CORE_LAST_CODE_SPAN_H_
#define STACKWALK_SRC_CORE_LAST_CODE_SPAN_H_

#include <cstdint>

namespace stackwalk::internal {

class LastCodeSpan {
 public:
  void Set(uint64_t lo, uint64_t span, uint64_t generation) {
    lo_ = lo;
    span_ = span;
    tag_ = generation + 1;
  }
  uint64_t lo() const { return lo_; }
  // The span for a walk of `generation`; 0 (nothing passes) if kept for another one or none.
  uint64_t SpanFor(uint64_t generation) const { return tag_ == generation + 1 ? span_ : 0; }
  void Forget() {
    tag_ = 0;
    other_tag_ = 0;
  }
  void SetOther(uint64_t lo, uint64_t span, uint64_t generation) {
    other_lo_ = lo;
    other_span_ = span;
    other_tag_ = generation + 1;
  }
  uint64_t other_lo() const { return other_lo_; }
  uint64_t OtherSpanFor(uint64_t generation) const {
    return other_tag_ == generation + 1 ? other_span_ : 0;
  }

 private:
  uint64_t lo_ = 0;
  uint64_t span_ = 0;
  uint64_t tag_ = 0;  // the generation plus one; 0: none
  uint64_t other_lo_ = 0;
  uint64_t other_span_ = 0;
  uint64_t other_tag_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_LAST_CODE_SPAN_H_
