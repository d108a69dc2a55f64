#include "core/stack_memory.h"

#include <errno.h>
#include <signal.h>

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

}  // namespace

bool StackMemory::AddRegion(AddressRange range) {
  if (count_ == kMaxRegions || range.empty()) return false;
  regions_[count_++] = range;
  return true;
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
