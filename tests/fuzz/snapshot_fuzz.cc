// The crash snapshot's reader (stackwalk-dump --snapshot's input), and the walk over what it
// read, the crashing thread and every other thread captured, in whichever architecture the
// input names (x86_64, aarch64, arm32): each thread's captured stack as the only memory, the
// listed objects' files looked for under a root that holds none (so the walk is steps over
// corrupt registers and stack bytes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "remote/remote_walk.h"
#include "remote/snapshot_memory.h"
#include "remote/snapshot_reader.h"
#include "remote/target_modules.h"

using namespace stackwalk::internal;

// One thread's walk, as stackwalk-dump --snapshot does it; its frame count.
size_t Walk(const Snapshot& snap, const SnapshotThreadContext& thread,
            const TargetModules& modules) {
  if (!thread.has_registers || !thread.has_stack) return 0;
  SnapshotMemory memory(thread.stack_address, thread.stack);
  TargetWalk walk;
  std::string error;
  WalkSnapshotThread(snap.machine, snap.word_size, thread.registers, thread.register_mask, memory,
                     modules, 64, &walk, &error);
  return walk.frames.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Snapshot snap = ReadSnapshot(data, size);
  auto modules = TargetModules::FromSnapshot(snap.modules, snap.machine,
                                             "/nonexistent-snapshot-fuzz-root", "");
  // The crashing thread, then every other one the snapshot captured (thread sections).
  size_t most = Walk(snap, snap, *modules);
  for (const SnapshotOtherThread& t : snap.threads) {
    NotCapturedReason(t);
    most = std::max(most, Walk(snap, t, *modules));
  }
  return most > 64 ? 1 : 0;
}
