// The crash snapshot's reader (stackwalk-dump --snapshot's input), and the walk over what it
// read, in whichever architecture the input names (x86_64, aarch64, arm32): the captured stack as
// the only memory, the listed objects' files looked for under a root that holds none (so the
// walk is steps over corrupt registers and stack bytes).
#include <cstddef>
#include <cstdint>
#include <string>

#include "remote/remote_walk.h"
#include "remote/snapshot_memory.h"
#include "remote/snapshot_reader.h"
#include "remote/target_modules.h"

using namespace stackwalk::internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Snapshot snap = ReadSnapshot(data, size);
  if (!snap.has_registers || !snap.has_stack) return 0;
  auto modules = TargetModules::FromSnapshot(snap.modules, snap.machine,
                                             "/nonexistent-snapshot-fuzz-root", "");
  SnapshotMemory memory(snap.stack_address, snap.stack);
  TargetWalk walk;
  std::string error;
  WalkSnapshotThread(snap.machine, snap.word_size, snap.registers, snap.register_mask, memory,
                     *modules, 64, &walk, &error);
  return walk.frames.size() > 64 ? 1 : 0;
}
