#include "stackwalk/symbolizer.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/module_map.h"
#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"
#include "symbolize/object_file.h"
#include "symbolize/demangle.h"

namespace stackwalk {
namespace {

using internal::DwarfFrame;
using internal::JsonString;
using internal::SymbolHit;

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The main executable's path: the loader reports it as "".
std::string ExecutablePath() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "/proc/self/exe";
}

}  // namespace

using Object = internal::ObjectFile;

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

Symbolizer::Symbolizer() : impl_(std::make_unique<Impl>()) {}
Symbolizer::~Symbolizer() = default;

std::vector<SymbolizedFrame> Symbolizer::Symbolize(const void* pc, bool is_return_address) {
  const uint64_t address = reinterpret_cast<uintptr_t>(pc);
  const uint64_t lookup = is_return_address ? address - 1 : address;
  internal::ModuleMap& map = internal::ModuleMap::Global();
  std::string path;
  uint64_t bias = 0;
  for (int attempt = 0; attempt < 2 && path.empty(); ++attempt) {
    {
      internal::ModuleMap::Reader reader(map);
      const internal::Module* m =
          reader.snapshot() != nullptr ? reader.snapshot()->Find(lookup) : nullptr;
      if (m != nullptr && !m->is_vdso) {
        path = m->path[0] != '\0' ? std::string(m->path) : ExecutablePath();
        bias = m->load_bias;
      }
    }
    if (path.empty() && !map.RefreshIfChanged()) break;  // a miss: maybe newly loaded
  }
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
    frames = impl_->Lookup(impl_->ObjectFor(path), lookup - bias);
  }
  for (SymbolizedFrame& f : frames) {
    f.pc = address;
    f.module = path;
    f.module_offset = address - bias;
  }
  return frames;
}

std::vector<SymbolizedFrame> Symbolizer::SymbolizeTrace(void* const* pcs, int n,
                                                        bool first_is_interrupted) {
  std::vector<SymbolizedFrame> all;
  for (int i = 0; i < n; ++i) {
    for (SymbolizedFrame& f : Symbolize(pcs[i], !(i == 0 && first_is_interrupted))) {
      f.index = i;
      all.push_back(std::move(f));
    }
  }
  return all;
}

absl::StatusOr<std::vector<SymbolizedFrame>> Symbolizer::SymbolizeFile(const std::string& path,
                                                                       uint64_t address) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Object* object = impl_->ObjectFor(path);
  if (!object->dwarf && !object->has_symbols && !object->has_mini) {
    return absl::NotFoundError(absl::StrCat(
        path, ": ", object->error.empty() ? "not a readable ELF file of this class" : object->error));
  }
  std::vector<SymbolizedFrame> frames = impl_->Lookup(object, address);
  for (SymbolizedFrame& f : frames) {
    f.pc = address;
    f.module = path;
    f.module_offset = address;
  }
  return frames;
}

std::string FormatFrames(const std::vector<SymbolizedFrame>& frames) {
  std::string out;
  for (const SymbolizedFrame& f : frames) {
    absl::StrAppendFormat(&out, "#%d 0x%016x", f.index, f.pc);
    if (!f.function.empty()) absl::StrAppend(&out, " in ", f.function);
    if (f.inlined) absl::StrAppend(&out, " (inlined)");
    if (!f.file.empty()) {
      absl::StrAppend(&out, " at ", f.file);
      if (f.line > 0) absl::StrAppend(&out, ":", f.line);
      if (f.column > 0) absl::StrAppend(&out, ":", f.column);
    }
    if (!f.module.empty()) absl::StrAppendFormat(&out, " (%s+0x%x)", Basename(f.module), f.module_offset);
    out += '\n';
  }
  return out;
}

std::string FormatFramesJson(const std::vector<SymbolizedFrame>& frames) {
  std::string out = "[";
  for (size_t i = 0; i < frames.size(); ++i) {
    const SymbolizedFrame& f = frames[i];
    absl::StrAppendFormat(&out,
                          "%s{\"index\":%d,\"pc\":\"0x%x\",\"function\":%s,\"file\":%s,\"line\":%d,"
                          "\"column\":%d,\"inlined\":%s,\"module\":%s,\"module_offset\":\"0x%x\"}",
                          i ? "," : "", f.index, f.pc, JsonString(f.function), JsonString(f.file), f.line,
                          f.column, f.inlined ? "true" : "false", JsonString(f.module), f.module_offset);
  }
  return out + "]";
}

}  // namespace stackwalk
