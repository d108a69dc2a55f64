// The exec family interposed by the preloaded library (preload_exec.cc): each exec marks the
// record region superseded first (record_region.h, RecordExecBegins; issue 17).
#ifndef STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_
#define STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_

namespace stackwalk::leakcheck {

// Finds the real exec functions (dlsym(RTLD_NEXT)). Called at the preload's start, in every
// process (the unchecked ones exec too). Not async-signal-safe.
void ResolveExecFunctions();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_
