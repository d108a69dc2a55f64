// Reachability: which live blocks a chain of pointers from the roots reaches, to tell leaks
// (nothing points to them: LeakSanitizer's and valgrind's "definitely" and "indirectly lost")
// from memory still reachable at the report. Roots (MarkReachable): the writable segments of
// every loaded object, the calling thread's stack above `stack_pointer`, and the stacks of the
// other running threads as the registry noted them (recording notes a thread's stack at its
// first recorded allocation when the scan is configured). Conservative (every aligned word
// pointing into a block, interior pointers included) and best effort: the other threads are not
// stopped and their registers are not seen, threads with no recorded allocation are not known,
// and anonymous mappings, the main thread's static TLS and dynamic TLS blocks are not roots.
// ReachabilityMarker is the scan itself, over roots its caller chooses.
#ifndef STACKWALK_LEAKCHECK_REACHABILITY_H_
#define STACKWALK_LEAKCHECK_REACHABILITY_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {

// The scan itself, over roots its caller chooses: every aligned word of a root that points into
// a block (interior pointers included, but not at the next glibc chunk header of a block that
// fills its chunk: the allocator's own pointer) marks that block, and marked blocks are scanned
// in turn. Not thread-safe; allocates.
class ReachabilityMarker {
 public:
  // `blocks` sorted by address, valid while the marker is used.
  ReachabilityMarker(const Allocation* blocks, size_t n);

  // A root in memory that stays mapped while it is read (this thread's stack, the loaded
  // objects' segments).
  void ScanDirect(uintptr_t start, uintptr_t end);
  // A root that may vanish while it is read (other threads' stacks): copied through
  // process_vm_readv, which fails instead of faulting.
  void ScanCopied(uintptr_t start, uintptr_t end);
  // Follows pointers out of every block marked so far, until none is new. Blocks are copied out
  // through process_vm_readv, up to 1,024 at a time: another thread may free one meanwhile and
  // glibc may then unmap or protect the pages under it, which a plain read would fault on.
  void Propagate();
  // One flag per block: 1 if marked.
  std::vector<uint8_t> Take() { return std::move(marks_); }

 private:
  void ScanWords(const uintptr_t* words, size_t count);

  const Allocation* blocks_;
  size_t n_;
  std::vector<uint8_t> marks_;
  std::vector<size_t> pending_;
  uintptr_t low_ = 0;
  uintptr_t high_ = 0;
  uintptr_t buffer_[8192];
};

// `blocks` sorted by address. Returns one flag per block: 1 if reachable from the roots above.
std::vector<uint8_t> MarkReachable(const Allocation* blocks, size_t n, const ThreadRegistry& threads,
                                   uint32_t self_serial, uintptr_t stack_pointer);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REACHABILITY_H_
