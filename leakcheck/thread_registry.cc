#include "leakcheck/thread_registry.h"

#include <fcntl.h>
#include "leakcheck/record_region.h"
#include <sys/prctl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace stackwalk::leakcheck {

ThreadRegistry::Thread* ThreadRegistry::Slot(uint32_t serial) const {
  Entry* entry = EntryOf(serial);
  return entry != nullptr ? &entry->thread : nullptr;
}

void ThreadRegistry::ResetLiveBytes() {
  const uint32_t end = next_.load(std::memory_order_acquire);
  for (uint32_t serial = 1; serial < end; ++serial) {
    if (PeakCounter* bytes = LiveBytesOf(serial)) bytes->Reset();
  }
}

uint32_t ThreadRegistry::RegisterCurrent(int32_t tid) {
  static_assert(sizeof(Entry) == sizeof(record::ThreadEntry) &&
                    offsetof(Entry, thread.name) == offsetof(record::ThreadEntry, name) &&
                    offsetof(Entry, bytes) == offsetof(record::ThreadEntry, live_bytes) &&
                    kChunk == record::kThreadChunk,
                "a thread is read as a record::ThreadEntry after the program (record_format.h)");
  const uint32_t serial = next_.fetch_add(1, std::memory_order_relaxed);
  if (serial / kChunk >= kChunks) return 0;
  std::atomic<Entry*>& chunk = chunks_[serial / kChunk];
  if (chunk.load(std::memory_order_acquire) == nullptr) {
    // Zeroed pages are valid entries: every field, the atomics included, starts at zero. In the
    // record region when there is one, for the launcher to read after the program.
    void* mem = RecordMap(sizeof(Entry) * kChunk, record::kThreads, serial / kChunk);
    if (mem == nullptr) return 0;
    Entry* expected = nullptr;
    if (!chunk.compare_exchange_strong(expected, static_cast<Entry*>(mem))) {
      RecordUnmap(mem, sizeof(Entry) * kChunk);
    }
  }
  Thread* t = Slot(serial);
  t->tid = tid;
  prctl(PR_GET_NAME, t->name);
  return serial;
}

void ThreadRegistry::MarkExited(uint32_t serial) {
  if (Thread* t = Slot(serial)) {
    prctl(PR_GET_NAME, t->name);
    t->exited = true;
  }
}

bool ThreadRegistry::Lookup(uint32_t serial, Thread* out) const {
  const Entry* entry = EntryOf(serial);
  if (entry == nullptr || entry->thread.tid == 0) return false;
  const Thread* t = &entry->thread;
  *out = *t;
  out->live_bytes = entry->bytes.live.load(std::memory_order_relaxed);
  out->peak_bytes = entry->bytes.peak.load(std::memory_order_relaxed);
  if (!out->exited) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/comm", static_cast<int>(t->tid));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char name[sizeof(out->name)] = {};
      ssize_t n = read(fd, name, sizeof(name) - 1);
      close(fd);
      if (n > 0) {
        if (name[n - 1] == '\n') name[n - 1] = '\0';
        std::memcpy(out->name, name, sizeof(name));
      }
    }
  }
  out->name[sizeof(out->name) - 1] = '\0';
  return true;
}

}  // namespace stackwalk::leakcheck
