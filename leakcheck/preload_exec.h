// The exec family interposed by the preloaded library (preload_exec.cc): each exec marks the
// record region superseded first (record_region.h, RecordExecBegins; issue 17), and a process
// forked from the launcher's program execs a program the launcher does not check (no
// --follow-exec) without the library.
#ifndef STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_
#define STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_

namespace stackwalk::leakcheck {

// Finds the real exec functions (dlsym(RTLD_NEXT)). Called at the preload's start, in every
// process (the unchecked ones exec too). Not async-signal-safe.
void ResolveExecFunctions();

// Writes the LD_PRELOAD list `list` without this library (any path whose file name is
// libstackwalk_leakcheck.so) to `out`, which may be `list` itself (the list only shrinks),
// NUL-terminated. Async-signal-safe.
void WithoutThisLibrary(const char* list, char* out);

// The descriptors the launcher handed the process that a program it does not check must not
// keep open (the launcher waits for the last of them to close): the dump pipe, the record
// region's memfd and the children's socket, each only if its number still holds what the
// launcher put there. Writes them to fds[] and returns how many. Async-signal-safe.
constexpr int kLauncherDescriptors = 3;
int LauncherDescriptors(int fds[kLauncherDescriptors]);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_PRELOAD_EXEC_H_
