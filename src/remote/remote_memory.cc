#include "remote/remote_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace stackwalk::internal {

RemoteMemory::RemoteMemory(pid_t pid, std::vector<AddressRange> readable)
    : pid_(pid), readable_(std::move(readable)), cache_(kCachedPages) {}

RemoteMemory::~RemoteMemory() {
  if (mem_fd_ >= 0) close(mem_fd_);
}

int RemoteMemory::RegionOf(uint64_t addr) const {
  // The last mapping starting at or below addr.
  auto it = std::upper_bound(readable_.begin(), readable_.end(), addr,
                             [](uint64_t a, const AddressRange& r) { return a < r.lo; });
  if (it == readable_.begin()) return -1;
  --it;
  return it->Contains(addr) ? static_cast<int>(it - readable_.begin()) : -1;
}

void RemoteMemory::Invalidate() {
  for (CachedPage& p : cache_) p.valid = false;
}

size_t RemoteMemory::Fetch(uint64_t page, size_t want, unsigned char* to) {
  ++page_reads_;
  if (vm_readv_ok_) {
    iovec local{to, want};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(page)), want};
    ssize_t got = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (got >= 0) return static_cast<size_t>(got);
    // Refused as a call (a seccomp filter, a kernel without it): /proc/PID/mem from now on.
    // EFAULT or ESRCH are answers about this read, not about the call.
    if (errno != ENOSYS && errno != EPERM) return 0;
    vm_readv_ok_ = false;
  }
  if (mem_fd_ < 0) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/mem", static_cast<int>(pid_));
    mem_fd_ = open(path, O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return 0;
  }
  ssize_t got = pread(mem_fd_, to, want, static_cast<off_t>(page));
  return got > 0 ? static_cast<size_t>(got) : 0;
}

const RemoteMemory::CachedPage* RemoteMemory::Page(uint64_t page, uint64_t mapping_end) {
  CachedPage& slot = cache_[(page / kPageSize) % kCachedPages];
  if (slot.valid && slot.page == page) {
    ++cache_hits_;
    return &slot;
  }
  const size_t want = static_cast<size_t>(std::min<uint64_t>(kPageSize, mapping_end - page));
  slot.valid = false;
  slot.filled = Fetch(page, want, slot.bytes);
  if (slot.filled == 0) return nullptr;
  slot.page = page;
  slot.valid = true;
  return &slot;
}

bool RemoteMemory::Read(uint64_t addr, void* out, size_t size) {
  const int region = RegionOf(addr);
  if (region < 0 || !readable_[region].ContainsSpan(addr, size)) return false;
  const uint64_t mapping_end = readable_[region].hi;
  auto* to = static_cast<unsigned char*>(out);
  while (size > 0) {
    const uint64_t page = addr & ~(kPageSize - 1);
    const CachedPage* p = Page(page, mapping_end);
    const size_t at = static_cast<size_t>(addr - page);
    if (p == nullptr || p->filled <= at) return false;
    const size_t n = std::min(size, p->filled - at);
    std::memcpy(to, p->bytes + at, n);
    to += n;
    addr += n;
    size -= n;
  }
  return true;
}

}  // namespace stackwalk::internal
