// Suppressions: leaks a user (or the checker itself) declares known, in LeakSanitizer's file
// format. One rule per line, "leak:PATTERN"; '#' starts a comment line; blank lines are skipped.
// A pattern is matched against each frame's function, object path and source file (inlined
// frames included, as each is a frame of its own): '*' matches any run of characters, a leading
// '^' anchors it at the start and a trailing '$' at the end; otherwise it matches anywhere in
// the text (sanitizer_common's TemplateMatch rule). A stack matches a rule if any of its frames
// does. Not signal-safe: allocates (the report stage and the launcher use it).
#ifndef STACKWALK_LEAKCHECK_SUPPRESSIONS_H_
#define STACKWALK_LEAKCHECK_SUPPRESSIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stackwalk/symbolizer.h"  // SymbolizedFrame only

namespace stackwalk::leakcheck {

// What adding rules returns: ok, or the error's text. Not absl::Status: this file is linked into
// the preloaded library, which loads no abseil library but libstackwalk's demangler;
// libabsl_status and the 22 it needs cost every checked process ~3 ms to load (a configure runs
// hundreds).
struct SuppressionsStatus {
  std::string error;  // empty: ok
  bool ok() const { return error.empty(); }
  std::string_view message() const { return error; }
};

struct SuppressionRule {
  std::string pattern;
  uint64_t count = 0;  // the blocks it suppressed (a stage's tally; Match does not count)
  uint64_t bytes = 0;
  bool builtin = false;
};

class Suppressions {
 public:
  // Adds the rules of the file at `path`. A line of another type ("race:x"), a line without a
  // type or with an empty pattern, or an unreadable file: an error naming path:line, and none of
  // the file's rules added. Repeated files add up.
  SuppressionsStatus AddFile(const std::string& path);
  // Adds the rules of `text` as AddFile does a file's, `name` standing for the path in errors.
  SuppressionsStatus AddText(std::string_view text, const std::string& name);
  // Adds every file of a comma-separated list (the `suppressions` option); the first error.
  SuppressionsStatus AddFiles(std::string_view comma_list);
  // The built-in rule for what the runtime keeps and the roots cannot explain: the dynamic TLS
  // blocks glibc's __tls_get_addr allocates (glibc BZ 12650; LeakSanitizer suppresses the same).
  void AddBuiltin();

  // The first rule matching any of `frames`' function, object path or source file; null if none.
  const SuppressionRule* Match(const std::vector<SymbolizedFrame>& frames) const;
  // The rule Match returned, to count its blocks in.
  SuppressionRule* MutableRule(const SuppressionRule* rule);

  // The rules that suppressed something (count > 0), in the order they were added.
  std::vector<SuppressionRule> Used() const;
  const std::vector<SuppressionRule>& rules() const { return rules_; }
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<SuppressionRule> rules_;
};

// Whether `text` matches the suppression pattern `pattern` (the rule of this file's comment).
bool SuppressionPatternMatches(std::string_view pattern, std::string_view text);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SUPPRESSIONS_H_
