// leakcheck.h — the leak checker in-process: hooks the allocation functions of chosen libraries
// by rewriting their GOT slots (no LD_PRELOAD), records live allocations with their stacks, and
// reports the ones still live. Link stackwalk::leakcheck_inprocess.
//
// Example:
//
//   stackwalk::leakcheck::LeakCheckOptions options;
//   options.libraries = {"libplugin*.so"};   // only these objects' allocations
//   options.report_at_exit = false;
//   if (absl::Status s = stackwalk::leakcheck::Start(options); !s.ok()) { ... }
//   RunPlugin();
//   auto totals = stackwalk::leakcheck::Report();   // writes the report, returns the totals
//   stackwalk::leakcheck::Stop();                   // every GOT slot as it was
//
// What it hooks: malloc, calloc, realloc, reallocarray, free, cfree, memalign, posix_memalign,
// aligned_alloc, valloc, pvalloc and every operator new/delete form, through the JUMP_SLOT and
// GLOB_DAT relocations of each matching object (the main program included), plus dlopen (so
// matching libraries loaded later are hooked too; their constructors' allocations are not seen)
// and dlclose (so leaks of unloaded libraries are still named). Blocks freed that it never saw
// pass through untouched. The C library, the dynamic loader, the vDSO and stackwalk's own
// libraries are never hooked.
//
// Under LD_PRELOAD=libstackwalk_leakcheck.so (stackwalk-leakcheck) every object is hooked
// already: Start() and Stop() return STACKWALK_LEAKCHECK_PRELOADED, Report() works and reports
// every allocation live in the process.
//
// Checks in a running process: stackwalk_leakcheck_check() / CheckLeaks() return the leaks found
// since the previous check as records (each leaked block is returned by one check only), the
// check_interval option runs such checks from a thread of the checker's own and appends each to
// the output, and listeners are called after every check. Both libraries export the C functions;
// the C++ functions call them, so a program linked with the in-process library reaches the
// preloaded checker when it runs under it.
//
//   auto check = stackwalk::leakcheck::CheckLeaks({.name_frames = true});
//   if (check.ok()) {
//     for (const auto& leak : check->leaks) Log(leak.bytes, leak.allocations, leak.frames);
//   }
//
// Thread safety: all functions are thread-safe. Signal safety: none is async-signal-safe (use
// the report_signal option to report on a signal).
#ifndef STACKWALK_LEAKCHECK_H_
#define STACKWALK_LEAKCHECK_H_

#include <stddef.h>
#include <stdint.h>

#define STACKWALK_LEAKCHECK_API __attribute__((visibility("default")))

#define STACKWALK_LEAKCHECK_OK 0
#define STACKWALK_LEAKCHECK_BAD_OPTIONS (-1)
#define STACKWALK_LEAKCHECK_ALREADY_STARTED (-2)
#define STACKWALK_LEAKCHECK_NOT_STARTED (-3)
#define STACKWALK_LEAKCHECK_PRELOADED (-4)
#define STACKWALK_LEAKCHECK_NOTHING_HOOKED (-5)
#define STACKWALK_LEAKCHECK_TRUNCATED (-6)      // more records than the buffer holds
#define STACKWALK_LEAKCHECK_NOT_A_BLOCK (-7)    // not the start of a live recorded block
#define STACKWALK_LEAKCHECK_TOO_MANY_LISTENERS (-8)
#define STACKWALK_LEAKCHECK_NO_SUCH_LISTENER (-9)
#define STACKWALK_LEAKCHECK_NO_DUMP (-10)       // no dump file (the dump option) to write to

// stackwalk_leak_record.kind
#define STACKWALK_LEAK_DIRECT 0     // nothing reachable or leaked points to it
#define STACKWALK_LEAK_INDIRECT 1   // only leaked blocks point to it
#define STACKWALK_LEAK_REACHABLE 2
#define STACKWALK_LEAK_MAX_PCS 64

#ifdef __cplusplus
extern "C" {
#endif

// One record of a check: the blocks of one kind, allocated from one stack, that the check found
// and no earlier check returned.
struct stackwalk_leak_record {
  int kind;                     // STACKWALK_LEAK_DIRECT, _INDIRECT or _REACHABLE
  uint64_t bytes;               // the blocks' bytes
  uint64_t allocations;         // and their number
  uint64_t first_seen_check;    // the check that first found a leak of this kind from this stack
  uint64_t first_seen_unix_ns;  // and when (CLOCK_REALTIME)
  int32_t tid;                  // the thread that made the earliest block (0: unknown)
  char thread[16];              // its name ("?" when unknown), NUL-terminated
  uint32_t pc_count;
  uintptr_t pcs[STACKWALK_LEAK_MAX_PCS];  // the allocating stack, innermost first (the
                                          // program's call of the allocator first)
};

// A check's totals. direct_* and indirect_* count the check's records (the leaks new since the
// previous check); reachable_* every block reachable now. untracked_* count the allocations the
// checker could not record (docs/leakcheck.md, "Untracked allocations"), the JSON report's
// summary.untracked: since the process started recording, not since the previous check; they
// are in no other figure, so a check with no leaks but untracked allocations proves nothing
// about those. New fields are only ever appended.
struct stackwalk_leak_summary {
  uint64_t check;  // this check's number: 1 for the process's first
  uint64_t direct_bytes, direct_allocations;
  uint64_t indirect_bytes, indirect_allocations;
  uint64_t reachable_bytes, reachable_allocations;
  uint64_t suppressed_bytes;
  uint64_t pause_ns;  // how long other threads were stopped (0: not stopped)
  uint64_t check_ns;  // the whole check
  int method;         // how they were stopped: 0 not at all, 1 ptrace, 2 a signal
  int unstopped;      // threads that could not be stopped
  uint64_t untracked_allocations;  // untracked_refused + untracked_no_memory
  uint64_t untracked_bytes;        // their bytes, as the program asked for them
  uint64_t untracked_refused;      // a slot cannot hold them: an address above 2^48 or not
                                   // 8-byte aligned (tagged heap pointers), 1 TiB or more
  uint64_t untracked_no_memory;    // no memory for the checker's tables
};

// Called after each check (stackwalk_leakcheck_check, CheckLeaks() or a periodic check), on the
// thread that ran it, outside every lock of the checker: every record the check found, largest
// first. The pointers live until it returns. It may call the checker's functions.
typedef void (*stackwalk_leak_listener)(const struct stackwalk_leak_record* records, size_t count,
                                        const struct stackwalk_leak_summary* summary, void* arg);

// Starts checking. `options` has the syntax of STACKWALK_LEAKCHECK ("key=value:key=value";
// may be null; a ':' or '\' in a value escaped with '\'): libraries, ignore_libraries,
// min_size, max_frames, method, output, format, report_at_exit, report_signal, exitcode,
// follow_exec, unreachable_only, check_interval, dump, snapshot_signal, snapshot_interval (the
// snapshots need dump; without it they are not taken, said on stderr). Forgets what an earlier Start()..Stop() recorded. Returns
// STACKWALK_LEAKCHECK_OK, _BAD_OPTIONS (the text does not parse), _ALREADY_STARTED, _PRELOADED
// or _NOTHING_HOOKED (no loaded object matches `libraries`; nothing stays hooked).
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_start(const char* options);
// Writes a report of the allocations live now (made since Start()) to the configured output;
// stores the totals reported (after the library filters; with unreachable_only, of the
// unreachable blocks only) if the pointers are not null. Returns STACKWALK_LEAKCHECK_OK, or
// _NOT_STARTED before Start() or after Stop().
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_report(uint64_t* bytes, uint64_t* allocations);
// Appends a snapshot of the memory profile to the dump file (the `dump` option): a dump whose
// occasion is "snapshot N" with each stack's live bytes and blocks and allocations so far, the
// threads' totals and the timeline; no scan, no leak report (stackwalk-report --diff compares
// two). Returns its number N (1 for the process's first), or STACKWALK_LEAKCHECK_NO_DUMP (no
// dump file set) or _NOT_STARTED. Not async-signal-safe (the snapshot_signal option takes one
// on a signal).
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_snapshot(void);
// Restores every GOT slot and stops recording. Returns STACKWALK_LEAKCHECK_OK, _NOT_STARTED or
// _PRELOADED.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_stop(void);
// 1 if the preloaded checker runs in this process.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_preloaded(void);

// Checks for leaks now: scans memory from the roots and writes to out[0..capacity) a record per
// stack and kind of the leaked blocks no earlier check returned, largest first (out may be null
// if capacity is 0); *count (if not null) gets the number of records found. If they do not all
// fit, the first `capacity` are written and the rest are not taken as returned: the next check
// returns them again. `summary` (may be null) gets the totals. Returns STACKWALK_LEAKCHECK_OK,
// _TRUNCATED (*count says how many records the check found), or _NOT_STARTED (in-process, before
// Start() or after Stop(), without the preloaded checker). The library filters apply.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_check(struct stackwalk_leak_record* out,
                                                      size_t capacity, size_t* count,
                                                      struct stackwalk_leak_summary* summary);
// Marks the block that starts at `block` (what malloc or new returned) as an intended leak, like
// LeakSanitizer's __lsan_ignore_object: it is never reported, and what it points to counts as
// reachable. Unlike LeakSanitizer, a pointer inside a block is refused. Returns
// STACKWALK_LEAKCHECK_OK, _NOT_A_BLOCK (not the start of a live block the checker recorded: freed,
// made before it started, or by an object it does not hook) or _NOT_STARTED.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_ignore_object(const void* block);
// Adds a listener, called with `arg` after each check; returns its id (> 0), or
// STACKWALK_LEAKCHECK_TOO_MANY_LISTENERS (16 at once).
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_add_listener(stackwalk_leak_listener listener,
                                                             void* arg);
// Removes a listener. When it returns the listener is not running and is not called again (but
// when called from a listener, a call running on another thread may still be finishing).
// Returns STACKWALK_LEAKCHECK_OK or _NO_SUCH_LISTENER.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_remove_listener(int id);
// Calls `each` with every record of a check, then fills `summary` (may be null): the form of
// stackwalk_leakcheck_check() without a buffer (every record is taken as returned). Returns
// STACKWALK_LEAKCHECK_OK or _NOT_STARTED.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_check_each(
    void (*each)(const struct stackwalk_leak_record* record, void* arg), void* arg,
    struct stackwalk_leak_summary* summary);

#ifdef __cplusplus
}  // extern "C"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stackwalk/capture.h"
#include "stackwalk/symbolizer.h"

namespace stackwalk::leakcheck {

struct LeakCheckOptions {
  // Globs matched against an object's path or file name. `libraries` empty: every object.
  std::vector<std::string> libraries;
  std::vector<std::string> ignore_libraries;
  uint64_t min_size = 0;         // smaller allocations are not recorded
  int max_frames = 32;           // 1..64
  Method method = Method::kAuto; // kAuto, kFramePointer or kEhFrame
  std::string output;            // report file ("%p" becomes the pid); stderr when empty
  bool json = false;
  bool report_at_exit = true;
  int report_signal = 0;         // e.g. SIGUSR2: a report on each delivery
  // Scan memory for pointers and report only blocks nothing reachable points to (best effort:
  // other threads keep running; see leakcheck/reachability.h).
  bool unreachable_only = false;
  int check_interval = 0;        // seconds between periodic checks (0: none), 0..86400
  std::string dump;              // the raw dump's file ("%p" becomes the pid); none when empty
  int snapshot_signal = 0;       // e.g. SIGUSR1: a snapshot to `dump` on each delivery
  int snapshot_interval = 0;     // seconds between snapshots to `dump` (0: none), 0..86400
};

struct LeakTotals {
  uint64_t bytes = 0;
  uint64_t allocations = 0;
};

// Start(), Report(), Stop(): the C functions above with typed options and statuses: bad
// options give InvalidArgument (a library pattern empty or holding ',', max_frames outside
// 1..64, another method, a report_signal that cannot be caught or is a fault's); already
// started, not started and preloaded give FailedPrecondition; nothing hooked gives NotFound.
STACKWALK_LEAKCHECK_API absl::Status Start(const LeakCheckOptions& options);
STACKWALK_LEAKCHECK_API absl::StatusOr<LeakTotals> Report();
STACKWALK_LEAKCHECK_API absl::Status Stop();
// stackwalk_leakcheck_snapshot(): the snapshot's number; FailedPrecondition without a dump file
// or a checker.
STACKWALK_LEAKCHECK_API absl::StatusOr<int> Snapshot();

enum class LeakKind { kDirect, kIndirect, kReachable };

// stackwalk_leak_record, with the frames named on request.
struct LeakRecord {
  LeakKind kind = LeakKind::kDirect;
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  std::vector<uintptr_t> pcs;
  std::vector<SymbolizedFrame> frames;  // empty unless CheckOptions::name_frames
  int tid = 0;
  std::string thread;
  uint64_t first_seen_check = 0;
  std::chrono::system_clock::time_point first_seen;
};

struct CheckOptions {
  bool name_frames = false;  // name each record's PCs (loads the symbolizer: slower)
};

struct LeakCheck {
  std::vector<LeakRecord> leaks;  // largest first
  stackwalk_leak_summary summary = {};
};

// CheckLeaks(): stackwalk_leakcheck_check() with every record. FailedPrecondition if no checker
// runs (in-process, not started, and not preloaded). Not async-signal-safe (allocates).
STACKWALK_LEAKCHECK_API absl::StatusOr<LeakCheck> CheckLeaks(const CheckOptions& options = {});
// IgnoreObject(): stackwalk_leakcheck_ignore_object(); InvalidArgument for an address that is
// not a live recorded block's start, FailedPrecondition if no checker runs.
STACKWALK_LEAKCHECK_API absl::Status IgnoreObject(const void* block);
// AddLeakListener(): `listener` is called after each check with its records (frames not named),
// on the thread that ran the check, outside the checker's locks. Returns its id (> 0), or a
// negative STACKWALK_LEAKCHECK_ status. RemoveLeakListener(): as stackwalk_leakcheck_remove_listener.
STACKWALK_LEAKCHECK_API int AddLeakListener(std::function<void(const LeakCheck&)> listener);
STACKWALK_LEAKCHECK_API void RemoveLeakListener(int id);

}  // namespace stackwalk::leakcheck
#endif  // __cplusplus

#endif  // STACKWALK_LEAKCHECK_H_
