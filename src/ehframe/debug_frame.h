// DebugFrameRegistry: .debug_frame tables of loaded objects, for code whose unwind information
// is only there (built with -fno-asynchronous-unwind-tables -g, some hand-written assembly).
// Loading reads files and allocates, so it happens outside signal context, when the user calls
// stackwalk_load_debug_frames(); afterwards the capture path consults the registry lock-free.
#ifndef STACKWALK_SRC_EHFRAME_DEBUG_FRAME_H_
#define STACKWALK_SRC_EHFRAME_DEBUG_FRAME_H_

#include <atomic>
#include <cstdint>

#include "ehframe/debug_frame_index.h"
#include "ehframe/eh_frame_hdr.h"

namespace stackwalk::internal {

class DebugFrameRegistry {
 public:
  static constexpr int kMaxTables = 64;

  static DebugFrameRegistry& Global();

  // Loads the .debug_frame of every loaded object that has one and is not registered yet.
  // Returns how many tables it added. Compressed sections (SHF_COMPRESSED) are skipped.
  // Signal safety: NOT async-signal-safe (opens files, maps them, allocates the index).
  int LoadForLoadedObjects();

  // Loads the .debug_frame of the file at `path`, loaded at `load_bias`, whose lowest mapped
  // address is `object_start`. Returns true if it registered a table: false when the file has
  // none, a table for `object_start` is already registered, or kMaxTables are.
  // Signal safety: NOT async-signal-safe.
  bool Load(const char* path, uint64_t load_bias, uint64_t object_start);

  // The FDE covering `pc`, and the section to parse it in. Where glibc has _dl_find_object,
  // a table whose object was unloaded since (or replaced at its address) is not used; elsewhere
  // tables are never dropped. Signal safety: async-signal-safe.
  bool Find(uint64_t pc, EhFrameSection* section, uint64_t* fde) const;

  // Runs f(arg) holding the lock that serializes loads, as a load does (tests: a fork while
  // another thread loads; the child starts with the lock free).
  static void WithLoadLock(void (*f)(void*), void* arg);

  int table_count() const { return count_.load(std::memory_order_acquire); }

 private:
  struct Table {
    EhFrameSection section;
    uint64_t object_start;
    AddressRange covered;
    const DebugFrameEntry* index;
    int count;
  };

  // Zero-initialized, so Global() needs no guard (a lock) on the capture path.
  Table tables_[kMaxTables] = {};
  std::atomic<int> count_{0};
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_EHFRAME_DEBUG_FRAME_H_
