// stackwalk-symbolize: names addresses of an ELF file with function, file:line:column and the
// inline chain, from its DWARF (or its separate debug file).
//
//   stackwalk-symbolize [--json] [--inlines] [--debug-root DIR] MODULE+OFFSET...
//   stackwalk-symbolize [--json] [--inlines] (--pid PID | --maps FILE) ADDR...
//   stackwalk-symbolize --addr2line [-e FILE] [-a] [-f] [-C] [-i] [-p] [-s] [-j SECTION] [ADDR...]
//   stackwalk-symbolize --obj FILE [--output-style=JSON] [ADDR...]     (llvm-symbolizer's style)
//
// With --pid or --maps, absolute addresses are resolved against that process's memory map
// (/proc/PID/maps, or a copy of one saved with a crash report). The --addr2line mode prints
// the same lines as binutils' addr2line with the same flags, and --obj / --llvm-symbolizer
// what llvm-symbolizer prints, so that it drops into scripts; without addresses as arguments
// they are read from stdin as each tool reads them (tools/symbolize_input.h).
//
// Nothing fails silently: a file that cannot be read is named with the reason on stderr; the
// exit status is 1 if no request could be read (addr2line style: if its one file cannot be),
// 2 for a usage error, and 1 if the output could not be written.

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "format/frame_json.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf_module.h"
#include "symbolize/elf_image.h"
#include "symbolize/object_file.h"
#include "symbolize_input.h"

namespace {

using stackwalk::internal::DwarfFrame;
using stackwalk::internal::JsonString;
using stackwalk::internal::SymbolHit;
using stackwalk::tools::Request;
using stackwalk::tools::Style;
using stackwalk::tools::SymbolizeOptions;

constexpr char kProgram[] = "stackwalk-symbolize";

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
  // A frame named by the symbol table alone starts where the symbol does.
  auto from_symbol = [&]() {
    if (frames.empty()) {
      frames.emplace_back();
      frames.front().function_entry = hit.value;
    }
  };
  if (!binutils_names) {
    if ((frames.empty() || frames.front().function.empty()) && object->LookupSymbol(addr, &hit)) {
      from_symbol();
      rename(frames.front(), hit.name);
    }
    return frames;
  }
  if (frames.empty() || frames.front().function.empty()) {
    if (object->LookupSymbol(addr, &hit)) {
      from_symbol();
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

std::string Demangled(const DwarfFrame& frame) {
  // The DWARF name when it has one; the symbol table's name (mangled) otherwise.
  if (frame.function != frame.linkage) return frame.function;
  return stackwalk::internal::Demangle(frame.linkage.c_str());
}

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Why `object` cannot be used, or "" if it can.
std::string ErrorOf(const Object* object) { return object->has_file ? "" : object->error; }

void Complain(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "%s: %s: %s\n", kProgram, file.c_str(), why.c_str());
}

std::string ReadAll(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class Tool {
 public:
  explicit Tool(const SymbolizeOptions& o) : o_(o) {}

  // Returns the exit status.
  int Run() {
    switch (o_.style) {
      case Style::kAddr2line:
        return RunAddr2line();
      case Style::kLlvm:
        return RunLlvm();
      case Style::kStackwalk:
        break;
    }
    return RunStackwalk();
  }

 private:
  Object* ObjectAt(const std::string& path) {
    Object* object = ObjectFor(path, o_.debug_root, &cache_);
    // Each file's trouble is told once, however many addresses it was asked for.
    std::string error = ErrorOf(object);
    if (!error.empty() && complained_.insert(path).second) Complain(path, error);
    return object;
  }

  // --- binutils addr2line ---
  int RunAddr2line() {
    Object* object = ObjectAt(o_.exe);
    if (!object->has_file) return 1;  // as binutils: nothing printed, status 1
    uint64_t section_addr = 0, section_size = 0;
    if (!o_.section.empty() &&
        !object->file.FindSection(o_.section.c_str(), &section_addr, &section_size)) {
      Complain(o_.exe, "cannot find section " + o_.section);
      return 1;
    }
    std::vector<std::string> inputs = o_.inputs;
    if (inputs.empty()) inputs = stackwalk::tools::SplitAddr2lineInput(ReadAll(std::cin));
    for (const std::string& input : inputs) {
      const uint64_t pc = stackwalk::tools::ParseAddr2lineAddress(input);
      if (o_.section.empty()) {
        PrintAddr2line(object, pc, pc);
      } else {
        // -j: an offset into the section, printed as given.
        PrintAddr2line(pc < section_size ? object : nullptr, section_addr + pc, pc);
      }
    }
    return 0;
  }

  void PrintAddr2line(Object* object, uint64_t addr, uint64_t shown) {
    if (o_.addresses) std::printf("0x%016" PRIx64 "%s", shown, o_.pretty ? ": " : "\n");
    std::vector<DwarfFrame> frames =
        object != nullptr ? FramesAt(object, addr, true) : std::vector<DwarfFrame>();
    if (frames.empty() || (frames[0].function.empty() && frames[0].file.empty())) {
      if (o_.functions) std::printf(o_.pretty ? "?? " : "??\n");
      std::printf("??:0\n");
      return;
    }
    size_t count = o_.inlines ? frames.size() : 1;
    for (size_t i = 0; i < count; ++i) {
      const DwarfFrame& f = frames[i];
      if (i > 0 && o_.pretty) std::printf(" (inlined by) ");
      if (o_.functions) {
        std::string name = o_.demangle ? Demangled(f) : f.linkage;
        std::printf("%s%s", name.empty() ? "??" : name.c_str(), o_.pretty ? " at " : "\n");
      }
      std::string file = f.file.empty() ? "??" : o_.basenames ? Basename(f.file) : f.file;
      if (f.line == 0) {
        std::printf("%s:?\n", file.c_str());
      } else if (frames[0].discriminator != 0) {
        // binutils prints the line's discriminator on every frame of the inline chain.
        std::printf("%s:%d (discriminator %u)\n", file.c_str(), f.line, frames[0].discriminator);
      } else {
        std::printf("%s:%d\n", file.c_str(), f.line);
      }
    }
  }

  // --- llvm-symbolizer ---
  int RunLlvm() {
    std::vector<std::string> lines = o_.inputs;
    const bool from_arguments = !lines.empty();
    if (!from_arguments) {
      std::string text = ReadAll(std::cin);
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        lines.push_back(text.substr(at, end - at));
        at = end + 1;
      }
    }
    // llvm-symbolizer prints one JSON array for the addresses of its command line, one object
    // per line for those of stdin.
    if (o_.json && from_arguments) std::printf("[");
    bool first = true;
    for (const std::string& line : lines) {
      Request r;
      if (!stackwalk::tools::ParseLlvmLine(line, o_.has_exe, &r) ||
          r.kind != Request::Kind::kCode) {
        // llvm-symbolizer echoes what it cannot read (DATA requests are not answered here).
        if (r.kind == Request::Kind::kData) {
          std::fprintf(stderr, "%s: DATA requests are not supported: %s\n", kProgram,
                       line.c_str());
        }
        ++requests_;
        if (!o_.json) {
          std::printf("%s\n", line.c_str());
        } else {
          // As llvm-symbolizer: the line's first word stands for the module.
          std::string word = line.substr(0, line.find_first_of(" \r\n"));
          if (from_arguments && !first) std::printf(",");
          std::printf("{\"Error\":{\"Message\":%s},\"ModuleName\":%s}%s",
                      JsonString("unable to parse arguments: " + line).c_str(),
                      JsonString(word).c_str(), from_arguments ? "" : "\n");
          first = false;
        }
        continue;
      }
      const std::string module = o_.has_exe ? o_.exe : r.module;
      ++requests_;
      Object* object = ObjectAt(module);
      std::string error = ErrorOf(object);
      if (error.empty()) ++answered_;
      if (o_.json) {
        if (from_arguments && !first) std::printf(",");
        PrintLlvmJson(object, module, r.address, error);
        if (!from_arguments) std::printf("\n");
      } else {
        PrintLlvmText(error.empty() ? object : nullptr, r.address);
      }
      first = false;
    }
    if (o_.json && from_arguments) std::printf("]\n");
    return requests_ > 0 && answered_ == 0 ? 1 : 0;
  }

  // The frames llvm-symbolizer prints: the inline chain (without --inlines, the innermost
  // frame alone), and as LLVM 14 does when it prints names, the outermost frame named by the
  // symbol table where it covers the address (a cold part is "f() [clone .cold]" there), which
  // gives the start address.
  std::vector<DwarfFrame> LlvmFrames(Object* object, uint64_t addr) {
    std::vector<DwarfFrame> frames =
        object != nullptr ? FramesAt(object, addr, false) : std::vector<DwarfFrame>();
    if (frames.empty()) frames.emplace_back();
    if (!o_.inlines && frames.size() > 1) frames.resize(1);
    SymbolHit hit;
    if (o_.functions && object != nullptr && object->LookupSymbol(addr, &hit)) {
      DwarfFrame& outer = frames.back();
      outer.linkage = hit.name;
      outer.function = stackwalk::internal::Demangle(hit.name);
      outer.function_entry = hit.value;
      outer.entry_is_low_pc = true;
      outer.inlined = false;
      // No line: the source file of the symbol table's STT_FILE entry.
      if (outer.file.empty() && hit.file != nullptr) outer.file = hit.file;
    }
    return frames;
  }

  std::string LlvmName(const DwarfFrame& f) const {
    return o_.demangle ? Demangled(f) : f.linkage;
  }

  void PrintLlvmText(Object* object, uint64_t addr) {
    if (o_.addresses) std::printf("0x%" PRIx64 "\n", addr);
    for (const DwarfFrame& f : LlvmFrames(object, addr)) {
      if (o_.functions) {
        std::string name = LlvmName(f);
        std::printf("%s\n", name.empty() ? "??" : name.c_str());
      }
      std::string file = f.file.empty() ? "??" : o_.basenames ? Basename(f.file) : f.file;
      std::printf("%s:%d:%d\n", file.c_str(), f.line, f.column);
    }
    std::printf("\n");
  }

  void PrintLlvmJson(Object* object, const std::string& module, uint64_t addr,
                     const std::string& error) {
    std::printf("{\"Address\":\"0x%" PRIx64 "\",", addr);
    if (!error.empty()) {
      std::printf("\"Error\":{\"Message\":%s},\"ModuleName\":%s}", JsonString(error).c_str(),
                  JsonString(module).c_str());
      return;
    }
    std::printf("\"ModuleName\":%s,\"Symbol\":[", JsonString(module).c_str());
    bool first = true;
    for (const DwarfFrame& f : LlvmFrames(object, addr)) {
      const bool named = !f.function.empty();
      // As LLVM: a function's start; an inlined call's where it has one DW_AT_low_pc.
      std::string start =
          named && (!f.inlined || f.entry_is_low_pc) ? "0x" + Hex(f.function_entry) : "";
      std::string file = o_.basenames ? Basename(f.file) : f.file;
      std::printf("%s{\"Column\":%d,\"Discriminator\":%u,\"FileName\":%s,\"FunctionName\":%s,"
                  "\"Line\":%d,\"StartAddress\":\"%s\",\"StartFileName\":%s,\"StartLine\":%d}",
                  first ? "" : ",", f.column, f.discriminator, JsonString(file).c_str(),
                  JsonString(o_.functions ? LlvmName(f) : "").c_str(), f.line, start.c_str(),
                  JsonString(f.decl_file).c_str(), f.decl_line);
      first = false;
    }
    std::printf("]}");
  }

  static std::string Hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "%" PRIx64, v);
    return buf;
  }

  // --- MODULE+OFFSET, or absolute addresses through a process map ---
  int RunStackwalk() {
    const bool absolute = !o_.maps.empty();
    std::vector<stackwalk::tools::MapsLine> maps;
    if (absolute) {
      std::ifstream in(o_.maps);
      if (!in) {
        const int err = errno;
        if (!o_.pid.empty()) {
          Complain("--pid " + o_.pid, "cannot read " + o_.maps + ": " + std::strerror(err) +
                                          (err == ENOENT ? " (no such process)" : ""));
        } else {
          Complain(o_.maps, std::strerror(err));
        }
        return 1;
      }
      for (std::string line; std::getline(in, line);) {
        stackwalk::tools::MapsLine m;
        if (stackwalk::tools::ParseMapsLine(line, &m)) maps.push_back(std::move(m));
      }
    }
    std::vector<std::string> words = o_.inputs;
    if (words.empty()) words = stackwalk::tools::SplitWords(ReadAll(std::cin));
    for (const std::string& input : words) {
      ++requests_;
      Request r;
      if (!stackwalk::tools::ParseStackwalkWord(input, absolute, &r)) {
        std::fprintf(stderr, "%s: expected %s, got '%s'\n", kProgram,
                     absolute ? "a hex address" : "MODULE+OFFSET", input.c_str());
        std::printf("%s: ?? (not %s)\n", input.c_str(), absolute ? "an address" : "MODULE+OFFSET");
        continue;
      }
      if (absolute) {
        // An absolute address: its mapping's file, then the file offset's link-time address.
        const stackwalk::tools::MapsLine* hit = nullptr;
        for (const auto& m : maps) {
          if (r.address >= m.lo && r.address < m.hi) hit = &m;
        }
        if (hit == nullptr) {
          std::printf("%s: ?? (not in a mapped file)\n", input.c_str());
          continue;
        }
        Object* object = ObjectAt(hit->path);
        uint64_t link_address = 0;
        std::string error = ErrorOf(object);
        if (error.empty() &&
            !object->file.FileOffsetToAddress(r.address - hit->lo + hit->offset, &link_address)) {
          error = "no segment holds file offset 0x" + Hex(r.address - hit->lo + hit->offset);
        }
        if (!error.empty()) {
          PrintUnreadable(input, hit->path, r.address - hit->lo + hit->offset, error);
          continue;
        }
        ++answered_;
        PrintModuleOffset(input, object, link_address, hit->path);
        continue;
      }
      Object* object = ObjectAt(r.module);
      std::string error = ErrorOf(object);
      if (!error.empty()) {
        PrintUnreadable(input, r.module, r.address, error);
        continue;
      }
      ++answered_;
      PrintModuleOffset(input, object, r.address, r.module);
    }
    return requests_ > 0 && answered_ == 0 ? 1 : 0;
  }

  void PrintUnreadable(const std::string& input, const std::string& module, uint64_t offset,
                       const std::string& error) {
    if (o_.json) {
      nlohmann::ordered_json answer;
      answer["input"] = input;
      answer["module"] = module;
      answer["offset"] = "0x" + Hex(offset);
      answer["error"] = error;
      answer["frames"] = nlohmann::ordered_json::array();
      std::printf("%s\n", stackwalk::internal::DumpJson(answer).c_str());
    } else {
      std::printf("%s: ?? (%s+0x%" PRIx64 ": %s)\n", input.c_str(), module.c_str(), offset,
                  error.c_str());
    }
  }

  void PrintModuleOffset(const std::string& input, Object* object, uint64_t offset,
                         const std::string& module) {
    std::vector<DwarfFrame> frames = FramesAt(object, offset, false);
    size_t count = o_.inlines ? frames.size() : std::min<size_t>(frames.size(), 1);
    if (o_.json) {
      // The frames in the one frame layout (format/frame_json.h): the link-time address is
      // both the pc and the module offset; one request, index 0.
      nlohmann::ordered_json answer;
      answer["input"] = input;
      answer["module"] = module;
      answer["offset"] = "0x" + Hex(offset);
      answer["frames"] = nlohmann::ordered_json::array();
      for (size_t i = 0; i < count; ++i) {
        stackwalk::SymbolizedFrame f;
        f.pc = offset;
        f.function = Demangled(frames[i]);
        f.file = frames[i].file;
        f.line = frames[i].line;
        f.column = frames[i].column;
        f.inlined = frames[i].inlined;
        f.module = module;
        f.module_offset = offset;
        answer["frames"].push_back(stackwalk::internal::FrameJson(f));
      }
      std::printf("%s\n", stackwalk::internal::DumpJson(answer).c_str());
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

  const SymbolizeOptions& o_;
  std::map<std::string, std::unique_ptr<Object>> cache_;
  std::set<std::string> complained_;
  size_t requests_ = 0;
  size_t answered_ = 0;
};

// Flushes stdout; false (with a message) if what was printed could not all be written.
bool FlushedStdout() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  std::fprintf(stderr, "%s: write error: %s\n", kProgram, std::strerror(errno));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  stackwalk::tools::CommandLine command = stackwalk::tools::ParseCommandLine(argc, argv);
  if (command.exit_status >= 0) {
    if (command.exit_status == 0) {
      std::fputs(command.message.c_str(), stdout);
      return FlushedStdout() ? 0 : 1;
    }
    std::fputs(command.message.c_str(), stderr);
    return command.exit_status;
  }
  Tool tool(command.options);
  int status = tool.Run();  // stdout is flushed at exit: the input was read whole
  if (!FlushedStdout()) status = 1;
  return status;
}
