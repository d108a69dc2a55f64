// The crash snapshot's reader (stackwalk-dump --snapshot's input), and the walk over what it
// read: the captured stack as the only memory, the listed objects' files looked for under a
// root that holds none (so the walk is steps over corrupt registers and stack bytes).
#include <cstddef>
#include <cstdint>

#include "core/context.h"
#include "remote/remote_walk.h"
#include "remote/snapshot_memory.h"
#include "remote/snapshot_reader.h"
#include "remote/target_modules.h"

using namespace stackwalk::internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Snapshot snap = ReadSnapshot(data, size);
  if (!snap.has_registers || !snap.has_stack ||
      snap.registers.size() != static_cast<size_t>(NativeArch::kNumRegs)) {
    return 0;
  }
  auto modules = TargetModules::FromSnapshot(snap.modules, "/nonexistent-snapshot-fuzz-root", "");
  NativeRegs regs;
  for (int i = 0; i < NativeArch::kNumRegs; ++i) {
    if ((snap.register_mask >> i) & 1) regs.Set(i, snap.registers[i]);
  }
  SnapshotMemory memory(snap.stack_address, snap.stack);
  TargetWalk walk = WalkTarget(regs, memory, *modules, 64);
  return walk.frames.size() > 64 ? 1 : 0;
}
