// FrameCache: the steps a thread's CFI walks took, keyed by the frame each started from (pc, sp),
// so that a walk crossing a frame an earlier walk crossed takes the step from the entry: two slot
// loads and the caller's entry (found where the entry says it was, else by its hash; a caller
// without one has its return address checked as code), without the rule's lookup and
// application or the climb and bounds checks. The frame log (frame_log.h) replays the last walk's frames from where a walk joins it;
// where consecutive walks differ in many inner frames (a compiler's allocation stacks) it
// replays few, while the frames themselves come back again and again after other walks: a
// thread whose log serves it poorly steps through this instead (walk/walk_cfi-inl.inc,
// StepThroughFrameCache).
//
// A walk through the cache takes a caller's pc as code when it finds the caller's entry: an entry
// with a caller's (non-exact) key is made (Put, PutEnd) only for a pc the walk checked as a
// return address, under the same module map (the tag), so the check would pass again (the
// thread's remembered code ranges, which the check also asks, outlive a dlclose the map has not
// seen yet: the uncached step would take the pc as well). A caller's lookup never returns an
// exact entry (they are kept apart), whatever bits the return address read has.
//
// Why it is exact: a cached rule's step from a frame computes the CFA and the slots' addresses
// from the frame's pc (and whether it is exact: the first frame's rule is looked up at pc, the
// others' at pc - 1), its sp, its fp where the CFA comes from fp, and the rule for pc (the rule
// cache's tag: the module map generation and the table's clear count; a cache holds the entries
// of one tag and empties itself when a walk of another comes, Retag). An entry keeps those
// addresses for that key; a walk through it reads the slots afresh, checks the return address
// as the rule's step does (zero: the end, which the rule's step then says; outside code:
// refused; a caller with an entry is code, see above) and takes the caller's fp from its slot. The climb and the slots' bounds hold by
// construction: an entry's slots lie in [sp, CFA - 8] (Put refuses others), sp lies in the
// walk's stack region and the walk checks CFA <= the region's end. Steps whose rule reads a
// register (an AArch64 leaf's link register) are never entered.
//
// Memory: kEntries entries of 64 bytes (128 KiB) and 64 for walks' first frames (4 KiB) from
// the arena, for a thread whose walks the frame log serves poorly (RuleCache::CountWalk
// decides), at most RuleCache::kMaxFrameCaches of them.
#ifndef STACKWALK_SRC_CORE_FRAME_CACHE_H_
#define STACKWALK_SRC_CORE_FRAME_CACHE_H_

#include <cstdint>

#include "core/compact_rule.h"
#include "core/frame_log.h"

namespace stackwalk::internal {

// Zeroed arena memory is an empty cache (no key is 0 and no rule tag is), used as such without
// construction: constructing one would write, and so make resident, all of its 128 KiB.
class FrameCache {
 public:
  static constexpr int kEntries = 2048;
  static_assert((kEntries & (kEntries - 1)) == 0, "the slot is a mask");

  // Flags beside the frame log's (FrameLog::kCfaFromFp, FrameLog::kRestoresFp), which an entry
  // keeps as the frame log records them.
  enum : uint32_t {
    kRestoresLr = 1u << 16,  // AArch64: the caller's lr is the return address (the same slot)
    kEndsStack = 1u << 17,   // the frame's rule says the stack ends here (PutEnd)
    kLogFlags = 0xffff,
  };

  struct Entry {
    uint64_t key;      // Key(): the frame's pc and whether it is exact; 0: empty
    uint64_t sp;
    uint64_t fp;       // with FrameLog::kCfaFromFp, the fp the CFA came from
    uint64_t cfa;      // the caller's sp, above every slot the step reads
    uint64_t ra_addr;  // the return address's slot
    uint64_t fp_addr;  // with FrameLog::kRestoresFp the caller's fp's slot, else ra_addr
    uint32_t flags;
    int32_t fp_slot_offset;  // fp_addr - ra_addr, as the frame log keeps it
    // Where the caller's entry lies if the caller is the one this step found when entered (its
    // slot by Slot()): a walk checks that entry's key and sp there before it hashes.
    const Entry* next;
  };
  static_assert(sizeof(Entry) == 64, "one cache line an entry");

  // An entry's key: the frame's pc, and whether it is exact (a walk's first frame: its rule is
  // looked up at pc, the others' at pc - 1) in a bit no code address has.
  static constexpr uint64_t kExactPc = 1ull << 63;
  static constexpr uint64_t Key(uint64_t pc, bool exact) { return pc | (exact ? kExactPc : 0); }

  // The fp a walk through the cache compares with kCfaFromFp entries' when it has none: no such
  // entry keeps it (Put refuses it; its CFA, fp + an offset, would not lie above the frame).
  static constexpr uint64_t kNoFp = ~uint64_t{0};

  static uint32_t Slot(uint64_t key, uint64_t sp) {
    return static_cast<uint32_t>(((key ^ (sp << 16)) * 0x9e3779b97f4a7c15ull) >> 53) &
           (kEntries - 1);
  }

  // Keeps the entries of walks of `rule_tag` (RuleCache::Tag) only: a walk of another tag (a
  // library loaded or unloaded, the rule table cleared) empties the cache first. Each walk calls
  // it before Find() and Put(), so that they need not compare tags frame by frame.
  void Retag(uint64_t rule_tag) {
    if (rule_tag == rule_tag_) return;
    if (written_) {
      for (Entry& e : entries_) Empty(e);
      for (Entry& e : exact_) Empty(e);
      written_ = false;
    }
    rule_tag_ = rule_tag;
  }

  // The entry for the frame (Key(pc, exact), sp), or null. The caller checks fp.
  const Entry* Find(uint64_t key, uint64_t sp) const {
    const Entry& e = EntryFor(key, sp);
    return e.key == key && e.sp == sp ? &e : nullptr;
  }

  // The entry of the caller an entry's step reached, `caller_pc` at the entry's CFA, if it is
  // where `e.next` says (the caller when `e` was entered, and its entry then not replaced by
  // another frame's), else null: FindCaller() then decides. `next` lies in the callers' array,
  // which holds no exact entry (see FindCaller).
  static const Entry* HintedCaller(const Entry& e, uint64_t caller_pc) {
    const Entry* next = e.next;
    return next->key == caller_pc && next->sp == e.cfa ? next : nullptr;
  }
  // The entry of the frame a step reached, `caller_pc` at `cfa`, or null. Exact entries are kept
  // apart (exact_), so a return address read off the stack with kExactPc's bit set (x86_64
  // keeps all 64 bits of a stack word) finds none, and no key here has that bit (a caller's
  // key is a pc checked as code).
  const Entry* FindCaller(uint64_t caller_pc, uint64_t cfa) const {
    const Entry& e = entries_[Slot(caller_pc, cfa)];
    return e.key == caller_pc && e.sp == cfa ? &e : nullptr;
  }

  // Enters the step from the frame (Key(pc, exact), sp, fp) by `rule` to `cfa`, which read
  // `slots`, if it may be entered (see the file comment). A key that is not exact must be a pc
  // checked as a return address (in code): walks through the cache take it as one. The same for
  // PutEnd.
  template <class Arch>
  void Put(uint64_t key, uint64_t sp, uint64_t fp, const CompactRule& rule, uint64_t cfa,
           const RuleSlots& slots) {
    if (rule.ra_offset == 0 || rule.r7_offset != 0) return;  // a register, not a slot
    uint32_t flags = 0;
    if constexpr (Arch::kLr >= 0) {
      if (rule.lr_offset != 0) {
        if (rule.lr_offset != rule.ra_offset) return;
        flags |= kRestoresLr;
      }
    }
    // A slot below the frame or at the CFA and above: the cached step checks the CFA alone.
    const uint64_t fp_addr = rule.fp_offset != 0 ? slots.fp_addr : slots.ra_addr;
    if (cfa <= sp || slots.ra_addr < sp || slots.ra_addr > cfa - 8 || fp_addr < sp ||
        fp_addr > cfa - 8) {
      return;
    }
    if (rule.kind == CompactRule::Kind::kCfaFp) {
      if (fp == kNoFp) return;  // the walk's stand-in for "no fp" must match no entry
      flags |= FrameLog::kCfaFromFp;
    }
    if (rule.fp_offset != 0) flags |= FrameLog::kRestoresFp;
    Entry& e = EntryFor(key, sp);
    e.key = key;
    e.sp = sp;
    e.fp = fp;
    e.cfa = cfa;
    e.ra_addr = slots.ra_addr;
    e.fp_addr = fp_addr;
    e.flags = flags;
    e.fp_slot_offset = static_cast<int32_t>(fp_addr - slots.ra_addr);
    e.next = &entries_[Slot(Key(Arch::ReportedPc(slots.ra_val), false), cfa)];
    written_ = true;
  }

  // Enters that the frame's rule ends the stack (its return address is undefined: the rule alone
  // says so, whatever the registers). Its CFA lies above every region's end, so that a walk stops
  // at the entry as at one whose slots would leave the region, and only then reads its flags:
  // the common step checks nothing more.
  void PutEnd(uint64_t key, uint64_t sp) {
    Entry& e = EntryFor(key, sp);
    e = Entry{};
    e.key = key;
    e.sp = sp;
    e.cfa = ~uint64_t{0};
    e.flags = kEndsStack;
    e.next = &e;  // never followed (the CFA stops the walk first), but a valid entry
    written_ = true;
  }

  // Frames taken from entries, and walks ended by one, over the thread's life (tests, tuning).
  uint64_t hits() const { return hits_; }
  void AddHits(uint64_t n) const { hits_ += n; }
  uint64_t ends() const { return ends_; }
  void AddEnd() const { ++ends_; }

 private:
  // A key's entry: exact keys (a walk's first frame) in an array of their own, so that a
  // caller's lookup (FindCaller, HintedCaller) never meets one.
  Entry& EntryFor(uint64_t key, uint64_t sp) {
    return (key & kExactPc) != 0 ? exact_[Slot(key, sp) & (kExactEntries - 1)]
                                 : entries_[Slot(key, sp)];
  }
  const Entry& EntryFor(uint64_t key, uint64_t sp) const {
    return const_cast<FrameCache*>(this)->EntryFor(key, sp);
  }

  // No walk's sp: an emptied entry matches no frame, pc 0 included.
  static void Empty(Entry& e) {
    e.key = 0;
    e.sp = 0;
  }

  static constexpr int kExactEntries = 64;  // a thread's walks start from few exact pcs
  Entry entries_[kEntries];
  Entry exact_[kExactEntries];
  uint64_t rule_tag_ = 0;  // the tag of the walks that made the entries; 0: none yet
  bool written_ = false;   // an entry was made since the cache was last emptied
  mutable uint64_t hits_ = 0;  // statistics: counted by walks that only read the entries
  mutable uint64_t ends_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_FRAME_CACHE_H_
