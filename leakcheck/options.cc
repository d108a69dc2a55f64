#include "leakcheck/options.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "leakcheck/sampler.h"

namespace stackwalk::leakcheck {
namespace {

void Complain(const char* what, const char* key, size_t key_len) {
  const char prefix[] = "stackwalk-leakcheck: ";
  ssize_t ignored = write(2, prefix, sizeof(prefix) - 1);
  ignored = write(2, what, strlen(what));
  ignored = write(2, key, key_len);
  ignored = write(2, "\n", 1);
  (void)ignored;
}

bool ParseInt(const char* value, size_t len, long long* out) {
  if (len == 0 || len > 18) return false;
  long long v = 0;
  for (size_t i = 0; i < len; ++i) {
    if (value[i] < '0' || value[i] > '9') return false;
    v = v * 10 + (value[i] - '0');
  }
  *out = v;
  return true;
}

bool CopyValue(const char* value, size_t len, char* out, size_t size) {
  if (len >= size) return false;
  memcpy(out, value, len);
  out[len] = '\0';
  return true;
}

// A signal by number or name ("SIGUSR2", "USR2").
bool ParseSignal(const char* value, size_t len, int* out) {
  long long n = 0;
  if (ParseInt(value, len, &n)) {
    // Not a signal the kernel raises for a fault (its handler only wakes the reporter, so the
    // faulting instruction would run again forever), nor one that cannot be caught.
    const bool usable = n > 0 && n < NSIG && n != SIGSEGV && n != SIGBUS && n != SIGILL &&
                        n != SIGFPE && n != SIGTRAP && n != SIGKILL && n != SIGSTOP;
    if (usable) *out = static_cast<int>(n);
    return usable;
  }
  if (len > 3 && strncmp(value, "SIG", 3) == 0) {
    value += 3;
    len -= 3;
  }
  static const struct {
    const char* name;
    int signo;
  } kNames[] = {{"HUP", SIGHUP}, {"INT", SIGINT}, {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
                {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
                {"CHLD", SIGCHLD}, {"CONT", SIGCONT}, {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
                {"TTOU", SIGTTOU}, {"URG", SIGURG}, {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
                {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"SYS", SIGSYS}};
  for (const auto& entry : kNames) {
    if (len == strlen(entry.name) && strncmp(value, entry.name, len) == 0) {
      *out = entry.signo;
      return true;
    }
  }
  return false;
}

}  // namespace

bool MatchesAnyPattern(const char* patterns, const char* path) {
  if (patterns == nullptr || path == nullptr) return false;
  const char* slash = strrchr(path, '/');
  const char* name = slash != nullptr ? slash + 1 : path;
  char glob[512];
  for (const char* p = patterns; *p != '\0';) {
    const char* end = strchr(p, ',');
    size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    if (len > 0 && len < sizeof(glob)) {
      memcpy(glob, p, len);
      glob[len] = '\0';
      if (fnmatch(glob, path, 0) == 0 || fnmatch(glob, name, 0) == 0) return true;
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  return false;
}

namespace {

// The setters and showers of the table, by the type of their field.

bool Equals(const char* value, size_t len, const char* word) {
  return len == strlen(word) && strncmp(value, word, len) == 0;
}

void ShowText(const char* text, char* out, size_t size) {
  if (size == 0) return;
  size_t len = strlen(text);
  if (len >= size) len = size - 1;
  memcpy(out, text, len);
  out[len] = '\0';
}

void ShowNumber(uint64_t n, char* out, size_t size) {
  char digits[24];
  size_t len = 0;
  do {
    digits[len++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  char text[24];
  for (size_t i = 0; i < len; ++i) text[i] = digits[len - 1 - i];
  text[len] = '\0';
  ShowText(text, out, size);
}

template <class T, T Options::*field, long long low, long long high>
bool SetNumber(Options* o, const char* value, size_t len) {
  long long n = 0;
  if (!ParseInt(value, len, &n) || n < low || n > high) return false;
  o->*field = static_cast<T>(n);
  return true;
}
template <class T, T Options::*field>
void ShowNumberField(const Options& o, char* out, size_t size) {
  ShowNumber(static_cast<uint64_t>(o.*field), out, size);
}

template <bool Options::*field>
bool SetBool(Options* o, const char* value, size_t len) {
  if (!Equals(value, len, "0") && !Equals(value, len, "1")) return false;
  o->*field = value[0] == '1';
  return true;
}
template <bool Options::*field>
void ShowBool(const Options& o, char* out, size_t size) {
  ShowText(o.*field ? "1" : "0", out, size);
}

template <size_t N, char (Options::*field)[N]>
bool SetText(Options* o, const char* value, size_t len) {
  return CopyValue(value, len, o->*field, N);
}
template <size_t N, char (Options::*field)[N]>
void ShowTextField(const Options& o, char* out, size_t size) {
  ShowText(o.*field, out, size);
}

// An option that takes one of `words` (index for index the field's value).
template <int Options::*field, const char* const* words, int count>
bool SetChoice(Options* o, const char* value, size_t len) {
  for (int i = 0; i < count; ++i) {
    if (Equals(value, len, words[i])) {
      o->*field = i;
      return true;
    }
  }
  return false;
}
template <int Options::*field, const char* const* words, int count>
void ShowChoice(const Options& o, char* out, size_t size) {
  ShowText(o.*field >= 0 && o.*field < count ? words[o.*field] : "?", out, size);
}

// The words of `method`, index for index its stackwalk_method value.
constexpr const char* kMethods[] = {"auto", "fp", "ehframe"};
// The words of `stop_method`, index for index its value.
constexpr const char* kStopMethods[] = {"auto", "ptrace", "signal"};

bool SetFormat(Options* o, const char* value, size_t len) {
  if (!Equals(value, len, "text") && !Equals(value, len, "json")) return false;
  o->json = Equals(value, len, "json");
  return true;
}
void ShowFormat(const Options& o, char* out, size_t size) { ShowText(o.json ? "json" : "text", out, size); }

// `suppressions`: each setting adds its files to the list (the launcher's repeated option and the
// text form's repeated key both add up); an empty value adds nothing.
bool AddSuppressions(Options* o, const char* value, size_t len) {
  if (len == 0) return true;
  const size_t used = strlen(o->suppressions);
  const size_t comma = used > 0 ? 1 : 0;
  if (used + comma + len >= sizeof(o->suppressions)) return false;
  if (comma) o->suppressions[used] = ',';
  memcpy(o->suppressions + used + comma, value, len);
  o->suppressions[used + comma + len] = '\0';
  return true;
}

// `stop_signal`: 0 (SIGRTMIN+5), a number, a name, or RTMIN+N; not one the report or a fault uses.
bool SetStopSignal(Options* o, const char* value, size_t len) {
  if (Equals(value, len, "0")) {
    o->stop_signal = 0;
    return true;
  }
  if (len > 3 && strncmp(value, "SIG", 3) == 0) {
    value += 3;
    len -= 3;
  }
  int signo = 0;
  if (len > 6 && strncmp(value, "RTMIN+", 6) == 0) {
    long long n = 0;
    if (!ParseInt(value + 6, len - 6, &n) || n > SIGRTMAX - SIGRTMIN) return false;
    signo = SIGRTMIN + static_cast<int>(n);
  } else if (!ParseSignal(value, len, &signo)) {
    return false;
  }
  if (signo == SIGCHLD || signo == SIGCONT || signo == SIGPIPE) return false;  // not parking ones
  o->stop_signal = signo;
  return true;
}

// A signal that wakes a thread of the checker's own (the report's, the snapshot's); 0: none.
template <int Options::*field>
bool SetSignal(Options* o, const char* value, size_t len) {
  if (Equals(value, len, "0")) {  // none
    o->*field = 0;
    return true;
  }
  return ParseSignal(value, len, &(o->*field));
}

}  // namespace

const OptionSpec kOptionSpecs[] = {
    {"output", "output", 'o', "FILE", OptionType::kText,
     SetText<sizeof(Options::output), &Options::output>,
     ShowTextField<sizeof(Options::output), &Options::output>,
     "write reports to FILE (a %p in it becomes the process id, so that child processes write "
     "reports of their own); empty: stderr"},
    {"dump", "dump", 0, "FILE", OptionType::kText, SetText<sizeof(Options::dump), &Options::dump>,
     ShowTextField<sizeof(Options::dump), &Options::dump>,
     "also write each report's raw record, unnamed, to FILE (%p as for --output; "
     "docs/dump-format.md), for stackwalk-report to name and render later or elsewhere"},
    {"program_report", "program-report", 0, "0|1", OptionType::kBool,
     SetBool<&Options::program_report>, ShowBool<&Options::program_report>,
     "0: with --dump, the program writes the dump alone and names nothing (no symbolizer is "
     "loaded in it); stackwalk-report renders it. Not with --exitcode (leaks are known once "
     "named and suppressed)"},
    {"exitcode", "exitcode", 0, "N", OptionType::kNumber, SetNumber<int, &Options::exitcode, 0, 255>,
     ShowNumberField<int, &Options::exitcode>,
     "exit with N (1..255) if leaks were found, or none but some allocations could not be "
     "tracked (whether they leaked is unknown); 0: with PROGRAM's status"},
    {"min_size", "min-size", 0, "N", OptionType::kNumber,
     SetNumber<uint64_t, &Options::min_size, 0, 999999999999999999>,
     ShowNumberField<uint64_t, &Options::min_size>, "ignore allocations smaller than N bytes"},
    {"sample_bytes", "sample-bytes", 0, "N", OptionType::kNumber,
     SetNumber<uint64_t, &Options::sample_bytes, 0, kMaxSampleBytes>,
     ShowNumberField<uint64_t, &Options::sample_bytes>,
     "record a sample of the allocations, Poisson by bytes with mean N (allocations of N bytes "
     "or more always), and report estimates of every figure (docs/leakcheck.md); 0: record all"},
    {"sample_seed", "sample-seed", 0, "N", OptionType::kNumber,
     SetNumber<uint64_t, &Options::sample_seed, 0, 999999999999999999>,
     ShowNumberField<uint64_t, &Options::sample_seed>,
     "with --sample-bytes: the sampler's seed, so that every run samples the same bytes; 0: one "
     "from the clock"},
    {"max_frames", "max-frames", 0, "N", OptionType::kNumber,
     SetNumber<int, &Options::max_frames, 1, 64>, ShowNumberField<int, &Options::max_frames>,
     "frames kept per allocation, 1..64"},
    {"method", "method", 0, "M", OptionType::kChoice, SetChoice<&Options::method, kMethods, 3>,
     ShowChoice<&Options::method, kMethods, 3>,
     "unwinder for allocation stacks: auto, fp or ehframe"},
    {"format", "format", 0, "F", OptionType::kChoice, SetFormat, ShowFormat,
     "report format: text or json"},
    {"libraries", "libraries", 0, "GLOBS", OptionType::kText,
     SetText<sizeof(Options::libraries), &Options::libraries>,
     ShowTextField<sizeof(Options::libraries), &Options::libraries>,
     "only leaks with a frame in an object matching one of the comma-separated globs (path or "
     "file name, e.g. 'libfoo*')"},
    {"ignore_libraries", "ignore-libraries", 0, "GLOBS", OptionType::kText,
     SetText<sizeof(Options::ignore_libraries), &Options::ignore_libraries>,
     ShowTextField<sizeof(Options::ignore_libraries), &Options::ignore_libraries>,
     "no leaks with a frame in a matching object"},
    {"report_signal", "report-signal", 0, "SIG", OptionType::kSignal, SetSignal<&Options::report_signal>,
     ShowNumberField<int, &Options::report_signal>,
     "also report the live allocations on each signal SIG (e.g. SIGUSR2 or 12), appended to the "
     "output; 0: none"},
    {"follow_exec", "follow-exec", 0, nullptr, OptionType::kFlag, SetBool<&Options::follow_exec>,
     ShowBool<&Options::follow_exec>, "check the programs PROGRAM executes too"},
    {"unreachable_only", "unreachable-only", 0, nullptr, OptionType::kFlag,
     SetBool<&Options::unreachable_only>, ShowBool<&Options::unreachable_only>,
     "accepted and ignored: only leaks (direct and indirect) are listed now unless "
     "--show-reachable"},
    {"show_reachable", "show-reachable", 0, nullptr, OptionType::kFlag,
     SetBool<&Options::show_reachable>, ShowBool<&Options::show_reachable>,
     "list the blocks still reachable too (their totals are always in the summary)"},
    {"suppressions", "suppressions", 0, "FILE", OptionType::kText, AddSuppressions,
     ShowTextField<sizeof(Options::suppressions), &Options::suppressions>,
     "leaks to leave out, in LeakSanitizer's format ('leak:PATTERN' lines); repeatable, and a "
     "comma-separated list in the text form"},
    {"anonymous_roots", "anonymous-roots", 0, "0|1", OptionType::kBool,
     SetBool<&Options::anonymous_roots>, ShowBool<&Options::anonymous_roots>,
     "1: writable anonymous mappings that are not heap are roots (valgrind's rule); 0: they are "
     "not (LeakSanitizer's)"},
    {"stop_method", "stop-method", 0, "M", OptionType::kChoice,
     SetChoice<&Options::stop_method, kStopMethods, 3>,
     ShowChoice<&Options::stop_method, kStopMethods, 3>,
     "how other threads are stopped for a check: auto (ptrace, else a signal), ptrace or signal"},
    {"stop_timeout_ms", "stop-timeout-ms", 0, "MS", OptionType::kNumber,
     SetNumber<int, &Options::stop_timeout_ms, 1, 600000>,
     ShowNumberField<int, &Options::stop_timeout_ms>,
     "how long the signal method waits for a thread to stop, 1..600000 ms; one that does not is "
     "scanned running and named in the report"},
    {"stop_signal", "stop-signal", 0, "SIG", OptionType::kSignal, SetStopSignal,
     ShowNumberField<int, &Options::stop_signal>,
     "the signal method's signal (a number, a name or RTMIN+N); 0: SIGRTMIN+5"},
    {"check_interval", "check-interval", 0, "SECONDS", OptionType::kNumber,
     SetNumber<int, &Options::check_interval, 0, 86400>, ShowNumberField<int, &Options::check_interval>,
     "every SECONDS, check for leaks found since the last check and append them to the output "
     "(a thread of the checker's own); 0: none"},
    {"snapshot_signal", "snapshot-signal", 0, "SIG", OptionType::kSignal,
     SetSignal<&Options::snapshot_signal>, ShowNumberField<int, &Options::snapshot_signal>,
     "on each signal SIG, append a snapshot of the memory profile (per-stack live bytes and "
     "allocations, threads, timeline; no leak report) to the --dump file, for stackwalk-report "
     "--diff; needs --dump; 0: none"},
    {"snapshot_interval", "snapshot-interval", 0, "SECONDS", OptionType::kNumber,
     SetNumber<int, &Options::snapshot_interval, 0, 86400>,
     ShowNumberField<int, &Options::snapshot_interval>,
     "every SECONDS, append a snapshot (as --snapshot-signal) to the --dump file (a thread of "
     "the checker's own); needs --dump; 0: none"},
    {"timeline_interval_ms", "timeline-interval-ms", 0, "MS", OptionType::kNumber,
     SetNumber<int, &Options::timeline_interval_ms, 0, 3600000>,
     ShowNumberField<int, &Options::timeline_interval_ms>,
     "sample the live bytes every MS milliseconds (and at new peaks) for the dump's timeline; "
     "0: none"},
    {"report_at_exit", nullptr, 0, "0|1", OptionType::kBool, SetBool<&Options::report_at_exit>,
     ShowBool<&Options::report_at_exit>, "write the report at exit"},
    {"report_clean", nullptr, 0, "0|1", OptionType::kBool, SetBool<&Options::report_clean>,
     ShowBool<&Options::report_clean>,
     "1: write the exit report to stderr also when it is clean (no leak, nothing untracked, "
     "every thread stopped, frames named, suppressions read); 0: a clean exit of a process "
     "preloaded by hand, or started below the launcher's program, says nothing on stderr, as "
     "under LeakSanitizer, so that programs whose stderr another program reads (a build's "
     "compiler checks) run as without the checker. A report to output or dump, the launcher's "
     "program's and an in-process session's are always written"},
};
const int kOptionSpecCount = sizeof(kOptionSpecs) / sizeof(kOptionSpecs[0]);

const OptionSpec* FindOption(const char* key, size_t key_len) {
  for (const OptionSpec& spec : kOptionSpecs) {
    if (key_len == strlen(spec.key) && strncmp(key, spec.key, key_len) == 0) return &spec;
  }
  return nullptr;
}

bool SetOption(Options* o, const char* key, size_t key_len, const char* value, size_t value_len) {
  const OptionSpec* spec = FindOption(key, key_len);
  return spec != nullptr && spec->set(o, value, value_len);
}

size_t FormatOption(const char* key, const char* value, char* out, size_t size) {
  size_t len = 0;
  auto put = [&](char c) {
    if (len + 1 < size) out[len] = c;
    ++len;
  };
  for (const char* c = key; *c != '\0'; ++c) put(*c);
  put('=');
  for (const char* c = value; *c != '\0'; ++c) {
    if (*c == ':' || *c == '\\') put('\\');
    put(*c);
  }
  if (size > 0) out[len < size ? len : size - 1] = '\0';
  return len;
}

Options ParseOptions(const char* text, int* problems) {
  Options o;
  int bad = 0;
  if (problems != nullptr) *problems = 0;
  if (text == nullptr) return o;
  // One "key=value" at a time, unescaped into `item` (no allocation): '\' takes the next byte
  // as it is, an unescaped ':' ends the item.
  char item[sizeof(o.suppressions) + 64];
  for (const char* p = text; *p != '\0';) {
    size_t len = 0;
    bool too_long = false;
    for (; *p != '\0' && *p != ':'; ++p) {
      if (*p == '\\' && p[1] != '\0') ++p;
      if (len + 1 < sizeof(item)) {
        item[len++] = *p;
      } else {
        too_long = true;
      }
    }
    if (*p == ':') ++p;
    item[len] = '\0';
    if (len == 0) continue;
    const char* eq = static_cast<const char*>(memchr(item, '=', len));
    if (eq == nullptr) {
      Complain("option without a value: ", item, len);
      ++bad;
      continue;
    }
    const size_t key_len = static_cast<size_t>(eq - item);
    const OptionSpec* spec = FindOption(item, key_len);
    if (spec == nullptr) {
      Complain("unknown option: ", item, key_len);
      ++bad;
    } else if (too_long || !spec->set(&o, eq + 1, len - key_len - 1)) {
      Complain("bad value for option: ", item, len);
      ++bad;
    }
  }
  if (o.unreachable_only) {
    static const char kNote[] =
        "stackwalk-leakcheck: note: unreachable_only is ignored: only leaks are listed by default "
        "now (show_reachable lists the rest)\n";
    ssize_t ignored = write(2, kNote, sizeof(kNote) - 1);
    (void)ignored;
  }
  if (problems != nullptr) *problems = bad;
  return o;
}

}  // namespace stackwalk::leakcheck
