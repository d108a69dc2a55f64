// FrameNamers() of the preloaded library: libstackwalk_leakcheck_names.so, from the directory
// this library was loaded from, loaded on first use and kept (its objects are never unloaded:
// a later report reuses them, and nothing of it must be named after it is gone).
#include <dlfcn.h>

#include <atomic>

#include "leakcheck/frame_namer.h"

namespace stackwalk::leakcheck {

const FrameNamerTable* FrameNamers(std::string* error) {
  static std::atomic<const FrameNamerTable*> loaded{nullptr};
  if (const FrameNamerTable* table = loaded.load(std::memory_order_acquire)) return table;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&FrameNamers), &self) == 0 || self.dli_fname == nullptr) {
    *error = "cannot tell where libstackwalk_leakcheck is";
    return nullptr;
  }
  std::string path = self.dli_fname;
  path = path.substr(0, path.rfind('/') + 1) + "libstackwalk_leakcheck_names.so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = why != nullptr ? why : "cannot load " + path;
    return nullptr;
  }
  using Get = const FrameNamerTable* (*)();
  Get get = reinterpret_cast<Get>(dlsym(handle, STACKWALK_FRAME_NAMER_TABLE));
  const FrameNamerTable* table = get != nullptr ? get() : nullptr;
  if (table == nullptr) {
    *error = path + " has no " STACKWALK_FRAME_NAMER_TABLE;
    return nullptr;
  }
  loaded.store(table, std::memory_order_release);
  return table;
}

}  // namespace stackwalk::leakcheck
