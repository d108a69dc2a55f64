// libFuzzer target for the record region's reader (leakcheck/dump/record_read.h): the launcher
// reads the region a program killed at any instruction left, torn or corrupt: any bytes must be
// read without a crash, a read outside the input (AddressSanitizer) or a loop, and what is read
// must refer only to what is there (frames to listed modules, at most 64 frames a stack).
#include <cstddef>
#include <cstdint>

#include "leakcheck/dump/record_read.h"
#include "leakcheck/record_format.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stackwalk::leakcheck;
  const dump::RecordReading reading = dump::ReadRecord(data, size, "killed by SIGKILL");
  const dump::DumpContents& d = reading.dump;
  Check(reading.begun || d.blocks.empty());
  for (const dump::DumpStack& s : d.stacks) {
    Check(s.frames.size() <= static_cast<size_t>(record::kMaxStackFrames));
    for (const dump::DumpFrame& f : s.frames) {
      Check(f.module == dump::kUnknownModule || f.module < d.modules.size());
    }
  }
  for (const dump::DumpBlock& b : d.blocks) Check(b.address > 1 && b.verdict <= 4);
  return 0;
}
