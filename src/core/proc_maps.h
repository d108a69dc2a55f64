// FindMapping(): which mapping of this process holds an address, read from /proc/self/maps with
// open/read/close and a small fixed buffer, so that it is usable inside a signal handler; and
// ParseMapsLine(), the same parser over one line of any process's maps (offset and path too).
#ifndef STACKWALK_SRC_CORE_PROC_MAPS_H_
#define STACKWALK_SRC_CORE_PROC_MAPS_H_

#include <cstddef>
#include <cstdint>

#include "core/address_range.h"

namespace stackwalk::internal {

struct Mapping {
  AddressRange range;
  bool readable = false;
  bool writable = false;
  bool executable = false;
};

// One line of a maps text, "lo-hi perms offset dev inode   path".
struct MapsLine {
  Mapping mapping;
  uint64_t offset = 0;     // the file offset mapped at mapping.range.lo
  size_t path_begin = 0;   // the path (to the end of the line, " (deleted)" included) is
  size_t path_end = 0;     // line[path_begin, path_end); empty for an anonymous mapping
};

// The maps line parser, fed one character at a time: no line buffer, fixed stack.
// Signal safety: async-signal-safe.
class MapsLineParser {
 public:
  // Feeds one character; true at the end of the line ('\n').
  bool Consume(char c);
  bool malformed() const { return malformed_; }       // the range or perms are not well formed
  bool perms_done() const { return state_ > State::kPerms; }  // range and perms are known
  bool rest_ok() const { return rest_ok_; }            // offset, dev and inode were well formed
  const MapsLine& line() const { return line_; }

 private:
  enum class State { kLo, kHi, kPerms, kAfterPerms, kOffset, kDev, kInode, kPad, kPath };
  static bool AddDigit(char c, uint64_t* value);

  State state_ = State::kLo;
  int perm_index_ = 0;
  size_t column_ = 0;
  MapsLine line_;
  bool malformed_ = false;
  bool rest_ok_ = true;
};

// Parses line[0, length) (a trailing "\n" or "\r\n" optional). False unless it is well formed
// with lo < hi. Signal safety: async-signal-safe.
bool ParseMapsLine(const char* line, size_t length, MapsLine* out);

// Finds the mapping containing `addr` in the maps text readable from `fd` (e.g. an open
// /proc/self/maps). Returns false if no line covers it or the text is malformed. When no line
// covers it in a well-formed sorted text read to its end, and `gap` is given, *gap is the
// unmapped range around `addr` (from the end of the line before it to the start of the line
// after it, or to the end of the address space); else *gap is empty.
// Signal safety: async-signal-safe (read() only, ~300 bytes of stack).
bool FindMappingInMapsFd(int fd, uint64_t addr, Mapping* out, AddressRange* gap = nullptr);

// Opens /proc/self/maps and calls FindMappingInMapsFd.
// Signal safety: async-signal-safe (open/read/close).
bool FindMapping(uint64_t addr, Mapping* out, AddressRange* gap = nullptr);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_PROC_MAPS_H_
