// Reachability: which live blocks a chain of pointers from the roots reaches, to tell leaks
// (nothing points to them: LeakSanitizer's and valgrind's "definitely" and "indirectly lost")
// from memory still reachable at the report. Roots: the writable segments of every loaded
// object, the calling thread's stack above `stack_pointer`, and the whole stacks of the other
// threads the registry knows to be running. Conservative (every aligned word pointing into a
// block, interior pointers included) and best effort: the other threads are not stopped and
// their registers are not seen, and threads that never allocated are not known.
#ifndef STACKWALK_LEAKCHECK_REACHABILITY_H_
#define STACKWALK_LEAKCHECK_REACHABILITY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {

// `blocks` sorted by address. Returns one flag per block: 1 if reachable.
std::vector<uint8_t> MarkReachable(const Allocation* blocks, size_t n, const ThreadRegistry& threads,
                                   uint32_t self_serial, uintptr_t stack_pointer);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REACHABILITY_H_
