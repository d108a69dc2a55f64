// ReadablePages: which pages can be read now, asked of the kernel without touching them (so
// nothing faults). Shared by the stack reads of a walk from a signal context (stack_memory.cc)
// and the leak check's page-checked reads (leakcheck/scan/safe_reader.cc).
#ifndef STACKWALK_SRC_CORE_READABLE_PAGES_H_
#define STACKWALK_SRC_CORE_READABLE_PAGES_H_

#include <cstdint>

namespace stackwalk::internal {

// The smallest page of every target: checking by it is exact.
inline constexpr uint64_t kProbePage = 4096;

// ReadablePages(): how many of the `count` pages from `first` (kProbePage aligned) on can be read
// now, in a row: the kernel reads a signal set from each before it rejects rt_sigprocmask's
// invalid `how` (EINVAL), or fails with EFAULT. About 100-170 ns a page (process_vm_readv, one
// call for many pages, costs as much per page: it pins each). errno is kept.
// Signal safety: async-signal-safe.
uint64_t ReadablePages(uint64_t first, uint64_t count);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_READABLE_PAGES_H_
