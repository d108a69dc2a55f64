// Checks in a running process (issue 16, item 6; KOOM's model): a check scans for leaks and
// returns, as records, the leaked blocks no earlier check returned (each block's kReportedBit,
// allocation_table.h, set once a check returned it); listeners are called after each check; the
// check_interval option runs checks from a thread of the checker's own, each appended to the
// output as a report of its own. What the preloaded and the in-process library share behind the
// C functions of stackwalk/leakcheck.h.
// Not signal-safe: allocates, takes locks.
#ifndef STACKWALK_LEAKCHECK_CHECKS_H_
#define STACKWALK_LEAKCHECK_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/scan/block_copies.h"
#include "leakcheck/scan/verdict.h"
#include "leakcheck/state.h"
#include "stackwalk/leakcheck.h"

namespace stackwalk::leakcheck {

// What a check asks of BuildReport (report.cc) beyond a report: a scan whatever the options say,
// only the blocks no earlier check returned, and the leaked blocks it found (to be flagged once
// the check knows which records it returned).
struct CheckScope {
  BlockCopies leaks;  // out: the leaked blocks listed (sequence flags cleared)
};

// BuildReport's select step, after the classify stage: leaves out of `blocks` (and `*verdicts`,
// index for index) the blocks marked ignored (kIgnoredBit: never reported) and, with a scope,
// the blocks an earlier check returned; adds the leaked blocks kept to scope->leaks; clears the
// flag bits of the copies kept (later stages order blocks by sequence number). Returns how many
// blocks are kept, at the front of `blocks`.
size_t SelectBlocks(Allocation* blocks, size_t n, std::vector<Verdict>* verdicts, CheckScope* scope);

// One check's result.
struct CheckRun {
  std::vector<stackwalk_leak_record> records;  // largest first
  stackwalk_leak_summary summary = {};
};

// Runs a check: under ReportLock() and a ReentryGuard, the report model of the blocks no earlier
// check returned (BuildReport), its leaks as records; the blocks of the first `deliver` records
// are flagged as returned. With `append_report`, the check is also rendered and appended to the
// output ("check N: leaks found since check N-1"). Does not call the listeners (CallListeners,
// after).
void RunLeakCheck(State& state, size_t deliver, bool append_report, CheckRun* out);

// The C functions' bodies (both libraries export them; the in-process one first checks it is
// started).
int CheckInto(State& state, stackwalk_leak_record* out, size_t capacity, size_t* count,
              stackwalk_leak_summary* summary);
int CheckEach(State& state, void (*each)(const stackwalk_leak_record*, void*), void* arg,
              stackwalk_leak_summary* summary);
int IgnoreBlock(State& state, const void* block);

// The listeners (a fixed table of 16, shared by both C entry points).
int AddListener(stackwalk_leak_listener listener, void* arg);
int RemoveListener(int id);
// Calls every listener with `run`, on the calling thread, with no checker lock held.
void CallListeners(const CheckRun& run);

// A thread of the checker's own that runs a check every `seconds` (as RunLeakCheck with
// append_report, then the listeners): all signals blocked, under a ReentryGuard, launched again
// in a forked child. False if it could not be started (or already runs).
bool StartPeriodicChecks(State& state, int seconds);
// Registers the periodic checks' fork handlers, once (StartPeriodicChecks does). A caller holding
// a lock another fork handler waits for registers them before taking it: pthread_atfork waits
// for a fork that is running its handlers.
void InstallPeriodicCheckForkHandlers();
// Ends the thread (in-process Stop()); waits for a check it is running.
void StopPeriodicChecks();

// The kernel thread ids of the checker's own threads running now in this process: the periodic
// checker, the signal reporter (session.h) and the snapshot thread (snapshots.h). The
// stop-the-world leaves them running. Writes at most `capacity` and returns how many there are.
// Async-signal-safe (atomic loads).
size_t CheckerThreadIds(int32_t* out, size_t capacity);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_CHECKS_H_
