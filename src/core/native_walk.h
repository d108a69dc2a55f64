// The walk of the native architecture shared by the C API, Capture() and Cursor: method
// checks, one step with the chosen method, and the loop that fills a PC array.
#ifndef STACKWALK_SRC_CORE_NATIVE_WALK_H_
#define STACKWALK_SRC_CORE_NATIVE_WALK_H_

#include "core/code_map.h"
#include "core/context.h"
#include "core/stack_memory.h"
#include "core/step_result.h"
#include "fp/fp_step.h"

namespace stackwalk::internal {

// 0 if `method` (a stackwalk_method value) can capture here, else a STACKWALK_ERROR_* code.
// Signal safety: async-signal-safe.
int CheckMethod(int method);

// One step with a method that passed CheckMethod().
// Signal safety: async-signal-safe.
StepResult NativeStep(int method, NativeRegs& regs, StackMemory& memory, const CodeMap& code,
                      FpWalkState* state);

// Writes regs.pc() and then the PC of each caller into pcs[0..max), dropping the first `skip`.
// Returns how many it wrote. Signal safety: async-signal-safe.
int WalkToArray(int method, NativeRegs& regs, StackMemory& memory, void** pcs, int max,
                int skip);

// Sets up the stack regions for a walk of the calling thread from `regs`.
// Signal safety: async-signal-safe.
bool InitStackFor(const NativeRegs& regs, StackMemory* memory);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_NATIVE_WALK_H_
