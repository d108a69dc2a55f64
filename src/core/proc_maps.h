// FindMapping(): which mapping of this process holds an address, read from /proc/self/maps with
// open/read/close and a small fixed buffer, so that it is usable inside a signal handler.
#ifndef STACKWALK_SRC_CORE_PROC_MAPS_H_
#define STACKWALK_SRC_CORE_PROC_MAPS_H_

#include <cstdint>

#include "core/address_range.h"

namespace stackwalk::internal {

struct Mapping {
  AddressRange range;
  bool readable = false;
  bool writable = false;
  bool executable = false;
};

// Finds the mapping containing `addr` in the maps text readable from `fd` (e.g. an open
// /proc/self/maps). Returns false if no line covers it or the text is malformed.
// Signal safety: async-signal-safe (read() only, ~300 bytes of stack).
bool FindMappingInMapsFd(int fd, uint64_t addr, Mapping* out);

// Opens /proc/self/maps and calls FindMappingInMapsFd.
// Signal safety: async-signal-safe (open/read/close).
bool FindMapping(uint64_t addr, Mapping* out);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_PROC_MAPS_H_
