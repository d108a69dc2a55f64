// The .ARM.exidx index and .ARM.extab entries of the ARM exception-handling ABI
// (ARM IHI 0038, "Exception Handling ABI for the Arm Architecture"): finding a PC's entry
// (§5, prel31 offsets, binary search), and turning the entry into its stream of unwind opcodes
// (§6.3 compact model with personality routines 0, 1 and 2, and generic personalities whose
// table carries the same opcodes after the personality pointer, as GCC's does).
#ifndef STACKWALK_SRC_EXIDX_EXIDX_TABLE_H_
#define STACKWALK_SRC_EXIDX_EXIDX_TABLE_H_

#include <cstdint>

#include "core/address_range.h"

namespace stackwalk::internal {

// Where a module's index is, and the readable range its .ARM.extab entries lie in.
struct ExidxSection {
  AddressRange table;   // .ARM.exidx: 8-byte entries sorted by function start
  AddressRange bounds;  // the object's mapping; every extab read is checked against it
  // Added to the function starts the index gives, so that they are the walked process's: 0 for
  // this process's loaded index; another process's index read from a copy of its file here gives
  // addresses in the copy, which this turns into the target's (as EhFrameSection::load_bias).
  uint64_t load_bias = 0;
};

enum class ExidxError : uint8_t {
  kOk,
  kNoEntry,          // no entry starts at or below the PC
  kCantUnwind,       // EXIDX_CANTUNWIND: the function says it cannot be unwound
  kBadEntry,         // malformed index or table entry (bounds, prel31, reserved bits)
  kUnknownPersonality,  // a compact model other than 0, 1 or 2
};

const char* ExidxErrorString(ExidxError error);

// The bytes of an entry's unwind opcodes, read lazily word by word (most significant byte of
// each word first, §6.3), never past the words the entry declares.
class EhabiOpcodes {
 public:
  EhabiOpcodes() = default;
  // Returns false at the end of the stream; an exhausted stream acts as "finish" (§9.3).
  bool Next(uint8_t* byte);
  // The ULEB128 operand of opcode 0xb2 (at most 32 bits); false if the stream ends inside it
  // or it is longer.
  bool NextUleb128(uint64_t* value);
  bool at_end() const { return bytes_left_ == 0 && words_left_ == 0; }

 private:
  friend ExidxError DecodeExidxEntry(const ExidxSection&, uint64_t, uint64_t*, EhabiOpcodes*);
  friend class EhabiOpcodesForTest;
  uint32_t data_ = 0;      // opcodes still to hand out, most significant byte first
  int bytes_left_ = 0;     // in data_
  int words_left_ = 0;     // whole words after next_
  uint64_t next_ = 0;      // address of the next word
  AddressRange bounds_;
};

// The address of the index entry for `pc` (the last whose function starts at or below it), and
// that function's start (both `pc` and the start in the walked process's addresses). Signal safety: async-signal-safe.
ExidxError FindExidxEntry(const ExidxSection& section, uint64_t pc, uint64_t* entry,
                          uint64_t* function_start);

// The opcodes of the index entry at `entry`, and its personality index (0, 1, 2) or -1 for a
// generic personality routine. Signal safety: async-signal-safe.
ExidxError DecodeExidxEntry(const ExidxSection& section, uint64_t entry, uint64_t* personality,
                            EhabiOpcodes* opcodes);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EXIDX_EXIDX_TABLE_H_
