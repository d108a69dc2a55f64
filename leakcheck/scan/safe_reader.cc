// SafeReader (safe_reader.h): three ways to read memory that may not be there, best first.
#include "leakcheck/scan/safe_reader.h"

#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "src/core/readable_pages.h"

namespace stackwalk::leakcheck {
namespace {

constexpr uintptr_t kPage = internal::kProbePage;

// process_vm_readv on our own pid: 0 not probed, 1 works, 2 does not (seccomp, qemu-user, a
// kernel without CONFIG_CROSS_MEMORY_ATTACH).
std::atomic<int> g_vm_readv{0};

bool VmRead(uintptr_t address, void* out, size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  const int saved_errno = errno;
  const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  errno = saved_errno;
  return got >= 0 && static_cast<size_t>(got) == size;
}

bool VmReadvWorks() {
  int known = g_vm_readv.load(std::memory_order_relaxed);
  if (known == 0) {
    const uint64_t probe = 0x5afe5eedc0ffee11ull;
    uint64_t copy = 0;
    const bool read = VmRead(reinterpret_cast<uintptr_t>(&probe), &copy, sizeof copy);
    known = read && copy == probe ? 1 : 2;
    g_vm_readv.store(known, std::memory_order_relaxed);
  }
  return known == 1;
}

// True if [address, end) lies in readable entries of `maps` without a gap.
bool MapsReadable(const MapsSnapshot& maps, uintptr_t address, uintptr_t end) {
  while (address < end) {
    const MapsEntry* entry = maps.Find(address);
    if (entry == nullptr || !entry->readable) return false;
    address = entry->range.hi;
  }
  return true;
}

}  // namespace

SafeReader::SafeReader(const MapsSnapshot* maps, Method method) : maps_(maps), method_(method) {
  if (method_ == Method::kAuto) {
    method_ = VmReadvWorks() ? Method::kProcessVmReadv
              : maps_ != nullptr ? Method::kMaps
                                 : Method::kPages;
  }
  if (method_ == Method::kMaps && maps_ == nullptr) method_ = Method::kPages;
}

bool SafeReader::Read(uintptr_t address, void* out, size_t size) {
  if (size == 0) return true;
  const uintptr_t end = address + size;
  if (end < address) return false;
  switch (method_) {
    case Method::kProcessVmReadv:
      return VmRead(address, out, size);
    case Method::kMaps:
      if (!MapsReadable(*maps_, address, end)) return false;
      break;
    case Method::kPages:
    case Method::kAuto: {
      const uintptr_t first = address & ~(kPage - 1);
      const uintptr_t pages = (end - first + kPage - 1) / kPage;
      if (internal::ReadablePages(first, pages) != pages) return false;
      break;
    }
  }
  std::memcpy(out, reinterpret_cast<const void*>(address), size);
  return true;
}

bool SafeReader::InPlace(uintptr_t address, size_t size) {
  if (maps_ == nullptr) return false;
  const uintptr_t end = address + size;
  if (end < address) return false;
  const MapsEntry* entry = last_in_place_;
  if (entry == nullptr || !entry->range.Contains(address)) {
    entry = maps_->Find(address);
    if (entry == nullptr) return false;
    last_in_place_ = entry;
  }
  return entry->readable && !entry->shared && end <= entry->range.hi &&
         (entry->kind == MapsEntry::Kind::kAnonymous || entry->kind == MapsEntry::Kind::kHeap);
}

size_t SafeReader::ReadBatch(const ReadSpan* spans, size_t count) {
  if (method_ != Method::kProcessVmReadv) return MemoryReader::ReadBatch(spans, count);
  size_t done = 0;
  while (done < count) {
    // The kernel copies iovec by iovec and stops at the first remote one it cannot read whole
    // (a partial transfer never splits an iovec): the bytes it returns say which spans arrived.
    iovec local[kBatchIovecs], remote[kBatchIovecs];
    const size_t batch = count - done < kBatchIovecs ? count - done : kBatchIovecs;
    for (size_t i = 0; i < batch; ++i) {
      local[i] = {spans[done + i].out, spans[done + i].size};
      remote[i] = {reinterpret_cast<void*>(spans[done + i].address), spans[done + i].size};
    }
    const int saved_errno = errno;
    const ssize_t got = process_vm_readv(getpid(), local, batch, remote, batch, 0);
    errno = saved_errno;
    size_t left = got > 0 ? static_cast<size_t>(got) : 0;
    size_t whole = 0;
    while (whole < batch && spans[done + whole].size <= left) left -= spans[done + whole++].size;
    done += whole;
    if (whole < batch) return done;
  }
  return done;
}

}  // namespace stackwalk::leakcheck
