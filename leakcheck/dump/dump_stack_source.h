// DumpStackSource: what EncodeDump (dump_encode.h) writes a dump's stacks section from, one stack
// at a time, so that a writer need not hold every stack's frames at once. ListedStacks is the
// source over DumpContents::stacks (a decoded dump, a test's); TableStacks (dump_table_stacks.h)
// reads the program's stack table as the section is written (clang's exit dump has ~1.3 million
// frames: 21 MB as DumpFrames). Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_STACK_SOURCE_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_STACK_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::leakcheck::dump {

class DumpStackSource {
 public:
  // What the section writes of a stack ahead of its frames.
  struct Head {
    uint32_t id = 0;
    uint64_t earliest = UINT64_MAX;
    uint32_t frames = 0;  // how many Frames() gives
  };

  virtual ~DumpStackSource() = default;

  virtual size_t size() const = 0;
  virtual Head HeadOf(size_t i) const = 0;
  // Stack i's HeadOf(i).frames frames, innermost first: the source's own, or made into `scratch`
  // (one buffer for every stack). Valid until the next call.
  virtual const DumpFrame* Frames(size_t i, std::vector<DumpFrame>* scratch) = 0;
};

// The stacks as DumpContents lists them.
class ListedStacks final : public DumpStackSource {
 public:
  explicit ListedStacks(const std::vector<DumpStack>& stacks) : stacks_(stacks) {}

  size_t size() const override { return stacks_.size(); }
  Head HeadOf(size_t i) const override {
    const DumpStack& s = stacks_[i];
    return {s.id, s.earliest, static_cast<uint32_t>(s.frames.size())};
  }
  const DumpFrame* Frames(size_t i, std::vector<DumpFrame>*) override {
    return stacks_[i].frames.data();
  }

 private:
  const std::vector<DumpStack>& stacks_;
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_STACK_SOURCE_H_
