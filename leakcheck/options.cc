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

Options ParseOptions(const char* text, int* problems) {
  Options o;
  int bad = 0;
  if (text == nullptr) return o;
  const char* p = text;
  while (*p != '\0') {
    const char* end = strchr(p, ':');
    size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    const char* eq = static_cast<const char*>(memchr(p, '=', len));
    if (eq == nullptr) {
      if (len > 0) {
        Complain("option without a value: ", p, len);
        ++bad;
      }
    } else {
      size_t key_len = static_cast<size_t>(eq - p);
      const char* value = eq + 1;
      size_t value_len = len - key_len - 1;
      auto is = [&](const char* key) {
        return key_len == strlen(key) && strncmp(p, key, key_len) == 0;
      };
      long long n = 0;
      bool ok = true;
      if (is("min_size")) {
        ok = ParseInt(value, value_len, &n);
        if (ok) o.min_size = static_cast<uint64_t>(n);
      } else if (is("max_frames")) {
        ok = ParseInt(value, value_len, &n) && n >= 1 && n <= 64;
        if (ok) o.max_frames = static_cast<int>(n);
      } else if (is("exitcode")) {
        ok = ParseInt(value, value_len, &n) && n <= 255;
        if (ok) o.exitcode = static_cast<int>(n);
      } else if (is("method")) {
        if (value_len == 4 && strncmp(value, "auto", 4) == 0) {
          o.method = 0;
        } else if (value_len == 2 && strncmp(value, "fp", 2) == 0) {
          o.method = 1;
        } else if (value_len == 7 && strncmp(value, "ehframe", 7) == 0) {
          o.method = 2;
        } else {
          ok = false;
        }
      } else if (is("output")) {
        ok = CopyValue(value, value_len, o.output, sizeof(o.output));
      } else if (is("libraries")) {
        ok = CopyValue(value, value_len, o.libraries, sizeof(o.libraries));
      } else if (is("ignore_libraries")) {
        ok = CopyValue(value, value_len, o.ignore_libraries, sizeof(o.ignore_libraries));
      } else if (is("report_signal")) {
        ok = ParseSignal(value, value_len, &o.report_signal);
      } else if (is("format")) {
        const bool text = value_len == 4 && strncmp(value, "text", 4) == 0;
        const bool json = value_len == 4 && strncmp(value, "json", 4) == 0;
        ok = text || json;
        if (ok) o.json = json;
      } else if (is("unreachable_only")) {
        ok = value_len == 1 && (value[0] == '0' || value[0] == '1');
        if (ok) o.unreachable_only = value[0] == '1';
      } else if (is("follow_exec")) {
        ok = value_len == 1 && (value[0] == '0' || value[0] == '1');
        if (ok) o.follow_exec = value[0] == '1';
      } else if (is("report_at_exit")) {
        ok = value_len == 1 && (value[0] == '0' || value[0] == '1');
        if (ok) o.report_at_exit = value[0] == '1';
      } else {
        Complain("unknown option: ", p, key_len);
        ++bad;
      }
      if (!ok) {
        Complain("bad value for option: ", p, len);
        ++bad;
      }
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  if (problems != nullptr) *problems = bad;
  return o;
}

}  // namespace stackwalk::leakcheck
