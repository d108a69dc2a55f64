// Snapshots (issue 19): the memory profile's figures at a moment, added to the dump file as a
// dump of their own whose occasion is "snapshot N", for `stackwalk-report --diff` to compare.
// A snapshot is not a leak report: no scan, nothing named, nothing rendered; it carries the
// per-stack aggregates (stack statistics: live bytes and blocks, allocations so far), the thread
// totals and the timeline, not the live blocks, so that its size grows with the distinct stacks
// and not with the live set (docs/dump-format.md, "Sizes"). Asked by the API
// (stackwalk_leakcheck_snapshot), by a signal (snapshot_signal) or every snapshot_interval
// seconds; the signal's handler only wakes a thread of the checker's own, which also keeps the
// interval, so no snapshot is made in a signal handler. Not signal-safe unless said.
#ifndef STACKWALK_LEAKCHECK_SNAPSHOTS_H_
#define STACKWALK_LEAKCHECK_SNAPSHOTS_H_

#include <cstdint>

#include "leakcheck/state.h"

namespace stackwalk::leakcheck {

// Appends a snapshot to the dump file (the `dump` option) and returns its number (1 for the
// process's first), or STACKWALK_LEAKCHECK_NO_DUMP when no dump file is set. Serialized with the
// reports (ReportLock); call under a ReentryGuard.
int WriteSnapshot(State& state);

// At the process's end, before its exit report: waits for a snapshot being written and lets no
// other start (a snapshot cut by the process's end would leave a cut dump after the report).
// Later WriteSnapshot calls return STACKWALK_LEAKCHECK_NOT_STARTED.
void EndSnapshots();

// Starts the snapshot thread ("stackwalk-snap", every signal blocked, launched again in a forked
// child): a snapshot on each `signo` (0: none) and every `interval_s` seconds (0: none). False if
// neither is asked, no dump file is set, the handler or the thread could not be set up.
bool StartSnapshots(State& state, int signo, int interval_s);
// Registers the snapshots' fork handler, once (StartSnapshots does; see
// InstallPeriodicCheckForkHandlers for why a caller may do it first).
void InstallSnapshotForkHandlers();
// Starts the snapshots the options ask for (snapshot_signal, snapshot_interval), if any; when
// they cannot be taken (no dump file; the report's signal; no thread) says why on stderr and
// takes none. False if asked and not started.
bool StartSnapshotsAsked(State& state);
// Puts the previous handler back and ends the thread (in-process Stop()).
void StopSnapshots();
// The snapshot thread's kernel id while it runs, else 0 (checks.h's CheckerThreadIds).
// Async-signal-safe.
int32_t SnapshotThreadTid();

// The dumps (reports and snapshots) the process wrote to its dump file so far: the first starts
// the file, later ones are appended. Under ReportLock().
int DumpsWritten();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SNAPSHOTS_H_
