#include "leakcheck/options.h"

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

}  // namespace

Options ParseOptions(const char* text) {
  Options o;
  if (text == nullptr) return o;
  const char* p = text;
  while (*p != '\0') {
    const char* end = strchr(p, ':');
    size_t len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    const char* eq = static_cast<const char*>(memchr(p, '=', len));
    if (eq == nullptr) {
      if (len > 0) Complain("option without a value: ", p, len);
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
        ok = value_len < sizeof(o.output);
        if (ok) {
          memcpy(o.output, value, value_len);
          o.output[value_len] = '\0';
        }
      } else if (is("format")) {
        const bool text = value_len == 4 && strncmp(value, "text", 4) == 0;
        const bool json = value_len == 4 && strncmp(value, "json", 4) == 0;
        ok = text || json;
        if (ok) o.json = json;
      } else if (is("report_at_exit")) {
        ok = value_len == 1 && (value[0] == '0' || value[0] == '1');
        if (ok) o.report_at_exit = value[0] == '1';
      } else {
        Complain("unknown option: ", p, key_len);
        ok = true;
      }
      if (!ok) Complain("bad value for option: ", p, len);
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  return o;
}

}  // namespace stackwalk::leakcheck
