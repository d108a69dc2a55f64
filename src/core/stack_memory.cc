#include "core/stack_memory.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <initializer_list>

#include "core/proc_maps.h"

namespace stackwalk::internal {
namespace {

bool LookUpStackMapping(uint64_t addr, AddressRange* out) {
  Mapping m;
  if (!FindMapping(addr, &m) || !m.readable || !m.writable) return false;
  *out = m.range;
  return true;
}

// The sigaltstack the calling thread is running on, if any.
bool CurrentAltStack(uint64_t sp, AddressRange* out) {
  int saved_errno = errno;
  stack_t ss;
  bool on = sigaltstack(nullptr, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) != 0;
  errno = saved_errno;
  if (!on) return false;
  AddressRange r{reinterpret_cast<uintptr_t>(ss.ss_sp),
                 reinterpret_cast<uintptr_t>(ss.ss_sp) + ss.ss_size};
  if (!r.Contains(sp)) return false;
  *out = r;
  return true;
}

constexpr uint64_t kPage = 4096;  // the smallest page of every target: probing by it is exact
constexpr uint64_t kFirstProbePages = 32;  // 128 KiB: the used part of most stacks

// How many of the `count` pages from `first` on can be read now, in a row, without touching
// them: the kernel reads a signal set from each before it rejects rt_sigprocmask's invalid
// `how` (EINVAL), or fails with EFAULT. About 170 ns a page on the development machine
// (process_vm_readv, one call for many pages, costs more per page: it pins them).
uint64_t ReadablePages(uint64_t first, uint64_t count) {
  const int saved_errno = errno;
  uint64_t readable = 0;
  for (; readable < count; ++readable) {
    const long r = syscall(SYS_rt_sigprocmask, ~0L,
                           static_cast<uintptr_t>(first + readable * kPage), nullptr,
                           sizeof(uint64_t));
    if (r != -1 || errno != EINVAL) break;
  }
  errno = saved_errno;
  return readable;
}

}  // namespace

bool StackMemory::AddRegion(AddressRange range) {
  if (count_ == kMaxRegions || range.empty()) return false;
  bounds_[count_] = range;
  // Verifying: nothing probed yet; the first read grows it.
  regions_[count_++] = verify_ ? AddressRange{range.lo, range.lo} : range;
  return true;
}

void StackMemory::VerifyPages(uint64_t sp) {
  if (verify_) return;
  verify_ = true;
  for (int i = 0; i < count_; ++i) {
    bounds_[i] = regions_[i];
    regions_[i] = AddressRange{bounds_[i].lo, bounds_[i].lo};
  }
  Grow(sp, 1);
}

bool StackMemory::Grow(uint64_t addr, size_t size) {
  if (size == 0) return false;
  for (int i = 0; i < count_; ++i) {
    const AddressRange bound = bounds_[i];
    if (!bound.ContainsSpan(addr, size)) continue;
    AddressRange& probed = regions_[i];
    const uint64_t first = addr & ~(kPage - 1);
    const uint64_t last = ((addr + size - 1) & ~(kPage - 1)) + kPage;  // end of the read's pages
    auto start_of = [&](uint64_t page) { return page < bound.lo ? bound.lo : page; };
    if (probed.empty()) {
      // The first read: the pages from its own up to the region's top (a walk reads upward),
      // as far as they are readable, at most kFirstProbePages (later reads grow it); the read
      // must lie inside them.
      uint64_t pages = (bound.hi - first + kPage - 1) / kPage;
      if (pages > kFirstProbePages) pages = kFirstProbePages;
      if (pages < (last - first) / kPage) pages = (last - first) / kPage;
      if (pages > kMaxProbePages) return false;
      const uint64_t top = first + ReadablePages(start_of(first), pages) * kPage;
      if (top < last) return false;
      probed = {start_of(first), top > bound.hi ? bound.hi : top};
      return true;
    }
    // Later reads: the read's pages and any gap to the probed range, below it and above it (a
    // region stays one range, as the walk's fast loops and frame log need).
    const uint64_t done_lo = probed.lo & ~(kPage - 1), done_hi = probed.hi;
    const uint64_t below = first < done_lo ? (done_lo - first) / kPage : 0;
    const uint64_t above = last > done_hi ? (last - done_hi + kPage - 1) / kPage : 0;
    if (below + above > kMaxProbePages) return false;
    if (below > 0 && ReadablePages(start_of(first), below) != below) return false;
    if (above > 0 && ReadablePages(done_hi, above) != above) return false;
    if (below > 0) probed.lo = start_of(first);
    if (above > 0) probed.hi = last > bound.hi ? bound.hi : last;
    return true;
  }
  return false;
}

bool StackMemory::InitSlow(uint64_t sp) {
  count_ = 0;
  discover_on_miss_ = false;
  AddressRange cached = thread_stack_;
  AddressRange alt;
  if (CurrentAltStack(sp, &alt)) {
    AddRegion(alt);
    // The walk leaves the altstack through the signal frame into the thread's stack.
    if (!cached.empty()) {
      AddRegion(cached);
    } else {
      discover_on_miss_ = true;
    }
    return true;
  }
  // First walk on this thread, or the main thread's stack grew below the cached bounds.
  AddressRange found;
  if (!LookUpStackMapping(sp, &found)) {
    // A stack overflow leaves sp in the guard gap just below the stack (unmapped, or a PROT_NONE
    // guard page): the frames above it are still there to be read. A readable mapping is no gap.
    Mapping at;
    if (FindMapping(sp, &at) && at.readable) return false;
    bool near = false;
    for (uint64_t above : {uint64_t{4096}, uint64_t{65536}, uint64_t{1} << 20}) {
      if (LookUpStackMapping(sp + above, &found) && found.lo > sp && found.lo - sp <= above) {
        near = true;
        break;
      }
    }
    if (!near) return false;
  }
  thread_stack_ = found;
  AddRegion(found);
  return true;
}

bool StackMemory::DiscoverThreadStack(uint64_t addr) {
  discover_on_miss_ = false;  // at most one /proc read per walk
  AddressRange found;
  if (!LookUpStackMapping(addr, &found)) return false;
  // Not cached: `addr` came from a frame, not from a real stack pointer, so it may be garbage
  // that happens to point into some other writable mapping.
  return AddRegion(found);
}

void StackMemory::ResetThreadCacheForTesting() { thread_stack_ = AddressRange(); }

}  // namespace stackwalk::internal
