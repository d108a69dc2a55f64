#include "leakcheck/report_name.h"

namespace stackwalk::leakcheck {
namespace {

// The frames of one stack, named: through the objects loaded now, except for PCs in an object
// unloaded after the allocation was made, which are looked up in its file.
std::vector<SymbolizedFrame> NameFrames(FrameNamer& symbolizer, const std::vector<uintptr_t>& pcs,
                                        uint64_t allocated_at, const ClosedModules* closed) {
  std::vector<void*> addresses;
  for (uintptr_t pc : pcs) addresses.push_back(reinterpret_cast<void*>(pc));
  std::vector<SymbolizedFrame> live =
      pcs.empty() ? std::vector<SymbolizedFrame>()
                  : symbolizer.SymbolizeTrace(addresses.data(), static_cast<int>(addresses.size()));
  if (closed == nullptr) return live;
  std::vector<SymbolizedFrame> named;
  size_t next = 0;
  for (int i = 0; i < static_cast<int>(pcs.size()); ++i) {
    size_t group_end = next;
    while (group_end < live.size() && live[group_end].index == i) ++group_end;
    const uintptr_t pc = pcs[i];
    LoadedObject object;
    if (closed->Find(pc, allocated_at, &object)) {
      // Every frame here is a return address: looked up one byte back, as the symbolizer does.
      std::vector<SymbolizedFrame> found;
      if (symbolizer.SymbolizeFile(object.path, pc - object.bias - 1, &found) && !found.empty()) {
        for (SymbolizedFrame f : found) {
          f.pc = pc;
          f.index = i;
          f.module = object.path;
          f.module_offset = pc - object.bias;
          named.push_back(f);
        }
        next = group_end;
        continue;
      }
    }
    named.insert(named.end(), live.begin() + next, live.begin() + group_end);
    next = group_end;
  }
  return named;
}

}  // namespace

std::string NameStacks(std::vector<NamedStack>* stacks, const ClosedModules* closed,
                       std::unique_ptr<FrameNamer>* namer) {
  for (NamedStack& stack : *stacks) {
    if (stack.earliest == UINT64_MAX) continue;
    if (*namer == nullptr) *namer = std::make_unique<FrameNamer>();
    stack.frames = NameFrames(**namer, stack.pcs, stack.earliest, closed);
  }
  return *namer != nullptr ? (*namer)->error() : std::string();
}

}  // namespace stackwalk::leakcheck
