// RecordedSummary: the figures a report's header gives about the program's tables and how its
// world was stopped: what the program records and a leak dump carries as they are. One struct
// for both, so the report's summary (report_model.h, ReportSummary) and the dump's
// (dump/dump_contents.h, DumpSummary) cannot drift apart; plain data.
#ifndef STACKWALK_LEAKCHECK_RECORDED_SUMMARY_H_
#define STACKWALK_LEAKCHECK_RECORDED_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck {

// A thread the check could not stop (its stack was read while it ran).
struct UnstoppedEntry {
  int tid = 0;
  std::string why;  // "signal blocked", "timeout", ...
};

struct RecordedSummary {
  uint64_t peak_bytes = 0;         // the process's recorded live bytes at their peak
  uint64_t live_allocations = 0;   // live in the table when the report was made
  uint32_t distinct_stacks = 0;    // every stack the table ever interned
  uint64_t table_bytes = 0;        // the checker's own memory: the allocation table
  uint64_t stack_bytes = 0;        // and the stack table
  // How the world was stopped for the scan: "ptrace", "signal" or "none" (nothing stopped).
  std::string method = "none";
  std::string fallback_reason;     // why ptrace was not used, when it was asked for or auto
  uint64_t stopped_threads = 0;
  uint64_t pause_ns = 0;           // threads stopped
  uint64_t check_ns = 0;           // the whole check
  std::vector<UnstoppedEntry> unstopped;
  // Allocations the checker could not record (untracked.h): in no other figure of the report.
  UntrackedCounts untracked;
  uint64_t own_bytes() const { return table_bytes + stack_bytes; }
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_RECORDED_SUMMARY_H_
