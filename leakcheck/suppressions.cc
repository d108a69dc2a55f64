#include "leakcheck/suppressions.h"

#include <fstream>
#include <sstream>

namespace stackwalk::leakcheck {
namespace {

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const size_t at = text.find(separator);
    pieces.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return pieces;
    text.remove_prefix(at + 1);
  }
}

std::string_view Strip(std::string_view text) {
  const char* space = " \t\r\n\v\f";
  const size_t first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

std::string Str(std::string_view text) { return std::string(text); }

}  // namespace

bool SuppressionPatternMatches(std::string_view pattern, std::string_view text) {
  if (text.empty()) return false;  // an unknown name matches nothing
  bool at_start = false, at_end = false;
  if (!pattern.empty() && pattern.front() == '^') {
    at_start = true;
    pattern.remove_prefix(1);
  }
  if (!pattern.empty() && pattern.back() == '$') {
    at_end = true;
    pattern.remove_suffix(1);
  }
  // The pieces between '*'s, in order: the first at the start if anchored, the last at the end if
  // anchored, each after the one before.
  const std::vector<std::string_view> pieces = Split(pattern, '*');
  size_t pos = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string_view piece = pieces[i];
    const bool first = i == 0, last = i + 1 == pieces.size();
    if (last && at_end) {
      if (text.size() < pos + piece.size()) return false;
      const size_t end_pos = text.size() - piece.size();
      if (text.substr(end_pos) != piece) return false;
      if (first && at_start && end_pos != 0) return false;
      return true;
    }
    if (first && at_start) {
      if (text.substr(0, piece.size()) != piece) return false;
      pos = piece.size();
      continue;
    }
    const size_t found = text.find(piece, pos);
    if (found == std::string_view::npos) return false;
    pos = found + piece.size();
  }
  return true;
}

SuppressionsStatus Suppressions::AddText(std::string_view text, const std::string& name) {
  std::vector<SuppressionRule> added;
  int line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    line = Strip(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t colon = line.find(':');
    const std::string where = name + ":" + std::to_string(line_number) + ": ";
    if (colon == std::string_view::npos) {
      return SuppressionsStatus{where + "not a suppression (TYPE:PATTERN expected): '" +
                                Str(line) + "'"};
    }
    const std::string_view type = Strip(line.substr(0, colon));
    const std::string_view pattern = Strip(line.substr(colon + 1));
    if (type != "leak") {
      return SuppressionsStatus{where + "suppression type '" + Str(type) +
                                "' is not one the leak checker knows (only 'leak')"};
    }
    if (pattern.empty() || pattern == "^" || pattern == "$" || pattern == "^$") {
      return SuppressionsStatus{where + "empty suppression pattern"};
    }
    added.push_back(SuppressionRule{std::string(pattern)});
  }
  rules_.insert(rules_.end(), added.begin(), added.end());
  return SuppressionsStatus();
}

SuppressionsStatus Suppressions::AddFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return SuppressionsStatus{path + ": cannot read the suppressions file"};
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return SuppressionsStatus{path + ": read error"};
  return AddText(text.str(), path);
}

SuppressionsStatus Suppressions::AddFiles(std::string_view comma_list) {
  for (std::string_view path : Split(comma_list, ',')) {
    if (path.empty()) continue;
    if (SuppressionsStatus status = AddFile(Str(path)); !status.ok()) return status;
  }
  return SuppressionsStatus();
}

void Suppressions::AddBuiltin() {
  SuppressionRule rule{"*tls_get_addr*"};
  rule.builtin = true;
  rules_.push_back(std::move(rule));
}

const SuppressionRule* Suppressions::Match(const std::vector<SymbolizedFrame>& frames) const {
  for (const SuppressionRule& rule : rules_) {
    for (const SymbolizedFrame& f : frames) {
      if (SuppressionPatternMatches(rule.pattern, f.function) ||
          SuppressionPatternMatches(rule.pattern, f.module) ||
          SuppressionPatternMatches(rule.pattern, f.file)) {
        return &rule;
      }
    }
  }
  return nullptr;
}

SuppressionRule* Suppressions::MutableRule(const SuppressionRule* rule) {
  if (rule < rules_.data() || rule >= rules_.data() + rules_.size()) return nullptr;
  return &rules_[static_cast<size_t>(rule - rules_.data())];
}

std::vector<SuppressionRule> Suppressions::Used() const {
  std::vector<SuppressionRule> used;
  for (const SuppressionRule& rule : rules_) {
    if (rule.count > 0) used.push_back(rule);
  }
  return used;
}

}  // namespace stackwalk::leakcheck
