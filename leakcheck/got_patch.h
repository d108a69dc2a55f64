// GotPatcher: redirects calls of named functions from chosen loaded objects by rewriting their
// GOT slots (the JUMP_SLOT and GLOB_DAT relocations of PT_DYNAMIC), and puts the original
// values back. RELRO pages are made writable for the write and read-only again after. Slots of
// objects that were unloaded are forgotten, never written. Not thread-safe: callers serialize.
#ifndef STACKWALK_LEAKCHECK_GOT_PATCH_H_
#define STACKWALK_LEAKCHECK_GOT_PATCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stackwalk::leakcheck {

struct GotHook {
  const char* symbol;
  void* replacement;
};

class GotPatcher {
 public:
  // Rewrites, in every loaded object for which accept(path) is true, each slot bound to one of
  // `hooks`' symbols; slots patched before are left as they are. Returns the number of slots
  // newly rewritten. `path` is the object's path ("/proc/self/exe"'s target for the program).
  int Patch(const std::vector<GotHook>& hooks, const std::function<bool(const std::string&)>& accept);

  // Forgets the slots of objects no longer loaded.
  void ForgetUnloaded();

  // Writes every remembered slot's original value back. Returns the number restored.
  int RestoreAll();

  int patched_slots() const { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    uintptr_t address;
    uintptr_t original;
    uintptr_t object_bias;
    std::string object;
    bool relro;
  };
  std::vector<Slot> slots_;
};

// Writes `value` into the pointer-sized slot at `address`, unprotecting its page for the write
// when `read_only` (RELRO). False if the page could not be made writable.
bool WriteSlot(uintptr_t address, uintptr_t value, bool read_only);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_GOT_PATCH_H_
