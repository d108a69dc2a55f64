#include "symbolize/safe_symbolizer.h"

#include <unistd.h>

#include <cstring>

#include "core/dl_find_object.h"
#include "core/module_map.h"
#include "symbolize/demangle.h"

namespace stackwalk::internal {
namespace {

// "/usr/lib/debug/.build-id/ab/cdef....debug" into `out`.
bool BuildIdPath(const uint8_t* id, int size, char* out, size_t room) {
  static const char kPrefix[] = "/usr/lib/debug/.build-id/";
  static const char kHex[] = "0123456789abcdef";
  if (size < 2 || room < sizeof(kPrefix) + 2 * static_cast<size_t>(size) + 8) return false;
  char* p = out;
  std::memcpy(p, kPrefix, sizeof(kPrefix) - 1);
  p += sizeof(kPrefix) - 1;
  for (int i = 0; i < size; ++i) {
    *p++ = kHex[id[i] >> 4];
    *p++ = kHex[id[i] & 15];
    if (i == 0) *p++ = '/';
  }
  std::memcpy(p, ".debug", 7);
  return true;
}

// The main executable's path (the loader reports it as ""), read once with readlink.
const char* ExecutablePath() {
  static char path[512];
  static bool done = false;
  if (!done) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) {
      std::memcpy(path, "/proc/self/exe", 15);
    } else {
      path[n] = '\0';
    }
    done = true;
  }
  return path;
}

}  // namespace

SafeSymbolizer& SafeSymbolizer::Global() {
  static SafeSymbolizer symbolizer;
  return symbolizer;
}

ElfImage* SafeSymbolizer::ImageFor(uint64_t object_start, const char* path,
                                   const uint8_t* build_id, int build_id_size, bool in_memory,
                                   uint64_t memory_size, bool* is_debug_file) {
  for (Slot& s : slots_) {
    if (s.object_start == object_start && s.opened) {
      *is_debug_file = s.is_debug_file;
      return s.image.is_open() ? &s.image : nullptr;
    }
  }
  Slot& s = slots_[next_victim_];
  next_victim_ = (next_victim_ + 1) % kMaxImages;
  s.image.Close();
  s.object_start = object_start;
  s.opened = true;
  s.is_debug_file = false;
  *is_debug_file = false;
  // A separate debug file found by build-id has the full .symtab of a stripped object.
  char debug_path[128];
  if (build_id_size > 0 && BuildIdPath(build_id, build_id_size, debug_path, sizeof(debug_path)) &&
      s.image.Open(debug_path)) {
    s.is_debug_file = true;
    *is_debug_file = true;
    return &s.image;
  }
  bool ok = in_memory
                ? s.image.OpenMemory(reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(object_start)),
                                     memory_size)
                : s.image.Open(path);
  return ok ? &s.image : nullptr;
}

void SafeSymbolizer::Describe(uint64_t pc, bool is_return_address, SafeFrame* out) {
  *out = SafeFrame();
  const uint64_t lookup = is_return_address ? pc - 1 : pc;
  ModuleMap::Reader reader(ModuleMap::Global());
  const ModuleSnapshot* snapshot = reader.snapshot();
  const Module* m = snapshot != nullptr ? snapshot->Find(lookup) : nullptr;
  // What the snapshot knows, or glibc for objects loaded since (the snapshot is never rebuilt
  // in a signal handler).
  uint64_t object_start, load_bias, memory_size = 0;
  const uint8_t* build_id = nullptr;
  int build_id_size = 0;
  bool in_memory = false;
  if (m != nullptr) {
    out->module = m->path[0] != '\0' ? m->path : ExecutablePath();
    object_start = m->extent.lo;
    load_bias = m->load_bias;
    build_id = m->build_id;
    build_id_size = m->build_id_size;
    in_memory = m->is_vdso;
    memory_size = m->extent.hi - m->extent.lo;
  } else {
    GlibcObject found;
    if (!FindObjectByGlibc(lookup, &found) || found.path == nullptr || found.path[0] == '\0') {
      return;
    }
    out->module = found.path;
    object_start = found.map_start;
    load_bias = found.load_bias;
  }
  out->has_module = true;
  out->module_offset = lookup - load_bias;
  out->object_start = object_start;
  out->load_bias = load_bias;
  if (m != nullptr) {
    std::memcpy(out->build_id, build_id, static_cast<size_t>(build_id_size));
    out->build_id_size = build_id_size;
    out->build_id_known = true;
  }
  bool is_debug_file = false;
  ElfImage* image = ImageFor(object_start, out->module, build_id, build_id_size, in_memory,
                             memory_size, &is_debug_file);
  if (!out->build_id_known && image != nullptr && !is_debug_file) {
    // An object loaded since the snapshot: its file's note.
    out->build_id_size = image->build_id_size() < ElfImage::kMaxBuildIdSize
                             ? image->build_id_size() : ElfImage::kMaxBuildIdSize;
    std::memcpy(out->build_id, image->build_id(), static_cast<size_t>(out->build_id_size));
    out->build_id_known = true;
  }
  SymbolHit hit;
  ElfImage own;
  if (image == nullptr || !image->Lookup(lookup - load_bias, &hit)) {
    // A debug file without this symbol (or a stale one): the object's own tables. When the
    // image already is the object, looking again would find nothing more.
    if (image == nullptr || !is_debug_file || in_memory || !own.Open(out->module) ||
        !own.Lookup(lookup - load_bias, &hit)) {
      return;
    }
  }
  DemangleSignalSafe(hit.name, out->function, sizeof(out->function));
  // Versioned names of .symtab ("__libc_start_main@@GLIBC_2.34") read better without the
  // version; no C++ name contains '@'.
  char* at = std::strchr(out->function, '@');
  if (at != nullptr) *at = '\0';
  out->function_offset = lookup - load_bias - hit.value;
}

}  // namespace stackwalk::internal
