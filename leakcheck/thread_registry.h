// ThreadRegistry: every thread that allocated, by serial number (1, 2, ...; kernel thread ids
// are reused, serials are not), with its kernel id, its name and its live bytes and their peak.
// The name is read when the
// thread first allocates, again when it exits, and from /proc at report time while it runs, so
// a name set after the first allocation is still shown. Memory from mmap; no malloc.
#ifndef STACKWALK_LEAKCHECK_THREAD_REGISTRY_H_
#define STACKWALK_LEAKCHECK_THREAD_REGISTRY_H_

#include <atomic>
#include <cstdint>

#include "leakcheck/live_bytes.h"

namespace stackwalk::leakcheck {

class ThreadRegistry {
 public:
  struct Thread {
    int32_t tid = 0;
    bool exited = false;
    char name[16] = {};
    uint64_t live_bytes = 0;  // in a Lookup() copy: what the thread allocated that is still live
    uint64_t peak_bytes = 0;  // and its high-water mark
  };

  // Registers the calling thread; returns its serial, or 0 if out of memory.
  uint32_t RegisterCurrent(int32_t tid);
  // The calling thread, registered as `serial`, is exiting: keeps its final name.
  void MarkExited(uint32_t serial);
  // A copy of a thread's entry, its name refreshed from /proc if it still runs. False if unknown.
  bool Lookup(uint32_t serial, Thread* out) const;
  // The live-bytes counter of thread `serial` (allocations it made), or null if unknown. Inline:
  // every recorded allocation and free asks it.
  PeakCounter* LiveBytesOf(uint32_t serial) const {
    Entry* entry = EntryOf(serial);
    return entry != nullptr ? &entry->bytes : nullptr;
  }
  // Zeroes every thread's counter (a new in-process session).
  void ResetLiveBytes();
  // The serials handed out so far are [1, end()): a caller may Lookup() each.
  uint32_t end() const { return next_.load(std::memory_order_acquire); }
  // Calls fn(serial, const Thread&) for every registered thread that has not exited.
  template <class Fn>
  void ForEachRunning(Fn&& fn) const {
    const uint32_t end = next_.load(std::memory_order_acquire);
    for (uint32_t serial = 1; serial < end; ++serial) {
      const Thread* t = Slot(serial);
      if (t != nullptr && t->tid != 0 && !t->exited) fn(serial, *t);
    }
  }

 private:
  static constexpr uint32_t kChunk = 1024;
  static constexpr uint32_t kChunks = 4096;  // up to 4M threads over the process's life
  // A registered thread: its entry, and its counter apart from it (atomics are not copied).
  struct Entry {
    Thread thread;
    PeakCounter bytes;
  };
  Thread* Slot(uint32_t serial) const;
  Entry* EntryOf(uint32_t serial) const {
    if (serial == 0 || serial / kChunk >= kChunks) return nullptr;
    Entry* chunk = chunks_[serial / kChunk].load(std::memory_order_acquire);
    return chunk != nullptr ? &chunk[serial % kChunk] : nullptr;
  }

  std::atomic<Entry*> chunks_[kChunks] = {};
  std::atomic<uint32_t> next_{1};
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_THREAD_REGISTRY_H_
