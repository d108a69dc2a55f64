// RunCheck: one leak check, the scan's driver. With the report lock, the loader lock (inside a
// dl_iterate_phdr callback: no stopped thread can hold it) and every table lock held — the hooks'
// gate: a thread that was not stopped and allocates or frees waits in Record/Unrecord — it stops
// the world, copies the live table, reads the maps, collects the roots and marks; then it resumes
// the world, lets go of the locks and splits the unreached blocks into direct and indirect leaks.
// The caller's async signals stay blocked throughout (a program's handler could malloc).
#ifndef STACKWALK_LEAKCHECK_SCAN_CHECK_H_
#define STACKWALK_LEAKCHECK_SCAN_CHECK_H_

#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/scan/block_copies.h"
#include "leakcheck/scan/check_entry.h"
#include "leakcheck/scan/roots.h"
#include "leakcheck/scan/stop_world.h"
#include "leakcheck/scan/verdict.h"

namespace stackwalk::leakcheck {

struct State;

struct CheckRequest {
  StopRequest stop = StopRequest::kAuto;
  int stop_timeout_ms = 1000;
  RootOptions roots;
};

struct UnstoppedThread {
  int32_t tid = 0;
  const char* why = "";
};

struct CheckOutcome {
  BlockCopies blocks;              // the live blocks, sorted by address (wiped when freed)
  std::vector<Verdict> verdicts;   // one per block
  StopMethod method = StopMethod::kNone;
  std::string fallback_reason;     // why ptrace was not used ("" if it was, or was not asked for)
  size_t stopped_threads = 0;
  std::vector<UnstoppedThread> unstopped;
  uint64_t root_bytes[kRootKindCount] = {};
  uint64_t pause_ns = 0;           // threads stopped
  uint64_t check_ns = 0;           // the whole check
  bool complete = false;           // false: the scan could not finish; no block is called a leak
  std::string error;               // why, when not complete
};

// Caller: under a ReentryGuard, holding ReportLock() (reports and checks are serialized), with a
// CheckEntry (check_entry.h) at its entry point. False (with out->error) if no check could run;
// out->blocks and verdicts (all kLive) are filled anyway.
bool RunCheck(State& state, const CheckRequest& request, CheckOutcome* out);

// The calling thread is one of the checker's own (the signal reporter, a periodic checker): a
// check run by another thread neither stops it nor reads its stack as a root. Up to 16 at once;
// call Unregister before the thread ends. Async-signal-safe, no malloc.
void RegisterCheckerThread();
void UnregisterCheckerThread();
// In a fork()ed child: the parent's checker threads were not copied.
void ForgetCheckerThreads();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_CHECK_H_
