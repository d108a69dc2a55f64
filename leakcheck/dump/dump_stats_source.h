// DumpStatsSource: what EncodeDump (dump_encode.h) writes a dump's stack statistics section from,
// one stack at a time. ListedStats is the source over DumpContents::stack_stats (a decoded dump,
// a test's); TableStackStats (dump_table_stacks.h) reads the program's stack table as the section
// is written, so that the program never holds the section's 72 bytes a stack at once (a cmake
// configure's 33,841 stacks: 2.4 MB at its exit, its peak). Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_STATS_SOURCE_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_STATS_SOURCE_H_

#include <cstddef>
#include <vector>

#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::leakcheck::dump {

class DumpStatsSource {
 public:
  virtual ~DumpStatsSource() = default;

  // How many stacks the section lists: the same for every pass over it (the encoder measures
  // the section before it writes it). Their figures may differ between passes, not their size.
  virtual size_t size() const = 0;
  // The i-th stack's figures, by increasing stack id.
  virtual DumpStackStats At(size_t i) const = 0;
};

// The statistics as DumpContents lists them.
class ListedStats final : public DumpStatsSource {
 public:
  explicit ListedStats(const std::vector<DumpStackStats>& stats) : stats_(stats) {}

  size_t size() const override { return stats_.size(); }
  DumpStackStats At(size_t i) const override { return stats_[i]; }

 private:
  const std::vector<DumpStackStats>& stats_;
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_STATS_SOURCE_H_
