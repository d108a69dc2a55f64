// stackwalk-symbolize: names addresses of an ELF file with function, file:line:column and the
// inline chain, from its DWARF (or its separate debug file), through the public
// stackwalk::Symbolizer (include/stackwalk/symbolizer.h: SymbolizeFile and its FrameNaming).
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
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/frame_json.h"
#include "stackwalk/symbolizer.h"
#include "symbolize_input.h"

namespace {

using stackwalk::FileQuery;
using stackwalk::FrameNaming;
using stackwalk::SymbolizedFrame;
using stackwalk::tools::Request;
using stackwalk::tools::Style;
using stackwalk::tools::SymbolizeOptions;
using Json = nlohmann::ordered_json;

constexpr char kProgram[] = "stackwalk-symbolize";

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void Complain(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "%s: %s: %s\n", kProgram, file.c_str(), why.c_str());
}

std::string ReadAll(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%" PRIx64, v);
  return buf;
}

// A status message without the "PATH: " the symbolizer puts in front.
std::string Why(const absl::Status& status, const std::string& path) {
  std::string message(status.message());
  if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
  return message;
}

stackwalk::SymbolizerOptions OptionsOf(const SymbolizeOptions& o) {
  stackwalk::SymbolizerOptions options;
  if (!o.debug_root.empty()) options.debug_root = o.debug_root;
  return options;
}

class Tool {
 public:
  explicit Tool(const SymbolizeOptions& o) : o_(o), symbolizer_(OptionsOf(o)) {}

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
  // Why `path` cannot be read ("" if it can). Each file's trouble is told once, however many
  // addresses it was asked for.
  std::string ErrorOf(const std::string& path) {
    auto it = errors_.find(path);
    if (it == errors_.end()) {
      auto probe = symbolizer_.SymbolizeFile(path, 0);
      it = errors_.emplace(path, probe.ok() ? "" : Why(probe.status(), path)).first;
      if (!it->second.empty()) Complain(path, it->second);
    }
    return it->second;
  }

  // The frames at link-time `address` of the readable file `path`: at least one.
  std::vector<SymbolizedFrame> FramesOf(const std::string& path, uint64_t address,
                                        const FileQuery& query) {
    auto frames = symbolizer_.SymbolizeFile(path, address, query);
    if (!frames.ok()) {
      if (frames.status().code() == absl::StatusCode::kResourceExhausted) {
        Complain(path, Why(frames.status(), path));
      }
      return {SymbolizedFrame()};
    }
    return *std::move(frames);
  }

  // --- binutils addr2line ---
  int RunAddr2line() {
    if (!ErrorOf(o_.exe).empty()) return 1;  // as binutils: nothing printed, status 1
    uint64_t section_addr = 0, section_size = 0;
    if (!o_.section.empty() &&
        !symbolizer_.FindSection(o_.exe, o_.section, &section_addr, &section_size).ok()) {
      Complain(o_.exe, "cannot find section " + o_.section);
      return 1;
    }
    std::vector<std::string> inputs = o_.inputs;
    if (inputs.empty()) inputs = stackwalk::tools::SplitAddr2lineInput(ReadAll(std::cin));
    for (const std::string& input : inputs) {
      const uint64_t pc = stackwalk::tools::ParseAddr2lineAddress(input);
      if (o_.section.empty()) {
        PrintAddr2line(true, pc, pc);
      } else {
        // -j: an offset into the section, printed as given.
        PrintAddr2line(pc < section_size, section_addr + pc, pc);
      }
    }
    return 0;
  }

  void PrintAddr2line(bool in_file, uint64_t addr, uint64_t shown) {
    if (o_.addresses) std::printf("0x%016" PRIx64 "%s", shown, o_.pretty ? ": " : "\n");
    FileQuery query;
    query.naming = FrameNaming::kAddr2line;
    query.innermost_only = !o_.inlines;
    std::vector<SymbolizedFrame> frames =
        in_file ? FramesOf(o_.exe, addr, query) : std::vector<SymbolizedFrame>{SymbolizedFrame()};
    if (frames[0].function.empty() && frames[0].file.empty()) {
      if (o_.functions) std::printf(o_.pretty ? "?? " : "??\n");
      std::printf("??:0\n");
      return;
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      const SymbolizedFrame& f = frames[i];
      if (i > 0 && o_.pretty) std::printf(" (inlined by) ");
      if (o_.functions) {
        const std::string& name = o_.demangle ? f.function : f.linkage_name;
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
          Json answer;
          answer["Error"]["Message"] = "unable to parse arguments: " + line;
          answer["ModuleName"] = line.substr(0, line.find_first_of(" \r\n"));
          if (from_arguments && !first) std::printf(",");
          std::printf("%s%s", stackwalk::internal::DumpJson(answer).c_str(),
                      from_arguments ? "" : "\n");
          first = false;
        }
        continue;
      }
      const std::string module = o_.has_exe ? o_.exe : r.module;
      ++requests_;
      std::string error = ErrorOf(module);
      if (error.empty()) ++answered_;
      std::vector<SymbolizedFrame> frames = LlvmFrames(error.empty(), module, r.address);
      if (o_.json) {
        if (from_arguments && !first) std::printf(",");
        PrintLlvmJson(frames, module, r.address, error);
        if (!from_arguments) std::printf("\n");
      } else {
        PrintLlvmText(frames, r.address);
      }
      first = false;
    }
    if (o_.json && from_arguments) std::printf("]\n");
    return requests_ > 0 && answered_ == 0 ? 1 : 0;
  }

  // The frames llvm-symbolizer prints (FrameNaming::kLlvmSymbolizer); one unknown frame for a
  // file that cannot be read.
  std::vector<SymbolizedFrame> LlvmFrames(bool readable, const std::string& module, uint64_t addr) {
    if (!readable) return {SymbolizedFrame()};
    FileQuery query;
    query.naming = FrameNaming::kLlvmSymbolizer;
    query.innermost_only = !o_.inlines;
    query.name_functions = o_.functions;
    return FramesOf(module, addr, query);
  }

  std::string LlvmName(const SymbolizedFrame& f) const {
    return o_.demangle ? f.function : f.linkage_name;
  }

  void PrintLlvmText(const std::vector<SymbolizedFrame>& frames, uint64_t addr) {
    if (o_.addresses) std::printf("0x%" PRIx64 "\n", addr);
    for (const SymbolizedFrame& f : frames) {
      if (o_.functions) {
        std::string name = LlvmName(f);
        std::printf("%s\n", name.empty() ? "??" : name.c_str());
      }
      std::string file = f.file.empty() ? "??" : o_.basenames ? Basename(f.file) : f.file;
      std::printf("%s:%d:%d\n", file.c_str(), f.line, f.column);
    }
    std::printf("\n");
  }

  void PrintLlvmJson(const std::vector<SymbolizedFrame>& frames, const std::string& module,
                     uint64_t addr, const std::string& error) {
    Json answer;
    answer["Address"] = "0x" + Hex(addr);
    if (!error.empty()) {
      answer["Error"]["Message"] = error;
      answer["ModuleName"] = module;
      std::printf("%s", stackwalk::internal::DumpJson(answer).c_str());
      return;
    }
    answer["ModuleName"] = module;
    answer["Symbol"] = Json::array();
    for (const SymbolizedFrame& f : frames) {
      const bool named = !f.function.empty();
      Json symbol;
      symbol["Column"] = f.column;
      symbol["Discriminator"] = f.discriminator;
      symbol["FileName"] = o_.basenames ? Basename(f.file) : f.file;
      symbol["FunctionName"] = o_.functions ? LlvmName(f) : "";
      symbol["Line"] = f.line;
      // As LLVM: a function's start; an inlined call's where it has one DW_AT_low_pc.
      symbol["StartAddress"] =
          named && (!f.inlined || f.function_start_is_low_pc) ? "0x" + Hex(f.function_start) : "";
      symbol["StartFileName"] = f.decl_file;
      symbol["StartLine"] = f.decl_line;
      answer["Symbol"].push_back(std::move(symbol));
    }
    std::printf("%s", stackwalk::internal::DumpJson(answer).c_str());
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
        const uint64_t file_offset = r.address - hit->lo + hit->offset;
        std::string error = ErrorOf(hit->path);
        uint64_t link_address = 0;
        if (error.empty()) {
          auto address = symbolizer_.FileOffsetToAddress(hit->path, file_offset);
          if (address.ok()) {
            link_address = *address;
          } else {
            error = Why(address.status(), hit->path);
          }
        }
        if (!error.empty()) {
          PrintUnreadable(input, hit->path, file_offset, error);
          continue;
        }
        ++answered_;
        PrintModuleOffset(input, link_address, hit->path);
        continue;
      }
      std::string error = ErrorOf(r.module);
      if (!error.empty()) {
        PrintUnreadable(input, r.module, r.address, error);
        continue;
      }
      ++answered_;
      PrintModuleOffset(input, r.address, r.module);
    }
    return requests_ > 0 && answered_ == 0 ? 1 : 0;
  }

  void PrintUnreadable(const std::string& input, const std::string& module, uint64_t offset,
                       const std::string& error) {
    if (o_.json) {
      Json answer;
      answer["input"] = input;
      answer["module"] = module;
      answer["offset"] = "0x" + Hex(offset);
      answer["error"] = error;
      answer["frames"] = Json::array();
      std::printf("%s\n", stackwalk::internal::DumpJson(answer).c_str());
    } else {
      std::printf("%s: ?? (%s+0x%" PRIx64 ": %s)\n", input.c_str(), module.c_str(), offset,
                  error.c_str());
    }
  }

  void PrintModuleOffset(const std::string& input, uint64_t offset, const std::string& module) {
    FileQuery query;  // the library's naming (FrameNaming::kStackwalk)
    query.innermost_only = !o_.inlines;
    std::vector<SymbolizedFrame> frames = FramesOf(module, offset, query);
    // Nothing known at all: no frame to show.
    if (frames.size() == 1 && frames[0].function.empty() && frames[0].file.empty()) frames.clear();
    if (o_.json) {
      // The frames in the one frame layout (format/frame_json.h): the link-time address is
      // both the pc and the module offset; one request, index 0.
      Json answer;
      answer["input"] = input;
      answer["module"] = module;
      answer["offset"] = "0x" + Hex(offset);
      answer["frames"] = stackwalk::internal::FramesJsonArray(frames);
      std::printf("%s\n", stackwalk::internal::DumpJson(answer).c_str());
      return;
    }
    if (frames.empty()) {
      std::printf("%s: ?? (%s+0x%" PRIx64 ")\n", input.c_str(), module.c_str(), offset);
      return;
    }
    for (size_t i = 0; i < frames.size(); ++i) {
      const SymbolizedFrame& f = frames[i];
      std::printf("%s%s%s", i == 0 ? "" : "  ", f.function.empty() ? "??" : f.function.c_str(),
                  f.inlined ? " (inlined)" : "");
      if (!f.file.empty()) std::printf(" at %s:%d:%d", f.file.c_str(), f.line, f.column);
      std::printf(" (%s+0x%" PRIx64 ")\n", module.c_str(), offset);
    }
  }

  const SymbolizeOptions& o_;
  stackwalk::Symbolizer symbolizer_;
  std::map<std::string, std::string> errors_;  // by path: why it cannot be read, or ""
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
