// LeakReport: what a leak report says, as plain data handed from stage to stage. The stages, in
// the order report.cc's WriteReport runs them (the thread labels of the collect stage are read
// last, once the entries are known):
//   collect   (report_collect.h)  a copy of the live table, each stack's program frames; the
//                                  process's header figures and thread labels
//   classify  (report_classify.h) a verdict per block: the reachability scan
//   name      (report_name.h)     each stack's program frames, named
//   suppress  (report_suppress.h) leaks whose stack matches a suppression, and the blocks they
//                                  alone hold, taken out of the leaks and counted per rule
//   group     (report_group.h)    blocks grouped by stack and verdict, tallied per thread;
//             then filtered (the exit's own blocks, reachable ones unless shown, the library
//             filters) and ordered
//   render    (report_render_text.h, report_render_json.h)  the model as text or JSON
//   output    (report_destination.h)  the file or stderr
// A renderer reads only this model: every figure it prints is here, computed once. Entries keep
// their PCs beside the names, so a renderer that writes raw records to be named elsewhere can
// run without the name stage; finer verdicts add Verdict values, other views add renderers.
#ifndef STACKWALK_LEAKCHECK_REPORT_MODEL_H_
#define STACKWALK_LEAKCHECK_REPORT_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/recorded_summary.h"
#include "leakcheck/scan/verdict.h"
#include "stackwalk/symbolizer.h"  // SymbolizedFrame only

namespace stackwalk::leakcheck {


// One allocation stack as the report shows it: the program's frames (the checker's own hook
// frames left out), innermost first, and their names (empty until the name stage ran).
struct NamedStack {
  uint64_t earliest = UINT64_MAX;  // sequence number of its earliest live block (none: UINT64_MAX)
  std::vector<uintptr_t> pcs;
  std::vector<SymbolizedFrame> frames;
};

// The blocks of one stack with one verdict: kDirect, kIndirect or kReachable after a scan; kLive
// only when no scan could run.
struct ReportEntry {
  uint32_t stack_id = 0;
  Verdict verdict = Verdict::kLive;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t first_sequence = UINT64_MAX;  // of the earliest block
  uint32_t thread = 0;                   // serial of the thread of the earliest block
  std::string thread_name = "?";         // that thread's name and kernel id, when known
  int tid = 0;
  std::vector<uintptr_t> pcs;            // as NamedStack
  std::vector<SymbolizedFrame> frames;
};

// The live blocks a thread allocated (all verdicts; the exit's own blocks left out).
struct ThreadEntry {
  uint32_t serial = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  std::string name = "?";
  int tid = 0;
  uint64_t peak_bytes = 0;  // the most the thread's allocations held live at once
};

// A suppression that suppressed something: its blocks and their bytes.
struct SuppressionEntry {
  std::string pattern;
  uint64_t count = 0;
  uint64_t bytes = 0;
  bool builtin = false;
};

// The recorded figures (recorded_summary.h: what a leak dump carries as they are), and the
// report's own tallies.
struct ReportSummary : RecordedSummary {
  // The leaks shown (after the library filters): direct + indirect, or every kLive block when no
  // scan could run. Reachable entries, even when shown, are not counted here.
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  uint64_t direct_bytes = 0;
  uint64_t direct_allocations = 0;
  uint64_t indirect_bytes = 0;
  uint64_t indirect_allocations = 0;
  bool scanned = false;      // a reachability scan ran: the per-kind totals mean something
  uint64_t reachable_bytes = 0;      // every reachable block, shown or not
  uint64_t reachable_allocations = 0;
  uint64_t suppressed_bytes = 0;     // the leaks suppressions took out (report.suppressions)
  uint64_t suppressed_allocations = 0;
};

struct LeakReport {
  std::string occasion;   // "exit", "signal 12", "request"
  bool at_exit = false;
  int number = 1;         // the process's reports so far, this one included
  int pid = 0;
  std::string program = "?";
  std::string naming_error;         // why frames are not named (empty when they are)
  std::string suppressions_error;   // why the suppressions files were not applied (empty: they were)
  bool show_reachable = false;      // reachable entries are listed (entries with kReachable)
  // Sampling's mean in bytes (sampler.h), 0 if every allocation was recorded. When sampled, every
  // byte and allocation figure of entries, threads, suppressions and the summary is an estimate
  // (the sum of the recorded blocks' weights), and so are peak_bytes and the threads' peaks.
  uint64_t sample_bytes = 0;
  ReportSummary summary;
  std::vector<ThreadEntry> threads;  // largest live bytes first
  std::vector<ReportEntry> entries;  // the entries shown, leaks first, largest first
  std::vector<SuppressionEntry> suppressions;  // the rules that suppressed something, in order
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_MODEL_H_
