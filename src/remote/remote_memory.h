// RemoteMemory: reads of another process's memory for the unwinders (the Memory of
// ehframe_step.h and fp_step.h: Read() and RegionOf()), through process_vm_readv, or pread of
// /proc/PID/mem where that call is refused, behind a small page cache. A read succeeds only
// inside one of the target's readable mappings as /proc/PID/maps listed them: a read anywhere
// else fails, and a page the target unmapped since fails too; nothing here can fault.
#ifndef STACKWALK_SRC_REMOTE_REMOTE_MEMORY_H_
#define STACKWALK_SRC_REMOTE_REMOTE_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/address_range.h"

namespace stackwalk::internal {

class RemoteMemory {
 public:
  // `readable`: the target's readable mappings, sorted by address, not overlapping.
  RemoteMemory(pid_t pid, std::vector<AddressRange> readable);
  ~RemoteMemory();
  RemoteMemory(const RemoteMemory&) = delete;
  RemoteMemory& operator=(const RemoteMemory&) = delete;

  // Copies `size` bytes at `addr` of the target into `out` if they lie inside one readable
  // mapping and the kernel could read them.
  bool Read(uint64_t addr, void* out, size_t size);
  // The index of the mapping holding `addr`, or -1 (ValidClimb: one region per mapping, so a
  // walk that leaves the stack's mapping for another known one is a region switch).
  int RegionOf(uint64_t addr) const;

  // Forgets every cached page: the target ran since they were read (the next thread's walk).
  void Invalidate();

  // Reads through /proc/PID/mem from now on, as where process_vm_readv is refused (tests).
  void UseProcMemForTesting() { vm_readv_ok_ = false; }

  // Counters (the tests).
  uint64_t page_reads() const { return page_reads_; }
  uint64_t cache_hits() const { return cache_hits_; }
  bool used_proc_mem() const { return mem_fd_ >= 0; }  // it opened /proc/PID/mem

 private:
  static constexpr uint64_t kPageSize = 4096;
  static constexpr int kCachedPages = 64;  // direct-mapped by page number
  struct CachedPage {
    uint64_t page = 0;  // the page's address; valid only when `valid`
    size_t filled = 0;  // bytes read from the page's start (a mapping may end inside it)
    bool valid = false;
    unsigned char bytes[kPageSize];
  };

  // Reads [page, page + want) of the target into `to`; how many bytes it got.
  size_t Fetch(uint64_t page, size_t want, unsigned char* to);
  const CachedPage* Page(uint64_t page, uint64_t mapping_end);

  pid_t pid_;
  std::vector<AddressRange> readable_;
  std::vector<CachedPage> cache_;
  int mem_fd_ = -1;        // /proc/PID/mem, opened once process_vm_readv is refused
  bool vm_readv_ok_ = true;
  uint64_t page_reads_ = 0;
  uint64_t cache_hits_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_REMOTE_MEMORY_H_
