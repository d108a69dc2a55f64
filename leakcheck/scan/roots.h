// The roots of a reachability scan: where a pointer that keeps a block alive may sit. Per thread
// its registers, its stack from the saved SP (x86_64's red zone included) to the top of its
// mapping, its static TLS and the dynamic TLS blocks behind its DTV; the writable segments of
// every loaded object (the dynamic loader's included); the writable anonymous mappings that are
// neither the allocator's nor the checker's own (valgrind's rule: Python's and gdb's arenas; off
// with RootOptions::anonymous_mappings = false, LeakSanitizer's rule); the checking thread's own
// registers and stack.
#ifndef STACKWALK_LEAKCHECK_SCAN_ROOTS_H_
#define STACKWALK_LEAKCHECK_SCAN_ROOTS_H_

#include <ucontext.h>

#include <cstddef>
#include <cstdint>

#include "leakcheck/allocation_table.h"  // Allocation only
#include "leakcheck/scan/check_entry.h"  // kCallerRegisterWords only
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/stop_world.h"
#include "leakcheck/scan/tls_roots.h"
#include "src/core/address_range.h"

namespace stackwalk::leakcheck {

enum class RootKind : uint8_t {
  kGlobals,       // a loaded object's writable PT_LOAD
  kRegisters,     // a stopped thread's saved registers (a range inside its StoppedThread slot)
  kStack,         // a thread's stack, from its SP up
  kStaticTls,     // a module's static TLS block in one thread
  kDynamicTls,    // a thread's DTV and the dynamic TLS blocks it points to
  kAnonymous,     // a writable anonymous mapping
  kCallerStack,   // the checking thread's registers and stack
  kLoaderBlocks,  // blocks the dynamic loader allocated (roots only without anonymous mappings)
};
constexpr int kRootKindCount = 8;
const char* RootKindName(RootKind kind);  // "globals", "registers", ...

struct RootRange {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  RootKind kind = RootKind::kGlobals;
  int32_t tid = 0;     // the thread it belongs to; 0 for process-wide roots
  bool copy = false;   // may vanish while read: read through the SafeReader
};

// A growable list of roots in own memory (no malloc).
class RootSet {
 public:
  RootSet() = default;
  ~RootSet();
  RootSet(const RootSet&) = delete;
  RootSet& operator=(const RootSet&) = delete;

  void Add(const RootRange& range);  // empty ranges are dropped
  size_t size() const { return count_; }
  // True if a range was lost for want of memory: a scan over this set must not call anything a leak.
  bool overflowed() const { return overflowed_; }
  const RootRange& operator[](size_t i) const { return ranges_[i]; }
  uint64_t bytes(RootKind kind) const { return bytes_[static_cast<int>(kind)]; }

 private:
  RootRange* ranges_ = nullptr;
  size_t count_ = 0;
  size_t capacity_ = 0;
  uint64_t bytes_[kRootKindCount] = {};
  bool overflowed_ = false;
};

struct RootOptions {
  bool anonymous_mappings = true;  // false: LeakSanitizer's rule (and loader blocks are roots)
};

struct RootInputs {
  const StoppedThread* threads = nullptr;  // StoppedWorld::threads(): every other thread
  size_t thread_count = 0;
  const MapsSnapshot* maps = nullptr;
  const Allocation* blocks = nullptr;      // the live blocks, sorted by address
  size_t block_count = 0;
  uintptr_t caller_sp = 0;                 // the checking thread: its stack from here up
  const ucontext_t* caller = nullptr;      // and its registers
  // and, if not nullptr, kCallerRegisterWords of the program's registers unwound from its
  // CheckEntry (check_entry.h): those its entry point saved in its frame, below caller_sp
  const uintptr_t* caller_registers = nullptr;
  const internal::AddressRange* excluded = nullptr;  // never roots: the checker's own threads'
  size_t excluded_count = 0;                         // stacks
  // The loaded objects (LoadedModules::Collect, inside the check's dl_iterate_phdr callback):
  // their writable PT_LOADs are the kGlobals, their TLS modules give each thread's TLS.
  const LoadedModules* modules = nullptr;
};

// Collects the roots above, with the world stopped and the loader lock held (so the list of
// loaded objects and their TLS cannot change).
void CollectRoots(const RootInputs& inputs, const RootOptions& options, RootSet* out);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_ROOTS_H_
