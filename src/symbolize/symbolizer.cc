#include "stackwalk/symbolizer.h"

#include <errno.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/module_map.h"
#include "format/frame_json.h"
#include "format/frame_layout.h"
#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"
#include "symbolize/object_file.h"
#include "symbolize/demangle.h"

namespace stackwalk {
namespace {

using internal::DwarfFrame;
using internal::SymbolHit;

// The main executable's path: the loader reports it as "".
std::string ExecutablePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "/proc/self/exe";
}

}  // namespace

using Object = internal::ObjectFile;

namespace {

// The error of a call that ran out of memory. Its message needs memory too: without, the code
// alone.
absl::Status OutOfMemory(const std::string& what) {
  try {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory while symbolizing ", what));
  } catch (const std::bad_alloc&) {
    return absl::Status(absl::StatusCode::kResourceExhausted, "");
  }
}

}  // namespace

// Running out of memory. Our code and abseil throw std::bad_alloc; libdw and libelf return
// failure from the call that could not allocate (a missing line, a unit not found) and leave
// errno at ENOMEM, as malloc sets it; libdw even remembers some of those failures (a line table
// that failed to load stays failed). So each lookup starts with errno = 0, and one that ends
// with either sign of a failed allocation answers ResourceExhausted and drops the object from
// the cache: the next lookup opens it afresh.
struct Symbolizer::Impl {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Object>> objects;  // by path

  Object* ObjectFor(const std::string& path) {
    auto it = objects.find(path);
    if (it == objects.end()) {
      auto object = std::make_unique<Object>();
      object->Load(path);
      it = objects.emplace(path, std::move(object)).first;
    }
    return it->second.get();
  }

  // The frames of `path` at link-time `address` into *out, or ResourceExhausted. Also says
  // whether the object could be read at all (*readable).
  absl::Status LookupIn(const std::string& path, uint64_t address, std::vector<SymbolizedFrame>* out,
                        bool* readable) {
    bool out_of_memory = false;
    errno = 0;
    try {
      Object* object = ObjectFor(path);
      *readable = object->dwarf || object->has_symbols || object->has_mini;
      *out = Lookup(object, address);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
    if (out_of_memory || errno == ENOMEM) {
      objects.erase(path);  // frees; allocates nothing
      out->clear();
      return OutOfMemory(path);
    }
    return absl::OkStatus();
  }

  // Frames at a link-time address: DWARF, with the symbol table's name where DWARF has none.
  std::vector<SymbolizedFrame> Lookup(Object* object, uint64_t address) {
    std::vector<SymbolizedFrame> out;
    std::vector<DwarfFrame> frames;
    if (object->dwarf) frames = object->dwarf->Lookup(address);
    for (const DwarfFrame& f : frames) {
      SymbolizedFrame s;
      s.function = f.function;
      s.file = f.file;
      s.line = f.line;
      s.column = f.column;
      s.inlined = f.inlined;
      out.push_back(std::move(s));
    }
    // The symbol table names the outermost (not inlined) function where DWARF has nothing, or
    // only a bare DW_AT_name for what the symbol table has as a qualified C++ name (a function
    // in an anonymous namespace has no linkage name in DWARF). C names stay DWARF's: the symbol
    // there may be a versioned alias (__libc_start_main@@GLIBC_2.34 for __libc_start_main_impl).
    SymbolHit hit;
    const bool unnamed = out.empty() || out.back().function.empty();
    if ((unnamed || !frames.back().has_linkage) && object->LookupSymbol(address, &hit) &&
        (unnamed || (hit.value == frames.back().function_entry && std::strncmp(hit.name, "_Z", 2) == 0))) {
      if (out.empty()) out.emplace_back();
      out.back().function = internal::Demangle(hit.name);
    }
    if (out.empty()) out.emplace_back();
    return out;
  }
};

Symbolizer::Symbolizer() : impl_(new (std::nothrow) Impl) {}
Symbolizer::~Symbolizer() = default;

std::vector<SymbolizedFrame> Symbolizer::Symbolize(const void* pc, bool is_return_address) {
  if (impl_ == nullptr) return {};
  try {
    const uint64_t address = reinterpret_cast<uintptr_t>(pc);
    const uint64_t lookup = is_return_address ? address - 1 : address;
    internal::ModuleMap& map = internal::ModuleMap::Global();
    std::string path;
    uint64_t bias = 0;
    map.FindRefreshing(lookup, [&](const internal::Module& m) {
      if (m.is_vdso) return false;  // no file to read
      path = m.path[0] != '\0' ? std::string(m.path) : ExecutablePath();
      bias = m.load_bias;
      return true;
    });
    internal::UnloadedModule unloaded;
    if (path.empty() && map.FindUnloaded(lookup, &unloaded)) {  // dlclose'd since the capture
      path = unloaded.path;
      bias = unloaded.load_bias;
    }
    std::vector<SymbolizedFrame> frames;
    if (path.empty()) {
      frames.emplace_back();
    } else {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      bool readable = false;
      if (!impl_->LookupIn(path, lookup - bias, &frames, &readable).ok()) return {};
    }
    for (SymbolizedFrame& f : frames) {
      f.pc = address;
      f.module = path;
      f.module_offset = address - bias;
    }
    return frames;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

std::vector<SymbolizedFrame> Symbolizer::SymbolizeTrace(void* const* pcs, int n,
                                                        bool first_is_interrupted) {
  try {
    std::vector<SymbolizedFrame> all;
    for (int i = 0; i < n; ++i) {
      std::vector<SymbolizedFrame> frames = Symbolize(pcs[i], !(i == 0 && first_is_interrupted));
      if (frames.empty()) return {};  // out of memory
      for (SymbolizedFrame& f : frames) {
        f.index = i;
        all.push_back(std::move(f));
      }
    }
    return all;
  } catch (const std::bad_alloc&) {
    return {};
  }
}

absl::StatusOr<std::vector<SymbolizedFrame>> Symbolizer::SymbolizeFile(const std::string& path,
                                                                       uint64_t address) {
  if (impl_ == nullptr) return OutOfMemory(path);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<SymbolizedFrame> frames;
  bool readable = false;
  absl::Status status = impl_->LookupIn(path, address, &frames, &readable);
  if (!status.ok()) return status;
  try {
    if (!readable) {
      // Why, as the object's reader found it (no such file, a directory, not ELF, truncated...).
      const std::string& why = impl_->ObjectFor(path)->error;
      return absl::NotFoundError(
          absl::StrCat(path, ": ", why.empty() ? "not a readable ELF file of this class" : why));
    }
    for (SymbolizedFrame& f : frames) {
      f.pc = address;
      f.module = path;
      f.module_offset = address;
    }
    return frames;
  } catch (const std::bad_alloc&) {
    return OutOfMemory(path);
  }
}

// The formatters catch std::bad_alloc: an exception cannot unwind through abseil's str_format
// (std::terminate, found by the allocation-failure sweep), so neither uses it.
std::string FormatFrames(const std::vector<SymbolizedFrame>& frames) try {
  std::string out;
  internal::StringSink sink(&out);
  for (const SymbolizedFrame& f : frames) {
    internal::FrameLine line;
    line.index = f.index;
    line.pc = f.pc;
    line.function = f.function.c_str();
    line.inlined = f.inlined;
    line.file = f.file.c_str();
    line.line = f.line;
    line.column = f.column;
    line.module = f.module.c_str();
    line.module_offset = f.module_offset;
    internal::WriteFrameLine(sink, line);
    out += '\n';
  }
  return out;
} catch (const std::bad_alloc&) {
  return std::string();
}

std::string FormatFramesJson(const std::vector<SymbolizedFrame>& frames) try {
  return internal::DumpJson(internal::FramesJsonArray(frames));
} catch (const std::bad_alloc&) {
  return std::string();
}

}  // namespace stackwalk
