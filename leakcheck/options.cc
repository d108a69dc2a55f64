#include "leakcheck/options.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

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

const OptionSpec kOptionSpecs[] = {
    {"output", "output", 'o', "FILE",
     "write reports to FILE (a %p in it becomes the process id, so that child processes write "
     "reports of their own; default: stderr)"},
    {"exitcode", "exitcode", 0, "N", "exit with N if leaks were found (default: PROGRAM's status)"},
    {"min_size", "min-size", 0, "N", "ignore allocations smaller than N bytes"},
    {"max_frames", "max-frames", 0, "N", "frames kept per allocation, 1..64 (default 32)"},
    {"method", "method", 0, "M", "unwinder for allocation stacks: auto (default), fp or ehframe"},
    {"format", "format", 0, "F", "report format: text (default) or json"},
    {"libraries", "libraries", 0, "GLOBS",
     "only leaks with a frame in an object matching one of the comma-separated globs (path or "
     "file name, e.g. 'libfoo*')"},
    {"ignore_libraries", "ignore-libraries", 0, "GLOBS", "no leaks with a frame in a matching object"},
    {"report_signal", "report-signal", 0, "SIG",
     "also report the live allocations on each signal SIG (e.g. SIGUSR2 or 12), appended to the "
     "output"},
    {"follow_exec", "follow-exec", 0, nullptr,
     "check the programs PROGRAM executes too (default: not)"},
    {"unreachable_only", "unreachable-only", 0, nullptr,
     "scan memory for pointers and report only blocks nothing reachable points to (definitely "
     "and indirectly lost)"},
    {"report_at_exit", nullptr, 0, "0|1", "write the report at exit (default 1)"},
};
const int kOptionSpecCount = sizeof(kOptionSpecs) / sizeof(kOptionSpecs[0]);

bool SetOption(Options* o, const char* key, size_t key_len, const char* value, size_t value_len) {
  auto is = [&](const char* name) { return key_len == strlen(name) && strncmp(key, name, key_len) == 0; };
  auto equals = [&](const char* word) {
    return value_len == strlen(word) && strncmp(value, word, value_len) == 0;
  };
  auto boolean = [&](bool* out) {
    if (!equals("0") && !equals("1")) return false;
    *out = value[0] == '1';
    return true;
  };
  long long n = 0;
  if (is("min_size")) {
    if (!ParseInt(value, value_len, &n)) return false;
    o->min_size = static_cast<uint64_t>(n);
  } else if (is("max_frames")) {
    if (!ParseInt(value, value_len, &n) || n < 1 || n > 64) return false;
    o->max_frames = static_cast<int>(n);
  } else if (is("exitcode")) {
    if (!ParseInt(value, value_len, &n) || n > 255) return false;
    o->exitcode = static_cast<int>(n);
  } else if (is("method")) {
    if (equals("auto")) {
      o->method = 0;
    } else if (equals("fp")) {
      o->method = 1;
    } else if (equals("ehframe")) {
      o->method = 2;
    } else {
      return false;
    }
  } else if (is("output")) {
    return CopyValue(value, value_len, o->output, sizeof(o->output));
  } else if (is("libraries")) {
    return CopyValue(value, value_len, o->libraries, sizeof(o->libraries));
  } else if (is("ignore_libraries")) {
    return CopyValue(value, value_len, o->ignore_libraries, sizeof(o->ignore_libraries));
  } else if (is("report_signal")) {
    return ParseSignal(value, value_len, &o->report_signal);
  } else if (is("format")) {
    if (!equals("text") && !equals("json")) return false;
    o->json = equals("json");
  } else if (is("unreachable_only")) {
    return boolean(&o->unreachable_only);
  } else if (is("follow_exec")) {
    return boolean(&o->follow_exec);
  } else if (is("report_at_exit")) {
    return boolean(&o->report_at_exit);
  } else {
    return false;
  }
  return true;
}

Options ParseOptions(const char* text, int* problems) {
  Options o;
  int bad = 0;
  if (problems != nullptr) *problems = 0;
  if (text == nullptr) return o;
  // One "key=value" at a time, unescaped into `item` (no allocation): '\' takes the next byte
  // as it is, an unescaped ':' ends the item.
  char item[sizeof(o.libraries) + 64];
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
    bool known = false;
    for (const OptionSpec& spec : kOptionSpecs) {
      known |= key_len == strlen(spec.key) && strncmp(item, spec.key, key_len) == 0;
    }
    if (!known) {
      Complain("unknown option: ", item, key_len);
      ++bad;
    } else if (too_long || !SetOption(&o, item, key_len, eq + 1, len - key_len - 1)) {
      Complain("bad value for option: ", item, len);
      ++bad;
    }
  }
  if (problems != nullptr) *problems = bad;
  return o;
}

}  // namespace stackwalk::leakcheck
