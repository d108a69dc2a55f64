// StackMemory: bounds-checked reads of the calling thread's stack, for walks that must never
// fault. A read succeeds only inside a known stack region: the thread's stack (found once per
// thread from /proc/self/maps and cached in a thread-local) and, inside a handler running on
// it, the sigaltstack.
//
// The cached bounds hold while the thread's stack mapping stays as it was. A walk from a signal
// context may meet a stack that changed since (a page in the middle made PROT_NONE or unmapped,
// a coroutine's stack freed and another mapped over part of it): after VerifyPages() each
// region is only the pages checked readable so far, and grows as the walk reads on. A read past
// them checks its own pages and, where one madvise(MADV_POPULATE_READ) call can check a range,
// as many pages again above them (a walk reads upward); elsewhere (qemu-user, kernels before
// 5.14, seccomp filters refusing it) one rt_sigprocmask call per page, only the pages read.
#ifndef STACKWALK_SRC_CORE_STACK_MEMORY_H_
#define STACKWALK_SRC_CORE_STACK_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/address_range.h"

namespace stackwalk::internal {

// Copies stack bytes a walk has bounds-checked. The words it reads belong to other frames, which
// AddressSanitizer poisons around their locals by design: exempt from it, and copied without
// memcpy, which ASan intercepts.
__attribute__((no_sanitize("address"))) inline void CopyStackBytes(void* out, uint64_t addr,
                                                                     size_t size) {
  const auto* from = reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(addr));
  if (size == 8) {
    uint64_t word;
    __builtin_memcpy(&word, from, 8);
    __builtin_memcpy(out, &word, 8);
  } else if (size == 4) {
    uint32_t word;
    __builtin_memcpy(&word, from, 4);
    __builtin_memcpy(out, &word, 4);
  } else {
    auto* to = static_cast<volatile unsigned char*>(out);
    for (size_t i = 0; i < size; ++i) to[i] = from[i];
  }
}

class StackMemory {
 public:
  static constexpr int kMaxRegions = 2;

  // Prepares reads for a walk of the calling thread that starts at stack pointer `sp`.
  // Returns false if `sp` lies in no stack stackwalk can find.
  // Signal safety: async-signal-safe (may read /proc/self/maps once per thread).
  bool InitForCurrentThread(uint64_t sp) {
    // The common case inline: sp inside the thread's cached stack.
    const AddressRange cached = CachedThreadStack();
    if (cached.Contains(sp)) {
      regions_[0] = cached;
      count_ = 1;
      discover_on_miss_ = false;
      return true;
    }
    return InitSlow(sp);
  }

  // Adds a region by hand (snapshots, tests). Returns false when full.
  bool AddRegion(AddressRange range);

  // From now on, reads are checked as described above; the region holding `sp` starts as the
  // pages checked for the read at `sp`. Signal safety: async-signal-safe (syscalls only).
  void VerifyPages(uint64_t sp);
  // Most pages one read may probe to grow a region (a frame of at most kMaxFrameSize).
  static constexpr uint64_t kMaxProbePages = 1024;

  // Copies `size` bytes at `addr` into `out` if they lie inside one region.
  // A miss while walking off a sigaltstack whose thread stack is not yet known looks the
  // thread stack up once.
  bool Read(uint64_t addr, void* out, size_t size) {
    for (int i = 0; i < count_; ++i) {
      if (regions_[i].ContainsSpan(addr, size)) {
        CopyStackBytes(out, addr, size);
        return true;
      }
    }
    if (verify_ && Grow(addr, size)) return Read(addr, out, size);
    if (discover_on_miss_ && DiscoverThreadStack(addr)) return Read(addr, out, size);
    return false;
  }

  // Index of the region holding `addr`, or -1. Like Read(), may look the thread stack up once.
  int RegionOf(uint64_t addr) {
    for (int i = 0; i < count_; ++i) {
      if (regions_[i].Contains(addr)) return i;
    }
    if (verify_ && Grow(addr, 1)) return RegionOf(addr);
    if (discover_on_miss_ && DiscoverThreadStack(addr)) return RegionOf(addr);
    return -1;
  }

  int region_count() const { return count_; }
  const AddressRange& region(int i) const { return regions_[i]; }

  // Forgets the calling thread's cached stack bounds (tests).
  static void ResetThreadCacheForTesting();
  // Reads of /proc/self/maps made to find a stack, by every thread so far (tests).
  static uint64_t StackLookupsForTesting();
  // Checks pages one at a time, as where the one-call check is not trusted (false), or goes
  // back to finding out whether it is (true) (tests).
  static void UseRangeCheckForTesting(bool use);
  // Whether the one-call check is trusted here, found out now if not yet known (tests).
  static bool RangeCheckTrustedForTesting();

 private:
  bool DiscoverThreadStack(uint64_t addr);
  // A miss at most 1 MiB below the initial stack as cached, on a walk off a sigaltstack: the stack
  // grown since (one madvise call, else /proc/self/maps); the region follows it down for this
  // walk. False if `addr` is not on it.
  bool FollowThreadStackDown(uint64_t addr);
  bool InitSlow(uint64_t sp);
  // Checks the pages of [addr, addr + size) the region whose bounds hold it has not checked yet
  // (and the gap to them, and some above), and grows that region over them. False if a page the
  // read needs is not readable (or too many).
  bool Grow(uint64_t addr, size_t size);

  // The calling thread's stack, found once, its bounds kept inverted (~lo, ~hi; zero: none).
  // Static TLS is a root of the leak checker's scan, and a coroutine's stack is a block or a
  // mapping the program frees: its bounds as they were would lie in whatever block comes there
  // next (the heap's old end inside the blocks it grows into) and keep that block reachable.
  // Initial-exec TLS: a dlopen'ed libstackwalk lives in glibc's static TLS surplus, so a
  // thread's first access never calls __tls_get_addr (which may malloc).
  __attribute__((tls_model("initial-exec"))) inline static thread_local AddressRange
      thread_stack_inverted_{};
  static AddressRange CachedThreadStack() {
    const AddressRange inverted = thread_stack_inverted_;
    return {~inverted.lo, ~inverted.hi};
  }
  static void CacheThreadStack(AddressRange range) {
    thread_stack_inverted_ = {~range.lo, ~range.hi};
  }

  AddressRange regions_[kMaxRegions];  // after VerifyPages(): the checked pages of each bound
  AddressRange bounds_[kMaxRegions];   // the regions as found, when verifying pages
  int count_ = 0;
  bool discover_on_miss_ = false;
  bool verify_ = false;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_STACK_MEMORY_H_
