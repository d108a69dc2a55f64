// A live allocation as the checker hands it around (Allocation: address, size,
// sequence number, stack, thread) and as the live table keeps it
// (record::AllocationSlot, 24 bytes: the fields packed, record_format.h gives
// the layout). Pack refuses what the slot cannot hold exactly (an address above
// 2^48 or not 8-byte aligned, a block of 1 TiB or more) rather than keep it
// wrong; a sequence number past 2^59 is kept as 2^59 - 1 (it then orders
// nothing).
#ifndef STACKWALK_LEAKCHECK_ALLOCATION_SLOT_H_
#define STACKWALK_LEAKCHECK_ALLOCATION_SLOT_H_

#include <cstdint>

#include "leakcheck/record_format.h"

namespace stackwalk::leakcheck {

struct Allocation {
  uintptr_t address;  // 0: none
  uint64_t size;
  uint64_t sequence;  // from ReserveSequences: one thread's allocations in order,
                      // different threads' only roughly (each takes numbers in
                      // blocks); its top two bits are flags (kReportedBit,
                      // kIgnoredBit): read the number with SequenceNumber()
  uint32_t stack_id;  // StackTable id; StackTable::kNoStack if the stack could
                      // not be kept
  int32_t thread;     // ThreadRegistry serial of the thread that allocated it (a
                      // uint32_t there, stored signed; 0 if it could not be registered)
};

// Flags kept in the top bits of Allocation::sequence (numbers stay below 2^62):
// a leak a check in a running process returned (checks.h: each leak is returned
// once), and a block the program marked as an intended leak (IgnoreObject:
// never reported, a root of the scan).
constexpr uint64_t kReportedBit = uint64_t{1} << 63;
constexpr uint64_t kIgnoredBit = uint64_t{1} << 62;
constexpr uint64_t kSequenceFlags = kReportedBit | kIgnoredBit;
inline uint64_t SequenceNumber(const Allocation& a) { return a.sequence & ~kSequenceFlags; }
inline bool IsReported(const Allocation& a) { return (a.sequence & kReportedBit) != 0; }
inline bool IsIgnored(const Allocation& a) { return (a.sequence & kIgnoredBit) != 0; }

namespace slot {
namespace rec = record;
constexpr uint64_t Mask(int bits) { return (uint64_t{1} << bits) - 1; }
constexpr int kThreadLowBits = 64 - rec::kSlotAddressBits;
}  // namespace slot

// The slot's address field for `address` (address / 8), or 0 if the slot cannot
// hold it.
inline uint64_t SlotAddress(uintptr_t address) {
  const uint64_t a = address;
  return ((a & 7) | (a >> (record::kSlotAddressBits + 3))) == 0 ? a >> 3 : 0;
}
inline uint64_t SlotAddressOf(const record::AllocationSlot& s) {
  return s.word[0] & slot::Mask(record::kSlotAddressBits);
}
inline bool SlotEmpty(const record::AllocationSlot& s) { return SlotAddressOf(s) == 0; }

// Whether an allocation of `size` bytes at `address` fits a slot (else it goes
// untracked).
inline bool SlotHolds(uintptr_t address, uint64_t size) {
  const uint64_t a = address;
  return a != 0 &&
         ((a & 7) | (a >> (record::kSlotAddressBits + 3)) | (size >> record::kSlotSizeBits)) == 0;
}

// `a` packed; SlotHolds(a.address, a.size) must be true. A stack id or thread
// serial too wide for its field (never, from the StackTable and the
// ThreadRegistry) is kept as 0 (none, unknown).
inline record::AllocationSlot PackAllocation(const Allocation& a) {
  namespace rec = record;
  using slot::Mask;
  const uint64_t stack = a.stack_id <= Mask(rec::kSlotStackBits) ? a.stack_id : 0;
  const uint64_t thread =
      a.thread >= 0 && static_cast<uint64_t>(a.thread) <= Mask(rec::kSlotThreadBits)
          ? static_cast<uint64_t>(a.thread)
          : 0;
  uint64_t sequence = SequenceNumber(a);
  if (sequence > Mask(rec::kSlotSequenceBits)) sequence = Mask(rec::kSlotSequenceBits);
  record::AllocationSlot s;
  s.word[0] = SlotAddress(a.address) | (thread & Mask(slot::kThreadLowBits))
                                           << rec::kSlotAddressBits;
  s.word[1] = a.size | stack << rec::kSlotSizeBits;
  s.word[2] = sequence | (thread >> slot::kThreadLowBits) << rec::kSlotSequenceBits |
              (a.sequence & kSequenceFlags);
  return s;
}

inline Allocation UnpackAllocation(const record::AllocationSlot& s) {
  namespace rec = record;
  using slot::Mask;
  Allocation a;
  a.address = static_cast<uintptr_t>(SlotAddressOf(s) << 3);
  a.size = s.word[1] & Mask(rec::kSlotSizeBits);
  a.stack_id = static_cast<uint32_t>(s.word[1] >> rec::kSlotSizeBits);
  const uint64_t thread =
      s.word[0] >> rec::kSlotAddressBits |
      (s.word[2] >> rec::kSlotSequenceBits & Mask(rec::kSlotThreadBits - slot::kThreadLowBits))
          << slot::kThreadLowBits;
  a.thread = static_cast<int32_t>(thread);
  a.sequence = (s.word[2] & Mask(rec::kSlotSequenceBits)) | (s.word[2] & kSequenceFlags);
  return a;
}

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_ALLOCATION_SLOT_H_
