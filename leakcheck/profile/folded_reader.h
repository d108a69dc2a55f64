// The folded stack format of flamegraph.pl, inferno and speedscope, one stack a line:
//
//   main;parse_config;std::vector<Entry>::push_back 4096
//
// frames outermost first, separated by ';', then whitespace and the stack's value, a
// non-negative integer (bytes or counts; the reader does not know which). Frame names may
// contain spaces ("operator new(unsigned long)"): the value is the last field. Blank lines are
// skipped; a line ending in "\r\n" is read as if it ended in "\n".
#ifndef STACKWALK_LEAKCHECK_PROFILE_FOLDED_READER_H_
#define STACKWALK_LEAKCHECK_PROFILE_FOLDED_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "leakcheck/profile/flame_graph.h"

namespace stackwalk::profile {

// A line that could not be read: its number (from 1) and why.
struct FoldedError {
  size_t line = 0;
  std::string reason;
};

// The lines read, merged into `tree` (not Finish()ed), and the first kMaxFoldedErrors bad lines;
// bad_lines counts them all. A bad line adds nothing; the other lines are still read.
struct FoldedResult {
  size_t stacks = 0;
  size_t bad_lines = 0;
  std::vector<FoldedError> errors;
};

inline constexpr size_t kMaxFoldedErrors = 20;

// Receives each good line's frames (outermost first) and value.
using FoldedSink = std::function<void(std::span<const std::string_view> frames, uint64_t value)>;

// ReadFolded(): reads the folded `text`, passing each good line to `sink`.
FoldedResult ReadFolded(std::string_view text, const FoldedSink& sink);

// ReadFolded(): reads the folded `text` into `tree`.
FoldedResult ReadFolded(std::string_view text, FlameTree& tree);

// ReadFolded(): reads the folded `text` into `input`'s stacks.
FoldedResult ReadFolded(std::string_view text, FlameInput& input);

// FormatFoldedErrors(): "NAME:LINE: reason" lines, and how many more there were.
std::string FormatFoldedErrors(const FoldedResult& result, std::string_view name);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_FOLDED_READER_H_
