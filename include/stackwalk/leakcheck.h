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
// Thread safety: all functions are thread-safe. Signal safety: none is async-signal-safe (use
// the report_signal option to report on a signal).
#ifndef STACKWALK_LEAKCHECK_H_
#define STACKWALK_LEAKCHECK_H_

#include <stdint.h>

#define STACKWALK_LEAKCHECK_API __attribute__((visibility("default")))

#define STACKWALK_LEAKCHECK_OK 0
#define STACKWALK_LEAKCHECK_BAD_OPTIONS (-1)
#define STACKWALK_LEAKCHECK_ALREADY_STARTED (-2)
#define STACKWALK_LEAKCHECK_NOT_STARTED (-3)
#define STACKWALK_LEAKCHECK_PRELOADED (-4)
#define STACKWALK_LEAKCHECK_NOTHING_HOOKED (-5)

#ifdef __cplusplus
extern "C" {
#endif

// Starts checking. `options` has the syntax of STACKWALK_LEAKCHECK ("key=value:key=value";
// may be null; a ':' or '\' in a value escaped with '\'): libraries, ignore_libraries,
// min_size, max_frames, method, output, format, report_at_exit, report_signal, exitcode,
// follow_exec, unreachable_only. Forgets what an earlier Start()..Stop() recorded. Returns
// STACKWALK_LEAKCHECK_OK, _BAD_OPTIONS (the text does not parse), _ALREADY_STARTED, _PRELOADED
// or _NOTHING_HOOKED (no loaded object matches `libraries`; nothing stays hooked).
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_start(const char* options);
// Writes a report of the allocations live now (made since Start()) to the configured output;
// stores the totals reported (after the library filters; with unreachable_only, of the
// unreachable blocks only) if the pointers are not null. Returns STACKWALK_LEAKCHECK_OK, or
// _NOT_STARTED before Start() or after Stop().
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_report(uint64_t* bytes, uint64_t* allocations);
// Restores every GOT slot and stops recording. Returns STACKWALK_LEAKCHECK_OK, _NOT_STARTED or
// _PRELOADED.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_stop(void);
// 1 if the preloaded checker runs in this process.
STACKWALK_LEAKCHECK_API int stackwalk_leakcheck_preloaded(void);

#ifdef __cplusplus
}  // extern "C"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stackwalk/capture.h"

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

}  // namespace stackwalk::leakcheck
#endif  // __cplusplus

#endif  // STACKWALK_LEAKCHECK_H_
