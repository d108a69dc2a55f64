// FrameLog: the frames of a thread's last complete CFI walk on x86_64 or aarch64 (EHFRAME or
// AUTO, told apart by Tag()), with the stack slots each step read, so that the next
// walk can reuse every frame whose slots still hold the same values ("validated incremental
// unwinding"; nwind/bytehound reach the same end by patching return addresses, which breaks
// exceptions and longjmp, while this only reads). The walk records and replays it
// (walk/walk_cfi-inl.inc); it lives here, in core, because the thread's RuleCache holds it.
//
// Why it is exact: a cached step's result is a function of the frame's (pc, sp, fp), the rule
// for pc (same module generation) and the slots it
// reads. Once a new walk reaches a frame whose
// (pc, sp, fp) equals a logged one, each following logged frame is what a fresh step would give
// as long as the slots its predecessor read are unchanged; the first changed slot hands the
// walk back to ordinary steps.
//
// Memory: two arrays of kCapacity frames of 64 bytes (32 KiB), inside the thread's rule cache.
#ifndef STACKWALK_SRC_CORE_FRAME_LOG_H_
#define STACKWALK_SRC_CORE_FRAME_LOG_H_

#include <cstdint>
#include <cstring>

#include "core/last_code_span.h"

namespace stackwalk::internal {

class FrameLog {
 public:
  static constexpr int kCapacity = 256;
  static_assert((kCapacity & (kCapacity - 1)) == 0, "the ring's index is a mask");

  struct Frame {
    uint64_t pc;
    uint64_t sp;
    uint64_t fp;
    uint64_t ra_addr;  // the slot the step from this frame read the return address from
    uint64_t ra_val;
    uint64_t fp_addr;  // the fp slot the replay checks (ra_addr again if none matters)
    uint64_t fp_val;
    uint32_t flags;
    int32_t fp_slot_offset;  // with kRestoresFp: where the caller's fp is, from ra_addr
  };
  static_assert(sizeof(Frame) == 64, "one cache line per frame");

  enum : uint32_t {
    kHasFp = 1,
    kExact = 2,       // the frame's pc is exact (a walk's first): matches only an exact pc
    kEndOfStack = 4,  // the step from this frame found the end of the stack
    kCfaFromFp = 8,   // the step from this frame computed the CFA from fp
    kRestoresFp = 16, // the step from this frame read the caller's fp from a slot
    kFpMatters = 32,  // the replay from this frame depends on the fp it starts with
  };

  // What a log is valid for: the module map generation (rules may change with it) and the
  // method (an AUTO walk may take frame-pointer steps an EHFRAME walk must not replay).
  static uint64_t Tag(uint64_t generation, int method) { return generation * 8 + 1 + method; }

  // The arena's tables are zeroed memory that Clear() readies, never constructed; one made
  // otherwise is ready as well (its sentinel written).
  FrameLog() { Invalidate(); }

  // ---- recording the walk in progress ----
  void BeginWalk(uint64_t generation) {
    walk_generation_ = generation;
    walk_region_lo_ = walk_region_hi_ = 0;
    scratch_n_ = 0;
    scratch_ok_ = true;
    splice_from_ = -1;
    cursor_ = first_;
  }
  // A step the log cannot describe happened: this walk will not replace the log.
  void Break() { scratch_ok_ = false; }

  const Frame& frame(int i) const { return log_[i]; }
  // The stack region every logged slot lies in (checked once per replay, not per slot).
  uint64_t region_lo() const { return region_lo_; }
  uint64_t region_hi() const { return region_hi_; }
  void set_walk_region(uint64_t lo, uint64_t hi) {
    if (lo != walk_region_lo_ || hi != walk_region_hi_) {
      if (walk_region_hi_ != 0) scratch_ok_ = false;  // a second region: not one log
      walk_region_lo_ = lo;
      walk_region_hi_ = hi;
    }
  }

  // ---- a run of steps: matching and recording with the walk's state in registers ----
  // A copy of the log's walk state (the cursor, the recording) that a loop matches and records
  // through, written back by Store(): the loop's own variables, not the log's members, which
  // every store into the stack or the output could otherwise alias. Empty (matching nothing,
  // recording nothing) when default-constructed, for a walk without a log.
  class Walker {
   public:
    Walker() = default;  // matches nothing: its frames are the end alone
    // A log made for another generation or method matches nothing: its cursor starts at the end.
    explicit Walker(FrameLog& log)
        : log_frames_(log.log_),
          scratch_(log.scratch_),
          cursor_(log.first_ != kCapacity && log.generation_ != 0 &&
                          log.walk_generation_ == log.generation_
                      ? log.cursor_
                      : kCapacity),
          scratch_n_(log.scratch_n_),
          scratch_ok_(log.scratch_ok_) {}
    // The index of a logged frame equal to (pc, sp, fp), or -1. Frames are visited in order of
    // increasing sp, so a walk's successive calls cost O(1) each. `exact`: pc is the walk's first
    // frame's own (a capture's, or an interrupted one), whose rule is looked up at pc and not at
    // pc - 1, so it matches only a logged frame that was exact too: the same capture site at the
    // same depth, which the next capture then replays from its first frame on. Code
    // without frame pointers uses fp as a general register, so its value only has to agree where
    // some later logged step reads it before restoring it (kFpMatters).
    int Match(uint64_t pc, uint64_t sp, uint64_t fp, bool has_fp, bool exact) {
      while (log_frames_[cursor_].sp < sp) ++cursor_;  // stops at the sentinel, if not before
      const Frame& f = log_frames_[cursor_];
      if (f.sp != sp || f.pc != pc || ((f.flags & kExact) != 0) != exact) return -1;
      if ((f.flags & kFpMatters) != 0 && (!has_fp || (f.flags & kHasFp) == 0 || f.fp != fp)) {
        return -1;
      }
      ++matches_;
      return cursor_;
    }
    // Walks deeper than kCapacity keep their outermost kCapacity frames (a ring).
    void Record(const Frame& f) {
      if (Frame* to = Next()) *to = f;
    }
    // The slot the next recorded frame goes in, for the caller to fill; null when this walk
    // records nothing.
    Frame* Next() {
      if (!scratch_ok_) return nullptr;
      return &scratch_[static_cast<unsigned>(scratch_n_++) % kCapacity];  // a mask: 2^k
    }
    void Break() { scratch_ok_ = false; }  // as FrameLog::Break
    // Writes the cursor, the recording and the matches back into the log.
    void Store(FrameLog& log) const {
      log.cursor_ = cursor_;
      log.scratch_n_ = scratch_n_;
      log.scratch_ok_ = scratch_ok_;
      log.matches_ += matches_;
    }

   private:
    static constexpr Frame kEnd{0, UINT64_MAX, 0, 0, 0, 0, 0, 0, 0};  // as the log's sentinel
    const Frame* log_frames_ = &kEnd;
    Frame* scratch_ = nullptr;
    int cursor_ = 0;
    int scratch_n_ = 0;
    bool scratch_ok_ = false;
    uint64_t matches_ = 0;
  };

  // ---- committing ----
  // The walk matched logged frame `j` and replayed through the logged end of the stack (or up
  // to a changed slot, see Diverged): what it recorded before reaching j goes into the log.
  // Before the walk's first match that is its innermost frames, which become the log's new
  // inner frames; after a divergence at frame k it is the frames that replace log_[k, j).
  void CommitPrefix(int j) {
    if (splice_from_ >= 0) {
      Splice(j);
      return;
    }
    if (!scratch_ok_ || scratch_n_ > j) {
      first_ = j;  // no room, or unknown prefix: keep only what was validated
      return;
    }
    first_ = j - scratch_n_;
    std::memcpy(static_cast<void*>(&log_[first_]), scratch_, sizeof(Frame) * scratch_n_);
    MarkFpMatters(log_, first_, j);
  }
  // A replay from logged frame `j` found the slots of frame `k` changed: the walk goes on with
  // ordinary steps from frame k (whose pc, sp and fp are still right). The log is kept: the
  // walk may meet its outer frames again (a stack that differs in a few middle frames, as
  // allocation sites in a loop do), and the frames it steps from k on are recorded to replace
  // the stale ones between.
  void Diverged(int j, int k) {
    CommitPrefix(j);
    splice_from_ = k;
    scratch_n_ = 0;
    scratch_ok_ = true;
    cursor_ = k + 1;  // frame k itself is stepped, not matched again
  }
  // The walk ran to the end of the stack without a match: it becomes the log if every step was
  // recorded.
  void CommitWalk() {
    splice_from_ = -1;  // after a divergence the scratch frames start at it: they become the log
    if (!scratch_ok_ || scratch_n_ == 0) return;
    const int last = (scratch_n_ - 1) % kCapacity;
    if ((scratch_[last].flags & kEndOfStack) == 0) return;
    if (scratch_n_ <= kCapacity) {
      first_ = kCapacity - scratch_n_;
      std::memcpy(static_cast<void*>(&log_[first_]), scratch_, sizeof(Frame) * scratch_n_);
    } else {
      // The ring holds the outermost frames starting at the oldest slot.
      const int oldest = scratch_n_ % kCapacity;
      const int tail = kCapacity - oldest;
      std::memcpy(static_cast<void*>(&log_[0]), &scratch_[oldest], sizeof(Frame) * tail);
      std::memcpy(static_cast<void*>(&log_[tail]), scratch_, sizeof(Frame) * oldest);
      first_ = 0;
    }
    MarkFpMatters(log_, first_, kCapacity);
    generation_ = walk_generation_;
    region_lo_ = walk_region_lo_;
    region_hi_ = walk_region_hi_;
  }
  // The code range the last walk's last return address fell in (last_code_span.h).
  LastCodeSpan& code() { return code_; }

  // Frames emitted from the log rather than stepped, over the thread's life (tests, tuning).
  uint64_t replayed_frames() const { return replayed_frames_; }
  // Walks that reached a logged frame, over the thread's life.
  uint64_t matches() const { return matches_; }
  void AddReplayed(int n) { replayed_frames_ += static_cast<uint64_t>(n); }

  // A replayed slot no longer held its value: the log describes a stack that is gone.
  // Also what makes a log usable at all: a RuleCache is zeroed memory, cleared before first use.
  void Invalidate() {
    first_ = kCapacity;
    cursor_ = kCapacity;
    code_.Forget();
    // sp above every frame's: a walk's frames lie in a stack region, below its end.
    log_[kCapacity] = Frame{0, UINT64_MAX, 0, 0, 0, 0, 0, 0, 0};
  }
  // The logged walk is log_[first(), kCapacity), innermost first (tests).
  int first() const { return first_; }

  // Sets kFpMatters on log[from, to) from the flags of the frames after them, and has the
  // replay check a frame's fp slot only where the fp it restores matters later: code without
  // frame pointers saves whatever rbp/x29 held, which changes from call to call.
  static void MarkFpMatters(Frame (&log)[kCapacity + 1], int from, int to) {
    bool matters = to < kCapacity && (log[to].flags & kFpMatters) != 0;
    for (int i = to - 1; i >= from; --i) {
      Frame& f = log[i];
      const bool check_fp_slot = (f.flags & kRestoresFp) != 0 && matters;
      if (!check_fp_slot) {
        f.fp_addr = f.ra_addr;
        f.fp_val = f.ra_val;
      }
      matters = (f.flags & kCfaFromFp) != 0 || ((f.flags & kRestoresFp) == 0 && matters);
      f.flags = matters ? (f.flags | kFpMatters) : (f.flags & ~kFpMatters);
    }
  }

 private:
  // Replaces log_[splice_from_, j) by the frames recorded since the divergence, if they are as
  // many and leave the frames before unchanged; otherwise keeps only log_[j, ...).
  void Splice(int j) {
    const int k = splice_from_;
    splice_from_ = -1;
    if (!scratch_ok_ || k < first_ || j - k != scratch_n_) {
      first_ = j;
      return;
    }
    const uint32_t matters_before = log_[k].flags & kFpMatters;
    std::memcpy(static_cast<void*>(&log_[k]), scratch_, sizeof(Frame) * scratch_n_);
    MarkFpMatters(log_, k, j);
    // The frames before k dropped or kept their fp-slot checks by whether fp mattered at k.
    if ((log_[k].flags & kFpMatters) != matters_before) first_ = k;
  }

  // The logged frames, then a sentinel (Invalidate) that ends Walker::Match's scan.
  Frame log_[kCapacity + 1];
  Frame scratch_[kCapacity];
  int first_ = kCapacity;  // log_[first_, kCapacity) holds the logged walk, innermost first
  int cursor_ = kCapacity;
  int scratch_n_ = 0;
  bool scratch_ok_ = false;
  int splice_from_ = -1;  // after a divergence: the logged frame the scratch frames start at
  uint64_t generation_ = 0;
  uint64_t walk_generation_ = 0;
  uint64_t replayed_frames_ = 0;
  uint64_t matches_ = 0;
  uint64_t region_lo_ = 0, region_hi_ = 0;
  uint64_t walk_region_lo_ = 0, walk_region_hi_ = 0;
  LastCodeSpan code_;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_FRAME_LOG_H_
