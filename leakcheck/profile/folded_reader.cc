#include "leakcheck/profile/folded_reader.h"

#include <cstdint>
#include <limits>

namespace stackwalk::profile {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// Reads one non-blank line into `frames` and `value`, or says why it cannot.
std::string ReadLine(std::string_view line, std::vector<std::string_view>& frames,
                     uint64_t& value) {
  size_t end = line.size();
  while (end > 0 && IsSpace(line[end - 1])) --end;
  size_t value_start = end;
  while (value_start > 0 && !IsSpace(line[value_start - 1])) --value_start;
  const std::string_view count = line.substr(value_start, end - value_start);
  if (value_start == 0) {
    return "no value: expected 'frame;frame;... VALUE'";
  }
  value = 0;
  for (const char c : count) {
    if (c < '0' || c > '9') {
      return "the value '" + std::string(count.substr(0, 40)) +
             "' is not a non-negative integer";
    }
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return "the value overflows 64 bits";
    }
    value = value * 10 + digit;
  }
  size_t stack_end = value_start;
  while (stack_end > 0 && IsSpace(line[stack_end - 1])) --stack_end;
  std::string_view stack = line.substr(0, stack_end);
  if (stack.empty()) return "no frames before the value";
  frames.clear();
  while (true) {
    const size_t semicolon = stack.find(';');
    frames.push_back(stack.substr(0, semicolon));
    if (semicolon == std::string_view::npos) break;
    stack.remove_prefix(semicolon + 1);
  }
  return {};
}

}  // namespace

FoldedResult ReadFolded(std::string_view text, FlameTree& tree) {
  return ReadFolded(text, [&](std::span<const std::string_view> frames, uint64_t value) {
    tree.Add(frames, value);
  });
}

FoldedResult ReadFolded(std::string_view text, FlameInput& input) {
  return ReadFolded(text, [&](std::span<const std::string_view> frames, uint64_t value) {
    input.stacks.push_back(FlameStack{{frames.begin(), frames.end()}, value});
  });
}

FoldedResult ReadFolded(std::string_view text, const FoldedSink& sink) {
  FoldedResult result;
  std::vector<std::string_view> frames;
  size_t number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool blank = true;
    for (const char c : line) blank = blank && IsSpace(c);
    if (blank) continue;
    uint64_t value = 0;
    std::string reason = ReadLine(line, frames, value);
    if (!reason.empty()) {
      ++result.bad_lines;
      if (result.errors.size() < kMaxFoldedErrors) {
        result.errors.push_back(FoldedError{number, std::move(reason)});
      }
      continue;
    }
    sink(frames, value);
    ++result.stacks;
  }
  return result;
}

std::string FormatFoldedErrors(const FoldedResult& result, std::string_view name) {
  std::string out;
  for (const FoldedError& error : result.errors) {
    out.append(name).append(":").append(std::to_string(error.line)).append(": ");
    out.append(error.reason).append("\n");
  }
  if (result.bad_lines > result.errors.size()) {
    out.append(name).append(": ").append(std::to_string(result.bad_lines - result.errors.size()));
    out.append(" more bad lines\n");
  }
  return out;
}

}  // namespace stackwalk::profile
