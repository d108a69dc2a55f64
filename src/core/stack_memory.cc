#include "core/stack_memory.h"

#include <errno.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <initializer_list>

#include "core/proc_maps.h"
#include "core/readable_pages.h"

namespace stackwalk::internal {
namespace {

// Reads of /proc/self/maps for a stack (tests: how often a thread's walks needed one).
std::atomic<uintptr_t> g_stack_lookups{0};
static_assert(std::atomic<uintptr_t>::is_always_lock_free, "counted in signal handlers");

bool LookUpStackMapping(uint64_t addr, AddressRange* out) {
  g_stack_lookups.fetch_add(1, std::memory_order_relaxed);
  Mapping m;
  if (!FindMapping(addr, &m) || !m.readable || !m.writable) return false;
  *out = m.range;
  return true;
}

// LookUpStackMapping for a stack pointer, which lies in a stack unless the stack overflowed: a
// read of /proc/self/maps racing another thread's mmap, munmap or mprotect can miss a mapping
// (under qemu-user a new thread's own stack was missing from one read and there in the next:
// stress_test's 16 threads starting while others dlopen and dlclose, one run in 20-25), so a
// lookup that finds nothing is made twice more.
bool LookUpStackPointerMapping(uint64_t sp, AddressRange* out) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (LookUpStackMapping(sp, out)) return true;
  }
  return false;
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

constexpr uint64_t kPage = kProbePage;
// The first batch checked ahead of a read (256 KiB: most walks' frames), then as many again as
// the region has, so that a walk's checks stay a few calls while the pages it does not reach cost
// at most as much as the ones it does.
constexpr uint64_t kFirstBatchPages = 64;

#if defined(MADV_POPULATE_READ)
constexpr int kPopulateRead = MADV_POPULATE_READ;
#else
constexpr int kPopulateRead = 22;  // Linux 5.14's value on x86_64, aarch64 and arm
#endif

// madvise(MADV_POPULATE_READ) maps every page of a range for reading, as a load would, or fails
// (ENOMEM on an unmapped page, EINVAL on a PROT_NONE or write-only one, EFAULT where a load would
// raise SIGBUS): one call checks many pages, about 150 ns plus 30 ns a page, and maps nothing a
// walk's loads would not. Before Linux 5.14 it fails on every range (EINVAL); a seccomp filter
// may refuse it (EPERM); qemu-user ignores it and returns 0 for any range, PROT_NONE or
// unmapped. So it is trusted only after it has refused a PROT_NONE page and an unmapped one and
// accepted a stack page, once per process: 1 trusted, -1 not, 0 not known yet.
std::atomic<int> g_populate_read{0};
static_assert(std::atomic<int>::is_always_lock_free, "read from signal handlers");

uintptr_t RealPageSize() {
  const unsigned long size = getauxval(AT_PAGESZ);
  return size >= kPage && (size & (size - 1)) == 0 ? size : kPage;
}

bool PopulateReadIsTrusted() {
  const int known = g_populate_read.load(std::memory_order_relaxed);
  if (known != 0) return known > 0;
  const int saved_errno = errno;
  const uintptr_t page = RealPageSize();
  void* none = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (none == MAP_FAILED) {
    errno = saved_errno;
    return false;  // not known: asked again next time
  }
  const bool refuses_none = madvise(none, page, kPopulateRead) != 0;
  munmap(none, page);
  // Another thread may map the address again meanwhile: then the check fails, which is safe.
  const bool refuses_unmapped = madvise(none, page, kPopulateRead) != 0;
  volatile char here = 0;
  const uintptr_t own = reinterpret_cast<uintptr_t>(&here) & ~(page - 1);
  const bool accepts_stack = madvise(reinterpret_cast<void*>(own), page, kPopulateRead) == 0;
  errno = saved_errno;
  const bool trusted = refuses_none && refuses_unmapped && accepts_stack;
  g_populate_read.store(trusted ? 1 : -1, std::memory_order_relaxed);
  return trusted;
}

// Whether every byte of [lo, hi) can be read now, in one madvise call; false also when that
// check is not trusted here (the caller then probes page by page).
bool RangeReadable(uint64_t lo, uint64_t hi) {
  if (hi <= lo || !PopulateReadIsTrusted()) return false;
  const uint64_t page = RealPageSize();
  const uint64_t start = lo & ~(page - 1), end = (hi + page - 1) & ~(page - 1);
  const int saved_errno = errno;
  const bool ok = madvise(reinterpret_cast<void*>(static_cast<uintptr_t>(start)), end - start,
                          kPopulateRead) == 0;
  errno = saved_errno;
  return ok;
}

// Checks the pages [from, need) (kPage aligned, from < need), and those up to `want` >= need
// when one call can check them all: returns the end of the pages found readable (`want` or
// `need`), or 0 if some page below `need` is not. `lo` is the lowest byte the region may read
// (an altstack need not start on a page).
uint64_t CheckPages(uint64_t from, uint64_t need, uint64_t want, uint64_t lo) {
  const uint64_t start = from < lo ? lo : from;
  if (RangeReadable(start, want)) return want;
  if (want > need && RangeReadable(start, need)) return need;
  // Page by page: the exact answer where the batch failed or is not trusted.
  const uint64_t pages = (need - from) / kPage;
  if (ReadablePages(start, 1) != 1) return 0;
  if (pages > 1 && ReadablePages(from + kPage, pages - 1) != pages - 1) return 0;
  return need;
}

// Whether `range` is the process's initial stack, the one that grows down: it holds the 16
// random bytes the kernel put there at exec (AT_RANDOM). Told by the mapping, not by the thread:
// the main thread may run on another stack (a coroutine's), and a child forked from another
// thread is its process's main thread on that thread's stack.
bool IsInitialStack(AddressRange range) {
  const unsigned long at_random = getauxval(AT_RANDOM);
  return at_random != 0 && range.Contains(at_random);
}

// How far below its cached bounds the initial stack is followed without reading
// /proc/self/maps: the kernel keeps other mappings a guard gap (1 MiB by default, unless one is
// placed with MAP_FIXED) below a stack that grows down, so readable pages there, up to the
// bounds, are the stack's own.
constexpr uint64_t kMainStackGrowth = uint64_t{1} << 20;

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
    const uint64_t bound_end = (bound.hi + kPage - 1) & ~(kPage - 1);
    // The pages checked so far, [lo, hi): the region stays one range (as the walk's fast loops
    // and frame log need), so a read away from it checks the gap too.
    uint64_t lo = first, hi = first;
    if (!probed.empty()) {
      lo = probed.lo & ~(kPage - 1);
      hi = (probed.hi + kPage - 1) & ~(kPage - 1);
    }
    if (first < lo) {
      if ((lo - first) / kPage > kMaxProbePages || CheckPages(first, lo, lo, bound.lo) == 0) {
        return false;
      }
      lo = first;
      probed.lo = lo < bound.lo ? bound.lo : lo;
      if (probed.hi < probed.lo) probed.hi = probed.lo;
    }
    if (last > hi) {
      if ((last - hi) / kPage > kMaxProbePages) return false;
      // A walk reads upward: check ahead of the read as well, as many pages as the region has
      // (at least kFirstBatchPages), when one call does.
      const uint64_t have = hi - lo > kFirstBatchPages * kPage ? hi - lo : kFirstBatchPages * kPage;
      uint64_t want = hi + have < bound_end ? hi + have : bound_end;
      if (want < last) want = last;
      const uint64_t end = CheckPages(hi, last, want, bound.lo);
      if (end == 0) return false;
      hi = end;
    }
    probed = {lo < bound.lo ? bound.lo : lo, hi > bound.hi ? bound.hi : hi};
    return true;
  }
  return false;
}

bool StackMemory::InitSlow(uint64_t sp) {
  count_ = 0;
  discover_on_miss_ = false;
  AddressRange cached = CachedThreadStack();
  AddressRange alt;
  if (CurrentAltStack(sp, &alt)) {
    AddRegion(alt);
    // The walk leaves the altstack through the signal frame into the thread's stack: as cached,
    // or found on the first miss. The interrupted code may have gone below the cached bounds
    // since (the initial stack grows down): a miss below them looks again, once.
    if (!cached.empty()) AddRegion(cached);
    discover_on_miss_ = true;
    return true;
  }
  // The initial stack grew below the cached bounds (the main thread's recursion makes it do so
  // again and again: clang -fsyntax-only read the maps 41 times, its stack near their end): one
  // madvise call checks the pages it grew by.
  if (!cached.empty() && sp < cached.lo && cached.lo - sp <= kMainStackGrowth &&
      IsInitialStack(cached)) {
    const AddressRange grown{sp & ~(kPage - 1), cached.hi};
    if (RangeReadable(grown.lo, cached.lo)) {
      CacheThreadStack(grown);
      AddRegion(grown);
      return true;
    }
  }
  // First walk on this thread, or its stack grew further (or it runs on another stack now).
  AddressRange found;
  if (!LookUpStackPointerMapping(sp, &found)) {
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
  CacheThreadStack(found);
  AddRegion(found);
  return true;
}

bool StackMemory::DiscoverThreadStack(uint64_t addr) {
  discover_on_miss_ = false;  // at most one /proc read per walk
  if (count_ == kMaxRegions) return FollowThreadStackDown(addr);
  AddressRange found;
  if (!LookUpStackMapping(addr, &found)) return false;
  // Not cached: `addr` came from a frame, not from a real stack pointer, so it may be garbage
  // that happens to point into some other writable mapping.
  return AddRegion(found);
}

bool StackMemory::FollowThreadStackDown(uint64_t addr) {
  // Region 1 is the thread's stack as cached (InitSlow); when verifying, its bounds are.
  AddressRange& stack = verify_ ? bounds_[1] : regions_[1];
  // Only the initial stack grows down: another thread's cached bounds are its whole mapping
  // already, and a miss below them (a garbage frame pointer) is worth no read of the maps.
  if (addr >= stack.lo || stack.lo - addr > kMainStackGrowth || !IsInitialStack(stack)) {
    return false;
  }
  AddressRange grown{addr & ~(kPage - 1), stack.hi};
  if (!RangeReadable(grown.lo, stack.lo)) {
    // Where the one-call check is not trusted: the same mapping, larger now (its top unchanged).
    if (!LookUpStackMapping(addr, &grown) || grown.hi != stack.hi || grown.lo > addr) return false;
  }
  stack.lo = grown.lo;  // this walk's region only; the next walk from the thread caches its own
  return true;
}

void StackMemory::ResetThreadCacheForTesting() { CacheThreadStack(AddressRange()); }

bool StackMemory::RangeCheckTrustedForTesting() { return PopulateReadIsTrusted(); }

uint64_t StackMemory::StackLookupsForTesting() {
  return g_stack_lookups.load(std::memory_order_relaxed);
}

void StackMemory::UseRangeCheckForTesting(bool use) {
  g_populate_read.store(use ? 0 : -1, std::memory_order_relaxed);
}

}  // namespace stackwalk::internal
