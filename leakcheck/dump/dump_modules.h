// ModuleIndexer: a leak dump's module list, built as the stacks' PCs are resolved to (module
// index, link-time address) frames (dump_contents.h): each object a PC is in is listed once, with
// what naming on another machine needs (path, build-id, load bias, ranges). The object of a PC is
// the one the report's name stage would name it in (report_name.h): an object unloaded after the
// stack's earliest block was made, else the one loaded now, else the one last unloaded there.
// Not signal-safe: reads the module map (refreshing it), allocates.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_MODULES_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_MODULES_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "leakcheck/closed_modules.h"
#include "leakcheck/dump/dump_contents.h"

namespace stackwalk::internal {
struct Module;
}  // namespace stackwalk::internal

namespace stackwalk::leakcheck::dump {

class ModuleIndexer {
 public:
  // `closed`: the process's record of dlcloses (State::closed, null until the first), read at
  // each Resolve; may itself be null (none is looked at).
  explicit ModuleIndexer(const std::atomic<ClosedModules*>* closed);

  // The frame of return address `pc` of a stack whose earliest live block is `earliest`. After
  // TakeModules (TableStacks resolves every frame twice, dump_table_stacks.h), a PC in an object
  // loaded since is one of the object unloaded there last if that one is listed, and a PC in no
  // listed object a frame of no known object (the PC itself).
  DumpFrame Resolve(uintptr_t pc, uint64_t earliest);

  // The modules listed so far, in index order; no more are listed after.
  std::vector<DumpModule> TakeModules();

 private:
  uint32_t IndexOf(DumpModule module);
  // Resolve's two cases: once some object was closed, its record first; the module map's.
  DumpFrame ResolveWithClosed(const ClosedModules& closed, uintptr_t pc, uint64_t earliest);
  DumpFrame ResolveLoaded(uintptr_t pc);

  // The index of a loaded module, without building its DumpModule again (a copy of its path,
  // build-id and ranges a frame, and a readlink of /proc/self/exe for the main executable's: 7 %
  // of clang's run with its 1.3 million frames at exit, ~0.9 s of python's report).
  uint32_t IndexOfLoaded(const internal::Module& m);

  // A loaded module already indexed: its load bias, extent and path as the module map has them.
  struct Loaded {
    uint64_t load_bias;
    uint64_t lo;
    uint64_t hi;
    std::string path;
    uint32_t index;
  };

  const std::atomic<ClosedModules*>* closed_;
  bool taken_ = false;  // TakeModules was called: the list is final
  std::vector<DumpModule> modules_;
  std::map<std::pair<std::string, uint64_t>, uint32_t> index_;  // (path, bias) -> index
  std::vector<Loaded> loaded_;
  size_t last_loaded_ = 0;  // the one a frame was in last: consecutive frames share modules

  // The extent of the listed loaded module a frame was in last, while the module map has built
  // no snapshot since: consecutive frames mostly share one, and the map's lookup (a snapshot
  // pinned by two atomic increments, a binary search) and the module's match by path were about
  // half of the dump's time over clang's 1.3 million frames at exit.
  struct LastExtent {
    uint64_t rebuilds = 0;  // ModuleMap::rebuild_count() before the lookup that found it
    uint64_t lo = 0, hi = 0, load_bias = 0;
    uint32_t index = kUnknownModule;
  };
  LastExtent last_extent_;
};

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_MODULES_H_
