#include "leakcheck/reachability.h"

#include <link.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "core/proc_maps.h"

namespace stackwalk::leakcheck {
namespace {

// Where glibc's header of the chunk after a block of `size` bytes starts, from the block's start:
// a block that uses its chunk to the end overlaps that header, and glibc's own state (the arena's
// top chunk, its bins) points there. Such a pointer is the allocator's, not a reference.
uint64_t NextChunkHeader(uint64_t size) {
  const uint64_t chunk = std::max<uint64_t>(32, (size + 8 + 15) & ~uint64_t{15});
  return chunk - 16;
}

}  // namespace

ReachabilityMarker::ReachabilityMarker(const Allocation* blocks, size_t n)
    : blocks_(blocks), n_(n), marks_(n, 0) {
  if (n > 0) {
    low_ = blocks[0].address;
    for (size_t i = 0; i < n; ++i) {
      high_ = std::max(high_, blocks[i].address + std::max<uint64_t>(blocks[i].size, 1));
    }
  }
}

void ReachabilityMarker::ScanWords(const uintptr_t* words, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const uintptr_t w = words[i];
    if (w < low_ || w >= high_) continue;
    // The last block starting at or below w; w must lie inside it.
    size_t lo = 0, hi = n_;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (blocks_[mid].address <= w) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) continue;
    const size_t b = lo - 1;
    if (marks_[b] || w >= blocks_[b].address + std::max<uint64_t>(blocks_[b].size, 1)) continue;
    if (w - blocks_[b].address == NextChunkHeader(blocks_[b].size)) continue;
    marks_[b] = 1;
    pending_.push_back(b);
  }
}

void ReachabilityMarker::ScanCopied(uintptr_t start, uintptr_t end) {
  start = (start + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
  while (start + sizeof(uintptr_t) <= end) {
    const size_t bytes = std::min<size_t>(sizeof(buffer_), (end - start) & ~(sizeof(uintptr_t) - 1));
    iovec local{buffer_, bytes};
    iovec remote{reinterpret_cast<void*>(start), bytes};
    const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got > 0) ScanWords(buffer_, static_cast<size_t>(got) / sizeof(uintptr_t));
    start += bytes;
  }
}

void ReachabilityMarker::ScanDirect(uintptr_t start, uintptr_t end) {
  start = (start + sizeof(uintptr_t) - 1) & ~(sizeof(uintptr_t) - 1);
  if (end <= start) return;
  ScanWords(reinterpret_cast<const uintptr_t*>(start), (end - start) / sizeof(uintptr_t));
}

void ReachabilityMarker::Propagate() {
  constexpr size_t kBatch = 1024;
  iovec local[kBatch], remote[kBatch];
  while (!pending_.empty()) {
    // A batch of whole blocks that fits the buffer; a block larger than it goes alone, in pieces.
    const Allocation& first = blocks_[pending_.back()];
    if (first.size > sizeof(buffer_)) {
      pending_.pop_back();
      ScanCopied(first.address, first.address + first.size);
      continue;
    }
    size_t count = 0, used = 0;
    while (!pending_.empty() && count < kBatch) {
      const Allocation& a = blocks_[pending_.back()];
      const size_t bytes = static_cast<size_t>(a.size) & ~(sizeof(uintptr_t) - 1);
      if (a.size > sizeof(buffer_) || used + bytes > sizeof(buffer_)) break;
      local[count] = {reinterpret_cast<char*>(buffer_) + used, bytes};
      remote[count] = {reinterpret_cast<void*>(a.address), bytes};
      used += bytes;
      ++count;
      pending_.pop_back();
    }
    // Marks found while scanning go on pending_; the batch itself is already taken off it.
    size_t done = 0;
    while (done < count) {
      const ssize_t got = process_vm_readv(getpid(), local + done, count - done, remote + done,
                                           count - done, 0);
      size_t left = got > 0 ? static_cast<size_t>(got) : 0;
      // Whole blocks read; the one it stopped in (freed and unmapped meanwhile) is skipped.
      while (done < count && left >= local[done].iov_len) {
        left -= local[done].iov_len;
        ScanWords(static_cast<const uintptr_t*>(local[done].iov_base),
                  local[done].iov_len / sizeof(uintptr_t));
        ++done;
      }
      if (done < count) ++done;
    }
  }
}

std::vector<uint8_t> MarkReachable(const Allocation* blocks, size_t n, const ThreadRegistry& threads,
                                   uint32_t self_serial, uintptr_t stack_pointer) {
  auto marker = std::make_unique<ReachabilityMarker>(blocks, n);
  if (n == 0) return marker->Take();
  // Globals: every writable PT_LOAD (.data, .bss, the GOT) of every loaded object.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0) continue;
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          static_cast<ReachabilityMarker*>(data)->ScanDirect(start, start + ph.p_memsz);
        }
        return 0;
      },
      marker.get());
  // This thread's stack above the caller's frames, then the other running threads' stacks.
  internal::Mapping mine;
  if (internal::FindMapping(stack_pointer, &mine)) marker->ScanDirect(stack_pointer, mine.range.hi);
  threads.ForEachRunning([&](uint32_t serial, const ThreadRegistry::Thread& t) {
    if (serial == self_serial || t.stack_hi == 0) return;
    internal::Mapping now;  // the mapping as it is now
    if (!internal::FindMapping(t.stack_hi - 1, &now)) return;
    if (now.range.Contains(stack_pointer)) return;  // ours after all
    // Only what was the stack when noted (an adjacent anonymous mapping may have merged into
    // it since), except the main thread's, which grows down.
    const bool main_thread = t.tid == static_cast<int32_t>(getpid());
    const uint64_t lo = main_thread ? now.range.lo : std::max<uint64_t>(now.range.lo, t.stack_lo);
    const uint64_t hi = std::min<uint64_t>(now.range.hi, t.stack_hi);
    if (lo < hi) marker->ScanCopied(lo, hi);
  });
  marker->Propagate();
  return marker->Take();
}

}  // namespace stackwalk::leakcheck
