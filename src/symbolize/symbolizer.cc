#include "stackwalk/symbolizer.h"

#include <errno.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <system_error>
#include <thread>

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
  std::string debug_root = "/usr/lib/debug";

  Object* ObjectFor(const std::string& path) {
    auto it = objects.find(path);
    if (it == objects.end()) {
      auto object = std::make_unique<Object>();
      object->Load(path, debug_root);
      it = objects.emplace(path, std::move(object)).first;
    }
    return it->second.get();
  }

  // Runs `use(object)` on the object of `path`, or answers ResourceExhausted (see above).
  template <class Use>
  absl::Status WithObject(const std::string& path, Use&& use) {
    bool out_of_memory = false;
    errno = 0;
    try {
      use(ObjectFor(path));
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
    if (out_of_memory || errno == ENOMEM) {
      objects.erase(path);  // frees; allocates nothing
      return OutOfMemory(path);
    }
    return absl::OkStatus();
  }

  // The frames of `path` at link-time `address` into *out, or ResourceExhausted. Also says
  // whether the object itself could be read as ELF (*has_file).
  absl::Status LookupIn(const std::string& path, uint64_t address, const FileQuery& query,
                        std::vector<SymbolizedFrame>* out, bool* has_file) {
    absl::Status status = WithObject(path, [&](Object* object) {
      *has_file = object->has_file;
      *out = Lookup(object, address, query);
    });
    if (!status.ok()) out->clear();
    return status;
  }

  static std::vector<SymbolizedFrame> Lookup(Object* object, uint64_t address,
                                             const FileQuery& query) {
    std::vector<DwarfFrame> frames;
    if (object->dwarf) frames = object->dwarf->Lookup(address);
    switch (query.naming) {
      case FrameNaming::kAddr2line:
        NameAsAddr2line(object, address, &frames);
        break;
      case FrameNaming::kLlvmSymbolizer:
        NameAsLlvm(object, address, query, &frames);
        break;
      case FrameNaming::kStackwalk:
        NameAsStackwalk(object, address, &frames);
        break;
    }
    if (query.innermost_only && frames.size() > 1) frames.resize(1);
    std::vector<SymbolizedFrame> out;
    for (const DwarfFrame& f : frames) {
      SymbolizedFrame s;
      // The DWARF name when it has one; the symbol table's name, demangled, otherwise.
      s.function = f.function != f.linkage ? f.function : internal::Demangle(f.linkage.c_str());
      s.linkage_name = f.linkage;
      s.file = f.file;
      s.line = f.line;
      s.column = f.column;
      s.inlined = f.inlined;
      s.function_start = f.function_entry;
      s.function_start_is_low_pc = f.entry_is_low_pc;
      s.discriminator = f.discriminator;
      s.decl_file = f.decl_file;
      s.decl_line = f.decl_line;
      out.push_back(std::move(s));
    }
    if (out.empty()) out.emplace_back();
    return out;
  }

  // Names a frame from the symbol table: the name (demangled when printed) and, for a frame the
  // symbol table alone gives, where the function starts.
  static void NameFromSymbol(const SymbolHit& hit, std::vector<DwarfFrame>* frames,
                             DwarfFrame* frame) {
    if (frame == nullptr) {
      frames->emplace_back();
      frame = &frames->back();
      frame->function_entry = hit.value;
    }
    frame->linkage = hit.name;
    frame->function = hit.name;
  }

  // FrameNaming::kStackwalk (symbolizer.h). The symbol table names the outermost (not inlined)
  // function where DWARF has nothing, or only a bare DW_AT_name (no has_linkage: a C++ unit's
  // function in an anonymous namespace) for what the symbol table has at the function's entry as
  // a C++ name (IsItaniumMangled). C names stay DWARF's, extern "C" ones in C++ units too: the
  // symbol there may be a versioned alias (__libc_start_main@@GLIBC_2.34 for
  // __libc_start_main_impl).
  static void NameAsStackwalk(Object* object, uint64_t address, std::vector<DwarfFrame>* frames) {
    SymbolHit hit;
    const bool unnamed = frames->empty() || frames->back().function.empty();
    if ((unnamed || !frames->back().has_linkage) && object->LookupSymbol(address, &hit) &&
        (unnamed || (hit.value == frames->back().function_entry &&
                     internal::IsItaniumMangled(hit.name)))) {
      NameFromSymbol(hit, frames, frames->empty() ? nullptr : &frames->back());
    }
  }

  // FrameNaming::kAddr2line. binutils names a function without a DWARF linkage name by the
  // symbol table the first time it is the innermost function of a lookup, and by its DWARF name
  // afterwards, unless the symbol started where the function does: then that symbol name sticks,
  // for inlined calls' callers too. Kept per DWARF entry (ObjectFile::looked_up, renamed), to
  // name as it names in the same order.
  static void NameAsAddr2line(Object* object, uint64_t address, std::vector<DwarfFrame>* frames) {
    SymbolHit hit;
    if (frames->empty() || frames->front().function.empty()) {
      if (object->LookupSymbol(address, &hit)) {
        NameFromSymbol(hit, frames, frames->empty() ? nullptr : &frames->front());
        // No line: binutils names the source file of the symbol table's STT_FILE entry.
        if (frames->front().file.empty() && hit.file != nullptr) frames->front().file = hit.file;
      }
    } else if (!frames->front().has_linkage) {
      DwarfFrame& f = frames->front();
      if (object->looked_up.insert(f.die).second) {
        if (object->LookupSymbol(address, &hit)) {
          if (hit.value == f.function_entry) object->renamed[f.die] = hit.name;
          NameFromSymbol(hit, frames, &f);
        }
      } else if (auto it = object->renamed.find(f.die); it != object->renamed.end()) {
        f.linkage = f.function = it->second;
      }
    }
    for (size_t i = 1; i < frames->size(); ++i) {
      DwarfFrame& f = (*frames)[i];
      if (f.has_linkage) continue;
      if (auto it = object->renamed.find(f.die); it != object->renamed.end()) {
        f.linkage = f.function = it->second;
      }
    }
  }

  // FrameNaming::kLlvmSymbolizer. DWARF's names, the symbol table's function where DWARF names
  // none; then, as LLVM 14 does when it prints names, the outermost frame returned (the
  // innermost alone without inlines) named by the symbol table where it covers the address (a
  // cold part is "f() [clone .cold]" there), which gives the start address.
  static void NameAsLlvm(Object* object, uint64_t address, const FileQuery& query,
                         std::vector<DwarfFrame>* frames) {
    SymbolHit hit;
    if ((frames->empty() || frames->front().function.empty()) &&
        object->LookupSymbol(address, &hit)) {
      NameFromSymbol(hit, frames, frames->empty() ? nullptr : &frames->front());
    }
    if (frames->empty()) frames->emplace_back();
    if (query.innermost_only && frames->size() > 1) frames->resize(1);
    if (query.name_functions && object->LookupSymbol(address, &hit)) {
      DwarfFrame& outer = frames->back();
      outer.linkage = hit.name;
      outer.function = internal::Demangle(hit.name);
      outer.function_entry = hit.value;
      outer.entry_is_low_pc = true;
      outer.inlined = false;
      // No line: the source file of the symbol table's STT_FILE entry.
      if (outer.file.empty() && hit.file != nullptr) outer.file = hit.file;
    }
  }
};

Symbolizer::Symbolizer() : impl_(new (std::nothrow) Impl) {}
Symbolizer::Symbolizer(const SymbolizerOptions& options) : Symbolizer() {
  if (impl_ == nullptr) return;
  try {
    impl_->debug_root = options.debug_root;
  } catch (const std::bad_alloc&) {
    impl_.reset();  // every call answers "out of memory", as without state
  }
}
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
      bool has_file = false;
      if (!impl_->LookupIn(path, lookup - bias, FileQuery(), &frames, &has_file).ok()) return {};
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

void Symbolizer::OpenFiles(const std::vector<std::string>& paths) {
  if (impl_ == nullptr) return;
  try {
    std::vector<std::string> todo;
    std::string debug_root;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      std::set<std::string> listed;
      for (const std::string& path : paths) {
        if (impl_->objects.count(path) == 0 && listed.insert(path).second) todo.push_back(path);
      }
      debug_root = impl_->debug_root;
    }
    if (todo.size() < 2) return;  // one file: its first lookup opens it as soon
    // Opened outside the lock (lookups in files already open go on meanwhile), then kept.
    std::vector<std::unique_ptr<Object>> opened(todo.size());
    std::atomic<size_t> next{0};
    auto open_next = [&] {
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        try {
          errno = 0;
          auto object = std::make_unique<Object>();
          object->Load(todo[i], debug_root);
          if (errno != ENOMEM) opened[i] = std::move(object);  // libdw's sign of a failed malloc
        } catch (const std::bad_alloc&) {
        }
      }
    };
    const size_t threads =
        std::min<size_t>(todo.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> helpers;
    // A thread that cannot be made (no memory for its state, no thread left) leaves the work to
    // those that were; reserved first, so that no growth of the vector throws past running ones.
    try {
      helpers.reserve(threads - 1);
      while (helpers.size() + 1 < threads) helpers.emplace_back(open_next);
    } catch (const std::system_error&) {
    } catch (const std::bad_alloc&) {
    }
    open_next();
    for (std::thread& t : helpers) t.join();
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (size_t i = 0; i < todo.size(); ++i) {
      // A lookup meanwhile may have opened the same file: the first kept stays.
      if (opened[i] != nullptr) impl_->objects.emplace(todo[i], std::move(opened[i]));
    }
  } catch (const std::bad_alloc&) {
  }
}

absl::StatusOr<std::vector<SymbolizedFrame>> Symbolizer::SymbolizeFile(const std::string& path,
                                                                       uint64_t address) {
  return SymbolizeFile(path, address, FileQuery());
}

namespace {

// NotFound for a file that cannot be read as ELF: why, as the object's reader found it (no such
// file, a directory, not ELF, truncated...).
absl::Status Unreadable(const std::string& path, const std::string& why) {
  return absl::NotFoundError(
      absl::StrCat(path, ": ", why.empty() ? "not a readable ELF file of this class" : why));
}

}  // namespace

absl::StatusOr<std::vector<SymbolizedFrame>> Symbolizer::SymbolizeFile(const std::string& path,
                                                                       uint64_t address,
                                                                       const FileQuery& query) {
  if (impl_ == nullptr) return OutOfMemory(path);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<SymbolizedFrame> frames;
  bool has_file = false;
  absl::Status status = impl_->LookupIn(path, address, query, &frames, &has_file);
  if (!status.ok()) return status;
  try {
    if (!has_file) return Unreadable(path, impl_->ObjectFor(path)->error);
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

absl::StatusOr<uint64_t> Symbolizer::FileOffsetToAddress(const std::string& path,
                                                         uint64_t offset) {
  if (impl_ == nullptr) return OutOfMemory(path);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  absl::Status answer;
  uint64_t address = 0;
  absl::Status status = impl_->WithObject(path, [&](Object* object) {
    if (!object->has_file) {
      answer = Unreadable(path, object->error);
    } else if (!object->file.FileOffsetToAddress(offset, &address)) {
      char hex[24];
      std::snprintf(hex, sizeof(hex), "%" PRIx64, offset);
      answer = absl::NotFoundError(absl::StrCat(path, ": no segment holds file offset 0x", hex));
    }
  });
  if (!status.ok()) return status;
  if (!answer.ok()) return answer;
  return address;
}

absl::Status Symbolizer::FindSection(const std::string& path, const std::string& name,
                                     uint64_t* address, uint64_t* size) {
  if (impl_ == nullptr) return OutOfMemory(path);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  absl::Status answer;
  absl::Status status = impl_->WithObject(path, [&](Object* object) {
    if (!object->has_file) {
      answer = Unreadable(path, object->error);
    } else if (!object->file.FindSection(name.c_str(), address, size)) {
      answer = absl::NotFoundError(absl::StrCat(path, ": cannot find section ", name));
    }
  });
  return status.ok() ? answer : status;
}

// The formatters catch std::bad_alloc: an exception cannot unwind through abseil's str_format
// (std::terminate, found by the allocation-failure sweep), so neither uses it.
std::string FormatFrames(const std::vector<SymbolizedFrame>& frames) try {
  return internal::FrameLines(frames);
} catch (const std::bad_alloc&) {
  return std::string();
}

std::string FormatFramesJson(const std::vector<SymbolizedFrame>& frames) try {
  return internal::DumpJson(internal::FramesJsonArray(frames));
} catch (const std::bad_alloc&) {
  return std::string();
}

}  // namespace stackwalk
