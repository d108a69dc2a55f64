// libFuzzer target for the leak dump's reader (leakcheck/dump/dump_decode.h): any bytes must
// decode without a crash or a read outside the input (AddressSanitizer); what is decoded must
// refer only to what is there (frames to listed modules, edges to listed blocks, verdicts known),
// whatever the error; and each dump decoded, encoded again, must read back the same, whole.
#include <cstddef>
#include <cstdint>
#include <string>

#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_encode.h"

namespace {

using stackwalk::leakcheck::dump::DecodeDumps;
using stackwalk::leakcheck::dump::DecodeScope;
using stackwalk::leakcheck::dump::DecodedDumps;
using stackwalk::leakcheck::dump::DumpContents;
using stackwalk::leakcheck::dump::EncodeDump;
using stackwalk::leakcheck::dump::kUnknownModule;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckReferences(const DumpContents& c) {
  for (const auto& stack : c.stacks) {
    for (const auto& frame : stack.frames) {
      Check(frame.module == kUnknownModule || frame.module < c.modules.size());
    }
  }
  for (const auto& block : c.blocks) Check(block.verdict <= 4);
  for (const auto& edge : c.edges) Check(edge.from < c.blocks.size() && edge.to < c.blocks.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const DecodedDumps decoded = DecodeDumps(data, size);
  Check(!decoded.error.empty() || !decoded.dumps.empty());
  for (const DumpContents& dump : decoded.dumps) {
    CheckReferences(dump);
    const std::string again = EncodeDump(dump);
    const DecodedDumps reread =
        DecodeDumps(reinterpret_cast<const uint8_t*>(again.data()), again.size());
    Check(reread.error.empty() && reread.dumps.size() == 1);
    const DumpContents& r = reread.dumps[0];
    Check(r.blocks.size() == dump.blocks.size() && r.stacks.size() == dump.stacks.size() &&
          r.modules.size() == dump.modules.size() && r.edges.size() == dump.edges.size() &&
          r.threads.size() == dump.threads.size() && r.process.program == dump.process.program &&
          r.stack_stats.size() == dump.stack_stats.size() &&
          r.thread_totals.size() == dump.thread_totals.size() &&
          r.timeline.size() == dump.timeline.size() && r.process.snapshot == dump.process.snapshot);
  }
  // The launcher's read (the leak report's sections): bytes the whole read takes without an
  // error it takes too, as many dumps; every reference in what it keeps checked.
  const DecodedDumps leaks = DecodeDumps(data, size, DecodeScope::kLeakReport);
  Check(!decoded.error.empty() ||
        (leaks.error.empty() && leaks.dumps.size() == decoded.dumps.size()));
  for (const DumpContents& dump : leaks.dumps) {
    CheckReferences(dump);
    Check(dump.stack_stats.empty());
  }
  return 0;
}
