// The record region (issue 17): the checker's tables in memory the launcher can read after the
// program is gone, whatever ended it (SIGKILL included). The launcher creates a memfd and hands
// it to the program it checks (record_format.h: kDescriptor, kDescriptorVariable); the tables
// take their memory from RecordMap, which maps pieces of that memfd (the same mmap as before, a
// different backing: nothing more per allocation) and lists them in the region's directory. With
// no region (no launcher, the in-process library, a process the launcher did not start) RecordMap
// is OwnMap. The region is the checked process's own: a process that merely inherits the
// descriptor never writes to it, and a forked child moves its tables to private memory first.
#ifndef STACKWALK_LEAKCHECK_RECORD_REGION_H_
#define STACKWALK_LEAKCHECK_RECORD_REGION_H_

#include <cstddef>
#include <cstdint>

#include "leakcheck/record_format.h"
#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

// `bytes` (a multiple of the page size) of zeroed memory of the checker's own (never a root of
// the scan: scan/own_mappings.h) holding `kind`, in the record region if this process has one.
// nullptr if out of memory. Async-signal-safe: no malloc, no lock but the region's own spin lock.
void* RecordMap(size_t bytes, record::ExtentKind kind, uint32_t index = 0);
// Gives back what RecordMap mapped (its directory row retired first).
void RecordUnmap(void* address, size_t bytes);

// Writes the loaded objects into the region (a new list, then the old one retired), for the
// launcher to name the stacks after the program is gone, if the module map changed since the
// list last written (its generation). Called at start, after each dlclose, and by
// RecordModulesCovering. Not signal-safe (refreshes the module map); call under a ReentryGuard.
void RecordModules();

// Called with the frames of a stack the process captured for the first time (rare: stacks are
// interned): if one lies in no object of the list last written (a library dlopen'ed since; the
// checker does not interpose dlopen, whose caller decides where it looks), as RecordModules, but
// never waiting for a lock another thread holds (an allocation inside a dl_iterate_phdr callback
// holds the loader's lock, which a module map rebuild waits for): the update is then left to a
// later new stack. A frame in no object at all (JIT code) costs one check of the loaded set
// (dl_iterate_phdr's counters) per new stack and writes nothing. Not signal-safe; call under a
// ReentryGuard (the hooks do).
void RecordModulesCovering(void* const* pcs, int n);

// Around fork(), every table locked: before it, a private copy of each piece of the region (the
// tables as they are at the fork; no piece is mapped until the fork is over); in the parent after
// it, the copies dropped; in the child, alone, the copies put in place of the shared pieces at the
// same addresses and the parent's region let go (closed): the child's records stay its own and the
// parent's stay as the parent leaves them, whatever its threads write meanwhile. Under the
// launcher the child's pieces are those of a region of its own (a new memfd, handed to the
// launcher: record_handover.h), which the launcher reports if the child dies of a signal;
// without it, private memory.
void RecordBeforeFork();
void RecordAfterForkParent();
void RecordLeaveAfterFork();

// Notes in the region that the process wrote its report at exit: the launcher, which cannot tell
// otherwise when the program names its own reports, then reports nothing more of it.
void RecordExitReported();

// Around an exec by this process: the record's image is about to go. RecordExecBegins marks the
// record superseded (record::kExecuted), so that a later death by signal of an image the checker
// does not reach (static, set-ID: nothing starts the region afresh) is not reported as this
// image's; it returns false, touching nothing, if this process has no region of its own (a vfork
// child shares its parent's). RecordExecFailed, after an exec that returned, takes the mark back.
// Async-signal-safe (getpid and atomics): exec is called in vfork children and after fork.
bool RecordExecBegins();
void RecordExecFailed();

// Raises the region's copy of the process's peak live bytes to `bytes` (the hooks call it at
// each new peak, so a killed program's report gives its true peak; each thread's peak is in its
// registry entry, which lives in the region already). Async-signal-safe: a few atomics.
void RecordPeak(uint64_t bytes);

// Raises the region's copy of the process's untracked allocations (untracked.h) to `counts`, the
// table's running count (the hooks call it after each allocation they could not record, rare:
// a killed program's report then says how many went untracked). Attaches the region if no table
// piece did yet (an allocation refused before any was recorded). Async-signal-safe.
void RecordUntracked(const UntrackedCounts& counts);

// Whether this process records into a region the launcher will read (tests, the report).
bool RecordRegionAttached();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_RECORD_REGION_H_
