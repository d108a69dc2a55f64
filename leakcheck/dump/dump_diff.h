// DumpDiff: growth by stack between two dumps (stackwalk-report --diff A B; docs/leakcheck.md,
// "Snapshots and growth"): the leak suspects of a long run are the stacks whose live bytes keep
// growing. Two snapshots of one run, or two dumps of two runs: their stack ids differ, so stacks
// are matched by their frames (each frame's module, by build-id or else path, and link-time
// offset), not by id. Each side's figures come from its stack statistics (dump format 1.2 on).
// Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_DIFF_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_DIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_name.h"

namespace stackwalk::leakcheck::dump {

// Which dump of which file a side is (for the header).
struct DiffSide {
  std::string file;
  size_t index = 0;  // 1-based, in file order
  size_t count = 0;  // dumps in the file
  std::string occasion;
  int32_t pid = 0;
  std::string program;
};

struct DiffStack {
  std::vector<std::string> frames;  // named (ProfileFrameName), innermost first
  uint64_t from_bytes = 0, from_blocks = 0;  // live at A
  uint64_t to_bytes = 0, to_blocks = 0;      // live at B
  int64_t growth_bytes = 0, growth_blocks = 0;  // B - A
  // Allocations made between A and B: B's count over its run minus A's (0 if B's is smaller).
  uint64_t allocations_between = 0, allocated_bytes_between = 0;
};

struct DumpDiff {
  DiffSide from, to;
  bool same_process = false;  // same pid and program, B not older: "between" means between them
  std::vector<DiffStack> stacks;  // every stack of either side; largest growth first
  int64_t growth_bytes = 0, growth_blocks = 0;  // over every stack
  uint64_t positive_growth_bytes = 0;           // over the stacks that grew (the folded total)
  uint64_t allocations_between = 0;
  uint64_t sample_bytes = 0;  // either side's sampling mean (figures are estimates), 0: none
  // Each side's allocations the checker could not record by then (untracked.h): in no figure.
  UntrackedCounts from_untracked, to_untracked;
  std::string naming_error;   // the modules whose frames could not be named
};

// The growth from `a` to `b`. False, with `*error` saying why, when a side cannot be compared
// (no stack statistics). `from` and `to` fill the header; their occasion and pid are taken from
// the dumps.
bool DiffDumps(const DumpContents& a, DiffSide from, DumpNamer* name_a, const DumpContents& b,
               DiffSide to, DumpNamer* name_b, DumpDiff* out, std::string* error);

// Renderers: text (the top N stacks; 0: all), JSON (docs/schema/diff.schema.json; top N, 0:
// all), folded (each stack that grew, its growth in bytes: a flame graph of the growth).
std::string RenderDiffText(const DumpDiff& diff, size_t top);
std::string RenderDiffJson(const DumpDiff& diff, size_t top);
std::string RenderDiffFolded(const DumpDiff& diff);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_DIFF_H_
