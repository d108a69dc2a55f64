// AllocatorHooks<real>: the body of every hooked allocation function, forwarding to `real` and
// recording around it. The preloaded library exports these under the standard names; the
// in-process mode writes their addresses into GOT slots. When sampling, each first asks the
// inlined fast paths (an allocation with no sample point: SkipUnsampled, sampler.h; a free of a
// block never recorded: SkipUnrecordedFree, recording.h), which leave it at a few instructions
// beside the real allocator's; the rest goes through Record and Unrecord.
#ifndef STACKWALK_LEAKCHECK_ALLOCATOR_HOOKS_H_
#define STACKWALK_LEAKCHECK_ALLOCATOR_HOOKS_H_

#include <errno.h>

#include <cstddef>
#include <new>

#include "leakcheck/real_allocator.h"
#include "leakcheck/recording.h"

namespace stackwalk::leakcheck {

template <const RealAllocator& real>
struct AllocatorHooks {
  // Each allocation function asks SkipUnsampled before it allocates, so that its fast path is a
  // tail call of the real function: the countdown moves by the bytes asked for, which a failed
  // allocation then does not hold (a block that does not exist is never recorded anyway, and
  // the sampling of the others stays a Poisson process over their bytes). The full hook
  // allocates first and asks the sampler in Record. The most called ones keep the full hook in a
  // function of its own, so that their fast path builds no frame.
  static void* Malloc(size_t size) {
    if (SkipUnsampled(size)) return real.malloc(size);
    return MallocRecorded(size);
  }
  [[gnu::noinline]] static void* MallocRecorded(size_t size) {
    void* p = real.malloc(size);
    Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void Free(void* p) {
    if (SkipUnrecordedFree(p)) return real.free(p);
    FreeRecorded(p);
  }
  [[gnu::noinline]] static void FreeRecorded(void* p) {
    Unrecord(p);
    real.free(p);
  }
  static void* Calloc(size_t n, size_t size) {
    // An overflowing product is refused (null), whatever the countdown made of it.
    if (SkipUnsampled(n * size)) return real.calloc(n, size);
    return CallocRecorded(n, size);
  }
  [[gnu::noinline]] static void* CallocRecorded(size_t n, size_t size) {
    void* p = real.calloc(n, size);
    Record(p, n * size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* Realloc(void* old, size_t size) {
    if (SkipUnrecordedFree(old) && SkipUnsampled(size)) return real.realloc(old, size);
    return ReallocRecorded(old, size);
  }
  [[gnu::noinline]] static void* ReallocRecorded(void* old, size_t size) {
    Allocation before{};
    const bool tracked = !SkipUnrecordedFree(old) && TakeRecord(old, &before);
    void* p = real.realloc(old, size);
    if (p != nullptr) {
      if (!SkipUnsampled(size)) Record(p, size, STACKWALK_CALL_SITE());
    } else if (tracked && size != 0) {
      RestoreRecord(before);  // failed: the old block lives on
    }
    return p;
  }
  static void* Reallocarray(void* old, size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
      errno = ENOMEM;
      return nullptr;
    }
    return Realloc(old, bytes);
  }
  static void* Memalign(size_t align, size_t size) {
    if (SkipUnsampled(size)) return real.memalign(align, size);
    void* p = real.memalign(align, size);
    Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* AlignedAlloc(size_t align, size_t size) {
    if (SkipUnsampled(size)) return real.aligned_alloc(align, size);
    void* p = real.aligned_alloc(align, size);
    Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static int PosixMemalign(void** out, size_t align, size_t size) {
    if (SkipUnsampled(size)) return real.posix_memalign(out, align, size);
    int error = real.posix_memalign(out, align, size);
    if (error == 0) Record(*out, size, STACKWALK_CALL_SITE());
    return error;
  }
  static void* Valloc(size_t size) {
    if (SkipUnsampled(size)) return real.valloc(size);
    void* p = real.valloc(size);
    Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* Pvalloc(size_t size) {
    if (SkipUnsampled(size)) return real.pvalloc(size);
    void* p = real.pvalloc(size);
    Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }

  // operator new: the real one may call malloc through a hooked slot of its own; that inner
  // call is part of this allocation, not another one (the guard, on the fast path too).
  static void* New(size_t size) {
    const bool unsampled = SkipUnsampled(size);
    void* p;
    {
      ReentryGuard inner;
      p = real.new_throwing(size);
    }
    if (!unsampled) Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* NewNothrow(size_t size, const std::nothrow_t& tag) noexcept {
    const bool unsampled = SkipUnsampled(size);
    void* p;
    {
      ReentryGuard inner;
      p = real.new_nothrow(size, tag);
    }
    if (!unsampled) Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* NewAligned(size_t size, std::align_val_t align) {
    const bool unsampled = SkipUnsampled(size);
    void* p;
    {
      ReentryGuard inner;
      p = real.new_aligned(size, align);
    }
    if (!unsampled) Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void* NewAlignedNothrow(size_t size, std::align_val_t align,
                                 const std::nothrow_t& tag) noexcept {
    const bool unsampled = SkipUnsampled(size);
    void* p;
    {
      ReentryGuard inner;
      p = real.new_aligned_nothrow(size, align, tag);
    }
    if (!unsampled) Record(p, size, STACKWALK_CALL_SITE());
    return p;
  }
  static void Delete(void* p) noexcept {
    if (!SkipUnrecordedFree(p)) Unrecord(p);
    ReentryGuard inner;
    real.delete_plain(p);
  }
  static void DeleteSized(void* p, size_t) noexcept { Delete(p); }
  static void DeleteNothrow(void* p, const std::nothrow_t&) noexcept { Delete(p); }
  static void DeleteAligned(void* p, std::align_val_t align) noexcept {
    if (!SkipUnrecordedFree(p)) Unrecord(p);
    ReentryGuard inner;
    real.delete_aligned(p, align);
  }
  static void DeleteSizedAligned(void* p, size_t, std::align_val_t align) noexcept {
    DeleteAligned(p, align);
  }
  static void DeleteAlignedNothrow(void* p, std::align_val_t align,
                                   const std::nothrow_t&) noexcept {
    DeleteAligned(p, align);
  }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_ALLOCATOR_HOOKS_H_
