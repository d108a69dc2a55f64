// RealAllocator: the allocator the hooks forward to. The preloaded library forwards to glibc's
// __libc_* entry points (so it never calls itself); the in-process (PLT/GOT) mode to whatever
// the process's global symbols were when checking started (glibc, jemalloc, an own operator new).
#ifndef STACKWALK_LEAKCHECK_REAL_ALLOCATOR_H_
#define STACKWALK_LEAKCHECK_REAL_ALLOCATOR_H_

#include <cstddef>
#include <new>

namespace stackwalk::leakcheck {

struct RealAllocator {
  void* (*malloc)(size_t);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*reallocarray)(void*, size_t, size_t);
  void (*free)(void*);
  void* (*memalign)(size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  // operator new and delete; the array and sized forms forward to these too, which the
  // standard's default definitions do as well.
  void* (*new_throwing)(size_t);
  void* (*new_nothrow)(size_t, const std::nothrow_t&);
  void* (*new_aligned)(size_t, std::align_val_t);
  void* (*new_aligned_nothrow)(size_t, std::align_val_t, const std::nothrow_t&);
  void (*delete_plain)(void*);
  void (*delete_aligned)(void*, std::align_val_t);
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REAL_ALLOCATOR_H_
