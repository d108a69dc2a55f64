// Options: the leak checker's settings, each defined once in kOptionSpecs: its key in the text
// form STACKWALK_LEAKCHECK="key=value:key=value" (what the launcher hands the preloaded library,
// and what stackwalk_leakcheck_start() takes), its launcher option (--long-name, -x), its type,
// the check and store of a value, and its help; its default is the Options member's initializer.
// The text form (ParseOptions), the launcher's command line (tools/stackwalk_leakcheck.cc) and the
// in-process C++ Start() (inprocess.cc) all set options through that table.
// A value containing ':' or '\' escapes it with '\' in the text form. For example
//   STACKWALK_LEAKCHECK=min_size=16:max_frames=32:method=fp:output=/tmp/leaks.txt:exitcode=23
#ifndef STACKWALK_LEAKCHECK_OPTIONS_H_
#define STACKWALK_LEAKCHECK_OPTIONS_H_

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck {

struct Options {
  uint64_t min_size = 0;  // smaller allocations are not recorded
  // Sampling (sampler.h): 0 records every allocation; N > 0 records a Poisson sample by bytes of
  // mean N (blocks of N bytes or more always) and reports estimates.
  uint64_t sample_bytes = 0;
  uint64_t sample_seed = 0;  // 0: a seed from the clock; else the same sample points every run
  int max_frames = 32;    // frames kept per allocation (at most StackTable::kMaxFrames)
  int method = 0;         // a stackwalk_method: auto (0), fp (1), ehframe (2)
  char output[256] = {};  // the report's file; stderr when empty
  char dump[256] = {};    // the raw dump's file (leakcheck/dump/); none when empty
  bool program_report = true;  // false: with a dump, the program writes the dump alone
  int exitcode = 0;       // if nonzero, the process exits with it when leaks are found, or may
                          // have been: none found but some untracked (leakcheck/exitcode.h)
  bool report_at_exit = true;
  // Writes the exit report to stderr also when it is clean (IsClean, report.cc) in a process
  // preloaded by hand or started below the launcher's program (State::quiet_clean_exit); a
  // report to a file or a dump is always written.
  bool report_clean = false;
  bool json = false;      // format=json: the report as one JSON object
  int report_signal = 0;  // if nonzero, each delivery of this signal writes a report
  bool follow_exec = false;  // keep the preload for programs this one executes
  // Accepted and ignored: leaks only (what it used to ask for) is the default. ParseOptions notes
  // that on stderr.
  bool unreachable_only = false;
  bool show_reachable = false;     // list the reachable blocks too (always counted in the summary)
  char suppressions[1024] = {};    // comma-separated suppressions files; each setting adds one
  bool anonymous_roots = true;     // writable anonymous mappings are roots (valgrind's rule)
  int stop_method = 0;             // how the world is stopped: auto (0), ptrace (1), signal (2)
  int stop_timeout_ms = 1000;      // how long the signal method waits for each thread to park
  int stop_signal = 0;             // the signal method's signal; 0: SIGRTMIN+5
  int check_interval = 0;  // seconds between checks by a thread of the checker's own; 0: none
  // Snapshots to the dump file (snapshots.h): on each delivery of this signal, and every this
  // many seconds; 0: none.
  int snapshot_signal = 0;
  int snapshot_interval = 0;
  int timeline_interval_ms = 100;  // live bytes sampled this often for the dump's timeline; 0: none
  char libraries[512] = {};         // comma-separated globs; empty: every object
  char ignore_libraries[512] = {};  // comma-separated globs
};

// What kind of value an option takes (the help and the launcher's getopt table follow it).
enum class OptionType {
  kFlag,     // no value on the command line (there it means "1"); 0 or 1 in the text form
  kBool,     // 0 or 1
  kNumber,   // a decimal number, within the option's bounds
  kChoice,   // one of the words its help names
  kText,     // a path or a list of globs, up to the size of its field
  kSignal,   // a catchable signal that is not a fault's, by number or name
};

// One option, defined once: its key in the text form, its launcher forms, its type, how a value
// is checked and stored, how it is shown, and its help. Its default is the Options member's
// initializer above (what `show` gives for a fresh Options); the help does not repeat it.
struct OptionSpec {
  const char* key;         // in the text form
  const char* long_name;   // the launcher's --long-name; null if only in the text form
  char short_name;         // the launcher's -x, or 0
  const char* value_name;  // in the help ("N", "FILE"); null for a kFlag
  OptionType type;
  // Checks `value` (len bytes, unescaped) and stores it; false, changing nothing, if refused.
  // Async-signal-safe.
  bool (*set)(Options* options, const char* value, size_t len);
  // Writes the option's value in the text form (unescaped) into out[size], NUL-terminated.
  void (*show)(const Options& options, char* out, size_t size);
  const char* help;
};
extern const OptionSpec kOptionSpecs[];
extern const int kOptionSpecCount;

// The option whose key is `key` (key_len bytes), or null.
const OptionSpec* FindOption(const char* key, size_t key_len);

// Sets the option `key` (key_len bytes) from its unescaped value. Returns false, changing
// nothing, if the key is unknown or the value is not one it takes.
// Signal safety: async-signal-safe (no allocation).
bool SetOption(Options* options, const char* key, size_t key_len, const char* value,
               size_t value_len);

// Writes `key=value` to out[size] with ':' and '\' of the value escaped: one item of the text
// form, which ParseOptions reads back. Returns the length it needs (not counting the NUL); the
// output is cut (and NUL-terminated) if that is not below `size`. Async-signal-safe.
size_t FormatOption(const char* key, const char* value, char* out, size_t size);

// Whether `path` (an object's path) matches one of the comma-separated globs of `patterns`, by
// its whole path or its file name.
bool MatchesAnyPattern(const char* patterns, const char* path);

// Parses the text form (may be null). Unknown keys and bad values are reported on stderr, counted
// in `*problems` if given, and ignored.
// Signal safety: async-signal-safe (no allocation), for use before malloc is ready.
Options ParseOptions(const char* text, int* problems = nullptr);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_OPTIONS_H_
