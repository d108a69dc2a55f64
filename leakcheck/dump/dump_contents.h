// DumpContents: what one leak dump holds, as plain data (docs/dump-format.md): everything a
// report needs except names, which are given later, elsewhere, from the modules' files. The
// program fills it (dump_collect.h) and encodes it (dump_encode.h); stackwalk-report decodes it
// (dump_decode.h) and makes a LeakReport of it (dump_report.h).
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_CONTENTS_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_CONTENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_format.h"
#include "leakcheck/recorded_summary.h"

namespace stackwalk::leakcheck::dump {

struct DumpProcess {
  int32_t pid = 0;
  uint32_t number = 1;         // the process's reports so far, this one included
  bool at_exit = false;
  bool scanned = false;        // a reachability scan ran: verdicts are direct/indirect/reachable
  uint16_t machine = 0;        // ELF e_machine of the program (EM_X86_64, EM_AARCH64, EM_ARM)
  uint64_t unix_time_ns = 0;   // when the report was made
  std::string program;
  std::string occasion;        // "exit", "signal 12", "request", "snapshot 3"
  // A snapshot (1.3): the profile's figures at a moment, not a leak report. Its blocks section
  // is empty (the stack statistics carry each stack's live bytes and blocks) and no scan ran.
  bool snapshot = false;
};

// The summary section: the report's recorded figures, as they are (the report's own type).
using DumpSummary = RecordedSummary;

// The program's options that shape its report (stackwalk-report's defaults).
struct DumpRendering {
  bool json = false;
  bool show_reachable = false;
  std::string libraries;
  std::string ignore_libraries;
  std::string suppressions;  // comma-separated files, as the program was given them
};

struct AddressRange64 {
  uint64_t lo = 0;
  uint64_t hi = 0;  // one past the last byte
};

struct DumpModule {
  std::string path;              // as the program saw it
  std::vector<uint8_t> build_id;  // empty: none known
  uint64_t load_bias = 0;        // runtime address = link-time address + load_bias
  AddressRange64 extent;         // lowest to highest PT_LOAD byte
  std::vector<AddressRange64> exec;  // executable segments
  uint64_t closed_at = 0;        // unloaded (dlclose) at this allocation sequence number; 0: loaded
};

// One frame: module index and link-time address of the return address (the PC minus the module's
// load bias), or kUnknownModule and the PC.
struct DumpFrame {
  uint32_t module = kUnknownModule;
  uint64_t offset = 0;
};

struct DumpStack {
  uint32_t id = 0;               // the stack table's id (blocks refer to it)
  uint64_t earliest = UINT64_MAX;  // sequence number of its earliest live block; UINT64_MAX:
                                   // none live (a stack the profile's statistics name)
  std::vector<DumpFrame> frames;   // the program's frames, innermost first
};

struct DumpBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t sequence = 0;
  uint32_t stack_id = 0;
  int32_t thread = 0;   // ThreadRegistry serial
  uint8_t verdict = 0;  // a Verdict (scan/verdict.h)
};

// A pointer in leaked block `from` to leaked block `to` (indices into blocks).
struct DumpEdge {
  uint32_t from = 0;
  uint32_t to = 0;
};

struct DumpThread {
  uint32_t serial = 0;
  int32_t tid = 0;
  uint64_t peak_bytes = 0;
  std::string name;  // "" when unknown
};

// What one stack did over the run (leakcheck/stack_stats.h), as of the dump.
struct DumpStackStats {
  uint32_t stack_id = 0;
  uint64_t allocations = 0;      // made over the run
  uint64_t allocated_bytes = 0;
  uint64_t live_bytes = 0;       // held at the dump
  uint64_t live_blocks = 0;
  uint64_t temporary = 0;        // freed by their thread before it allocated again
  uint64_t temporary_bytes = 0;
  uint64_t peak_bytes = 0;       // held when the process's live bytes last peaked
  uint64_t peak_blocks = 0;
};

// Every thread that allocated, exited or not: its live bytes at the dump and their peak.
struct DumpThreadTotal {
  uint32_t serial = 0;
  int32_t tid = 0;
  bool exited = false;
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
  std::string name;  // "" when unknown
};

// One point of the timeline (leakcheck/timeline.h).
struct DumpThreadBytes {
  uint32_t serial = 0;
  uint64_t live_bytes = 0;
};
struct DumpTimelinePoint {
  uint64_t time_ns = 0;      // since the timeline's first point (CLOCK_MONOTONIC)
  uint64_t live_bytes = 0;   // the process's
  bool at_peak = false;      // sampled at a new peak
  std::vector<DumpThreadBytes> threads;  // the busiest threads, largest first
};

struct DumpContents {
  uint16_t major = kMajorVersion;  // of the dump read (the writer's own when writing)
  uint16_t minor = kMinorVersion;
  DumpProcess process;
  DumpSummary summary;
  DumpRendering rendering;
  std::vector<DumpModule> modules;
  std::vector<DumpStack> stacks;
  std::vector<DumpBlock> blocks;   // by address
  std::vector<DumpEdge> edges;
  bool has_edges = false;          // the leak edges were recorded (else suppressions cannot spread)
  std::vector<DumpThread> threads;
  // Sampling's mean in bytes (leakcheck/sampler.h), 0 when every allocation was recorded: the
  // blocks are then a sample, and a report of them gives estimates.
  uint64_t sample_bytes = 0;
  // The profile's sections (minor version 2): absent in older dumps.
  bool has_stack_stats = false;
  std::vector<DumpStackStats> stack_stats;  // by stack id; stacks no longer live included
  bool has_thread_totals = false;
  std::vector<DumpThreadTotal> thread_totals;  // by serial
  bool has_timeline = false;
  uint64_t timeline_interval_ns = 0;  // between regular points at the dump (it doubles as it fills)
  std::vector<DumpTimelinePoint> timeline;  // in time order
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_CONTENTS_H_
