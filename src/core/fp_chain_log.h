// FpChainLog: the frame records a thread's last frame-pointer walk climbed on x86_64 or aarch64
// (psABI §3.6.2, AAPCS64 §6.2.3: a record at fp holds the caller's fp, then the return address),
// so that the next walk can take every record whose two words still hold their values without
// stepping through it again. The walk records and replays it (walk/walk_cfi-inl.inc,
// ClimbFrameRecords); it lives here, in core, because the thread's RuleCache holds it.
//
// Why it is exact: a frame-pointer step from the record at fp reads those two words and checks
// them against fp, the sp it starts from (the record above the last one, fp + 16), the stack
// region's top and the code ranges of the module map generation. A logged record whose words are
// unchanged, reached from the same previous record, passes the same checks with the same result;
// only where the walk joins the log (a record at the same address, reached from elsewhere) is the
// sp check made again. Unlike FrameLog it keeps 24 bytes a record, not 64: the step's formula is
// fixed, so the record's address and words say everything, and the replay's loads do not wait on
// each other as a fresh climb's do (each fresh step loads the next record's address).
//
// Memory: two arrays of kCapacity records of 24 bytes (6 KiB), inside the thread's rule cache. A
// walk rewrites the log in place: its i-th record goes where the log's i-th was, once the walk
// has read past it, so a record replayed at its old index is not even copied. A walk that runs
// deeper than the log (more records before the part they share) would overwrite records it has
// yet to read: from there it writes the other array, and that becomes the log.
#ifndef STACKWALK_SRC_CORE_FP_CHAIN_LOG_H_
#define STACKWALK_SRC_CORE_FP_CHAIN_LOG_H_

#include <cstdint>

#include "core/last_code_span.h"

namespace stackwalk::internal {

class FpChainLog {
 public:
  static constexpr int kCapacity = 128;

  struct Record {
    uint64_t at;     // the record's address (the frame's fp)
    uint64_t ra;     // the return address it held, as read (before ReportedPc)
    uint64_t saved;  // the caller's fp it held: the next record's address
  };

  // The last walk's records, innermost first, if it was made for this module map generation and
  // stack region (whose top bounds every step); else none (0).
  int size_for(uint64_t generation, uint64_t top) const {
    return tag_ == generation + 1 && top_ == top ? size_ : 0;
  }
  // The records, read and rewritten in place by the walk: it writes its i-th record over the
  // log's i-th once it has read past it. A walk deeper than the log where it joins it would
  // overwrite records it has yet to read: it moves its records to spare() and goes on there.
  Record* records() { return records_[current_]; }
  Record* spare() { return records_[current_ ^ 1]; }
  // The walk's records [0, n) are the log now: in records(), or in spare() if `in_spare`.
  void Commit(int n, bool in_spare, uint64_t generation, uint64_t top) {
    if (in_spare) current_ ^= 1;
    size_ = n;
    tag_ = generation + 1;
    top_ = top;
  }
  void Invalidate() {
    tag_ = 0;
    code_.Forget();
  }

  // The code range the last walk's last return address fell in (last_code_span.h).
  LastCodeSpan& code() { return code_; }

  // Records taken from the log rather than stepped, over the thread's life (tests, tuning).
  uint64_t replayed() const { return replayed_; }
  void AddReplayed(int n) { replayed_ += static_cast<uint64_t>(n); }

 private:
  Record records_[2][kCapacity];
  int current_ = 0;
  int size_ = 0;
  uint64_t tag_ = 0;  // the generation plus one; 0: no log
  uint64_t top_ = 0;
  LastCodeSpan code_;
  uint64_t replayed_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_FP_CHAIN_LOG_H_
