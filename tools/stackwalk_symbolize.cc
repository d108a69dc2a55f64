// stackwalk-symbolize: names addresses of an ELF file with function, file:line:column and the
// inline chain, from its DWARF (or its separate debug file).
//
//   stackwalk-symbolize [--json] [--inlines] [--debug-root DIR] MODULE+OFFSET...
//   stackwalk-symbolize [--json] [--inlines] (--pid PID | --maps FILE) ADDR...
//   stackwalk-symbolize --addr2line -e FILE [-a] [-f] [-C] [-i] [ADDR...]
//
// With --pid or --maps, absolute addresses are resolved against that process's memory map
// (/proc/PID/maps, or a copy of one saved with a crash report).
// The --addr2line mode prints the same lines as binutils' addr2line with the same flags, so it
// drops into scripts; addresses come from the command line or, one per line, from stdin.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"
#include "symbolize/object_file.h"
#include "symbolize/demangle.h"

namespace {

using stackwalk::internal::DwarfFrame;
using stackwalk::internal::DwarfModule;
using stackwalk::internal::ElfImage;
using stackwalk::internal::JsonString;
using stackwalk::internal::SymbolHit;

struct Options {
  bool addr2line = false;
  bool print_address = false;
  bool functions = false;
  bool demangle = false;
  bool inlines = false;
  bool json = false;
  std::string file;
  std::string debug_root = "/usr/lib/debug";
  std::string maps;  // a /proc/PID/maps text to resolve absolute addresses with
  std::vector<std::string> inputs;
};

int Usage() {
  std::fprintf(stderr,
               "usage: stackwalk-symbolize [--json] [--inlines] [--debug-root DIR] MODULE+OFFSET...\n"
               "       stackwalk-symbolize [--json] [--inlines] (--pid PID | --maps FILE) ADDR...\n"
               "       stackwalk-symbolize --addr2line -e FILE [-a] [-f] [-C] [-i] [ADDR...]\n");
  return 2;
}

bool ParseHex(const std::string& text, uint64_t* out) {
  const char* s = text.c_str();
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  if (*s == '\0') return false;
  char* end;
  *out = std::strtoull(s, &end, 16);
  return *end == '\0';
}

// One object, opened once, with what the addr2line mode remembers of it.
struct Object : stackwalk::internal::ObjectFile {
  // binutils names a function without a DWARF linkage name by the symbol table the first time
  // it is the innermost function of a lookup, and by its DWARF name afterwards, unless the
  // symbol started where the function does: then that symbol name sticks, for inlined calls'
  // callers too. Kept per DWARF entry, to print what it prints in the same order.
  std::set<uint64_t> looked_up;
  std::map<uint64_t, std::string> renamed;
};

Object* ObjectFor(const std::string& path, const std::string& debug_root,
                  std::map<std::string, std::unique_ptr<Object>>* cache) {
  auto it = cache->find(path);
  if (it != cache->end()) return it->second.get();
  auto object = std::make_unique<Object>();
  object->Load(path, debug_root);
  Object* raw = object.get();
  cache->emplace(path, std::move(object));
  return raw;
}

// The frames at `addr`: from DWARF, else the symbol table's function with no location. With
// `binutils_names`, named as binutils names them (see Object::looked_up); otherwise by DWARF,
// with the symbol table only where DWARF has no name.
std::vector<DwarfFrame> FramesAt(Object* object, uint64_t addr, bool binutils_names) {
  std::vector<DwarfFrame> frames;
  if (object->dwarf) frames = object->dwarf->Lookup(addr);
  SymbolHit hit;
  auto rename = [](DwarfFrame& f, const std::string& name) {
    f.linkage = name;
    f.function = name;  // demangled when printed, if asked
  };
  if (!binutils_names) {
    if ((frames.empty() || frames.front().function.empty()) && object->LookupSymbol(addr, &hit)) {
      if (frames.empty()) frames.emplace_back();
      rename(frames.front(), hit.name);
    }
    return frames;
  }
  if (frames.empty() || frames.front().function.empty()) {
    if (object->LookupSymbol(addr, &hit)) {
      if (frames.empty()) frames.emplace_back();
      rename(frames.front(), hit.name);
      // No line: binutils names the source file of the symbol table's STT_FILE entry.
      if (frames.front().file.empty() && hit.file != nullptr) frames.front().file = hit.file;
    }
  } else if (!frames.front().has_linkage) {
    DwarfFrame& f = frames.front();
    if (object->looked_up.insert(f.die).second) {
      if (object->LookupSymbol(addr, &hit)) {
        if (hit.value == f.function_entry) object->renamed[f.die] = hit.name;
        rename(f, hit.name);
      }
    } else if (auto it = object->renamed.find(f.die); it != object->renamed.end()) {
      rename(f, it->second);
    }
  }
  for (size_t i = 1; i < frames.size(); ++i) {
    DwarfFrame& f = frames[i];
    if (f.has_linkage) continue;
    if (auto it = object->renamed.find(f.die); it != object->renamed.end()) rename(f, it->second);
  }
  return frames;
}

std::string Demangled(const DwarfFrame& frame);

void PrintAddr2line(const Options& o, Object* object, uint64_t addr) {
  if (o.print_address) std::printf("0x%016" PRIx64 "\n", addr);
  std::vector<DwarfFrame> frames =
      object != nullptr ? FramesAt(object, addr, true) : std::vector<DwarfFrame>();
  if (frames.empty()) frames.emplace_back();
  size_t count = o.inlines ? frames.size() : 1;
  for (size_t i = 0; i < count; ++i) {
    const DwarfFrame& f = frames[i];
    if (o.functions) {
      std::string name = o.demangle ? Demangled(f) : f.linkage;
      std::printf("%s\n", name.empty() ? "??" : name.c_str());
    }
    if (f.file.empty()) {
      std::printf(f.function.empty() ? "??:0\n" : "??:?\n");  // as binutils: "?" for a found name
    } else if (f.line == 0) {
      std::printf("%s:?\n", f.file.c_str());
    } else if (frames[0].discriminator != 0) {
      // binutils prints the line's discriminator on every frame of the inline chain.
      std::printf("%s:%d (discriminator %u)\n", f.file.c_str(), f.line, frames[0].discriminator);
    } else {
      std::printf("%s:%d\n", f.file.c_str(), f.line);
    }
  }
}

void PrintModuleOffset(const Options& o, const std::string& input, Object* object, uint64_t offset,
                       const std::string& module) {
  std::vector<DwarfFrame> frames =
      object != nullptr ? FramesAt(object, offset, false) : std::vector<DwarfFrame>();
  size_t count = o.inlines ? frames.size() : std::min<size_t>(frames.size(), 1);
  if (o.json) {
    std::printf("{\"input\":%s,\"module\":%s,\"offset\":\"0x%" PRIx64 "\",\"frames\":[",
                JsonString(input).c_str(), JsonString(module).c_str(), offset);
    for (size_t i = 0; i < count; ++i) {
      const DwarfFrame& f = frames[i];
      std::printf("%s{\"function\":%s,\"file\":%s,\"line\":%d,\"column\":%d,\"inlined\":%s}",
                  i ? "," : "", JsonString(Demangled(f)).c_str(), JsonString(f.file).c_str(),
                  f.line, f.column, f.inlined ? "true" : "false");
    }
    std::printf("]}\n");
    return;
  }
  if (count == 0) {
    std::printf("%s: ?? (%s+0x%" PRIx64 ")\n", input.c_str(), module.c_str(), offset);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const DwarfFrame& f = frames[i];
    std::string name = Demangled(f);
    std::printf("%s%s%s", i == 0 ? "" : "  ", name.empty() ? "??" : name.c_str(),
                f.inlined ? " (inlined)" : "");
    if (!f.file.empty()) std::printf(" at %s:%d:%d", f.file.c_str(), f.line, f.column);
    std::printf(" (%s+0x%" PRIx64 ")\n", module.c_str(), offset);
  }
}

// A file-backed mapping of a maps text: "lo-hi perms offset dev inode path".
struct MapEntry {
  uint64_t lo, hi, offset;
  std::string path;
};

std::vector<MapEntry> ReadMaps(const std::string& file) {
  std::vector<MapEntry> entries;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(words >> range >> perms >> offset >> dev >> inode)) continue;
    std::getline(words >> std::ws, path);
    size_t dash = range.find('-');
    if (dash == std::string::npos || path.empty() || path[0] != '/') continue;
    entries.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                       std::stoull(range.substr(dash + 1), nullptr, 16),
                       std::stoull(offset, nullptr, 16), path});
  }
  return entries;
}

}  // namespace

namespace {
std::string Demangled(const DwarfFrame& frame) {
  // The DWARF name when it has one; the symbol table's name (mangled) otherwise.
  if (frame.function != frame.linkage) return frame.function;
  return stackwalk::internal::Demangle(frame.linkage.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--addr2line") {
      o.addr2line = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--inlines") {
      o.inlines = true;
    } else if (a == "--debug-root" && i + 1 < argc) {
      o.debug_root = argv[++i];
    } else if (a == "--pid" && i + 1 < argc) {
      o.maps = std::string("/proc/") + argv[++i] + "/maps";
    } else if (a == "--maps" && i + 1 < argc) {
      o.maps = argv[++i];
    } else if (a == "-e" && i + 1 < argc) {
      o.file = argv[++i];
    } else if (a.size() > 1 && a[0] == '-' && a[1] != '-' && o.addr2line) {
      for (size_t k = 1; k < a.size(); ++k) {
        switch (a[k]) {
          case 'a': o.print_address = true; break;
          case 'f': o.functions = true; break;
          case 'C': o.demangle = true; break;
          case 'i': o.inlines = true; break;
          default: return Usage();
        }
      }
    } else if (a[0] == '-') {
      return Usage();
    } else {
      o.inputs.push_back(a);
    }
  }
  if (o.addr2line && o.file.empty()) o.file = "a.out";
  std::map<std::string, std::unique_ptr<Object>> cache;
  if (o.inputs.empty()) {
    for (std::string line; std::getline(std::cin, line);) {
      if (!line.empty()) o.inputs.push_back(line);
    }
  }
  for (const std::string& input : o.inputs) {
    if (o.addr2line) {
      uint64_t addr = 0;
      Object* object = ObjectFor(o.file, o.debug_root, &cache);
      if (!ParseHex(input, &addr)) {
        addr = 0;
        object = nullptr;
      }
      PrintAddr2line(o, object, addr);  // stdout is flushed at exit: the input was read whole
      continue;
    }
    if (!o.maps.empty()) {
      // An absolute address: its mapping's file, then the file offset's link-time address.
      static const std::vector<MapEntry> maps = ReadMaps(o.maps);
      uint64_t addr = 0;
      const MapEntry* hit = nullptr;
      if (ParseHex(input, &addr)) {
        for (const MapEntry& m : maps) {
          if (addr >= m.lo && addr < m.hi) hit = &m;
        }
      }
      Object* object = hit != nullptr ? ObjectFor(hit->path, o.debug_root, &cache) : nullptr;
      uint64_t link_address = 0;
      if (object == nullptr || !object->has_file ||
          !object->file.FileOffsetToAddress(addr - hit->lo + hit->offset, &link_address)) {
        std::printf("%s: ?? (not in a mapped file)\n", input.c_str());
        continue;
      }
      PrintModuleOffset(o, input, object, link_address, hit->path);
      continue;
    }
    size_t plus = input.rfind('+');
    uint64_t offset = 0;
    if (plus == std::string::npos || !ParseHex(input.substr(plus + 1), &offset)) {
      std::fprintf(stderr, "stackwalk-symbolize: expected MODULE+OFFSET, got %s\n", input.c_str());
      continue;
    }
    std::string module = input.substr(0, plus);
    PrintModuleOffset(o, input, ObjectFor(module, o.debug_root, &cache), offset, module);
  }
  return 0;
}
