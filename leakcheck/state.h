// The leak checker's process-wide state: options, the live-allocation table and the stack table.
// Constant-initialized, so allocation hooks can use it before any constructor has run.
#ifndef STACKWALK_LEAKCHECK_STATE_H_
#define STACKWALK_LEAKCHECK_STATE_H_

#include <atomic>

#include "leakcheck/allocation_table.h"
#include "leakcheck/options.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck {

struct State {
  Options options;
  std::atomic<bool> configured{false};
  AllocationTable allocations;
  StackTable stacks;
};

State& GlobalState();

// Writes the leak report for the allocations live now. Not signal-safe; serializes callers.
// Returns the number of leaked allocations it reported.
uint64_t WriteReport(State& state);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STATE_H_
