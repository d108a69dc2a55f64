#include "symbolize_input.h"

#include <getopt.h>

#include <cctype>
#include <cstring>

#include "core/proc_maps.h"

#ifndef STACKWALK_VERSION
#define STACKWALK_VERSION "unknown"
#endif

namespace stackwalk::tools {
namespace {

constexpr char kProgram[] = "stackwalk-symbolize";

// Long options without a short form.
enum : int {
  kAddr2line = 256,
  kLlvm,
  kObj,
  kJson,
  kDebugRoot,
  kPid,
  kMaps,
  kOutputStyle,
  kNoInlines,
  kNoDemangle,
};

const option kLongOptions[] = {
    {"addresses", no_argument, nullptr, 'a'},
    {"demangle", optional_argument, nullptr, 'C'},
    {"exe", required_argument, nullptr, 'e'},
    {"functions", optional_argument, nullptr, 'f'},
    {"help", no_argument, nullptr, 'h'},
    {"inlines", no_argument, nullptr, 'i'},
    {"inlining", no_argument, nullptr, 'i'},
    {"section", required_argument, nullptr, 'j'},
    {"pretty-print", no_argument, nullptr, 'p'},
    {"no-recurse-limit", no_argument, nullptr, 'r'},
    {"recurse-limit", no_argument, nullptr, 'R'},
    {"basenames", no_argument, nullptr, 's'},
    {"version", no_argument, nullptr, 'V'},
    {"addr2line", no_argument, nullptr, kAddr2line},
    {"llvm-symbolizer", no_argument, nullptr, kLlvm},
    {"obj", required_argument, nullptr, kObj},
    {"json", no_argument, nullptr, kJson},
    {"debug-root", required_argument, nullptr, kDebugRoot},
    {"pid", required_argument, nullptr, kPid},
    {"maps", required_argument, nullptr, kMaps},
    {"output-style", required_argument, nullptr, kOutputStyle},
    {"no-inlines", no_argument, nullptr, kNoInlines},
    {"no-demangle", no_argument, nullptr, kNoDemangle},
    {nullptr, 0, nullptr, 0},
};
constexpr char kShortOptions[] = ":aCe:fhij:prRsvV";  // short -C, -f take no argument (binutils)

CommandLine UsageError(const std::string& what) {
  CommandLine c;
  c.exit_status = 2;
  c.message = std::string(kProgram) + ": " + what + "\nTry '" + kProgram + " --help'.\n";
  return c;
}

// The option as the user wrote it, for messages: "--exe" or "-e".
std::string Spelling(int code, const char* arg) {
  if (arg != nullptr && arg[0] == '-' && arg[1] == '-') {
    const char* eq = std::strchr(arg, '=');
    return eq != nullptr ? std::string(arg, static_cast<size_t>(eq - arg)) : std::string(arg);
  }
  return std::string("-") + static_cast<char>(code);
}

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

// An unsigned number in `base` (8, 10 or 16) covering all of `text`, without overflow.
bool ParseWhole(std::string_view text, int base, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    int d;
    if (base == 16 && IsHex(c)) {
      d = HexValue(c);
    } else if (c >= '0' && c < '0' + (base < 10 ? base : 10)) {
      d = c - '0';
    } else {
      return false;
    }
    if (value > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return false;
    value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  *out = value;
  return true;
}

}  // namespace

std::string UsageText() {
  return std::string("usage: ") + kProgram +
         " [--json] [--inlines] [--debug-root DIR] MODULE+OFFSET...\n"
         "       " + kProgram + " [--json] [--inlines] (--pid PID | --maps FILE) ADDR...\n"
         "       " + kProgram + " --addr2line [-e FILE] [-a] [-f] [-C] [-i] [-p] [-s] [-j SECTION] [ADDR...]\n"
         "       " + kProgram + " --obj FILE [--output-style=LLVM|JSON] [-a] [--no-inlines]"
         " [--no-demangle] [--functions=none] [ADDR...]\n"
         "       " + kProgram + " --llvm-symbolizer [...] ['[CODE] FILE ADDR' lines on stdin]\n"
         "Without addresses on the command line they are read from stdin, as each tool reads them.\n"
         "  --addr2line            print what binutils addr2line prints, with its options:\n"
         "    -e, --exe=FILE         the object (default a.out)\n"
         "    -a, --addresses        print each address first\n"
         "    -f, --functions        print function names\n"
         "    -C, --demangle         demangle them\n"
         "    -i, --inlines          print the chain of inlined calls\n"
         "    -p, --pretty-print     one line per frame\n"
         "    -s, --basenames        file names without their directories\n"
         "    -j, --section=NAME     addresses are offsets into section NAME\n"
         "  --llvm-symbolizer, --obj=FILE   print what llvm-symbolizer prints (inlines, functions\n"
         "                         and demangling on); --output-style=JSON for its JSON\n"
         "  --json                 (default style) one JSON object per request\n"
         "  --inlines              (default style) the inlined calls too\n"
         "  --pid=PID, --maps=FILE absolute addresses of a process, through its memory map\n"
         "  --debug-root=DIR       where separate debug files are (default /usr/lib/debug)\n"
         "  -h, --help             this text\n"
         "  -V, --version          the version\n"
         "Exit status: 0 if every request could be read, 1 if a file could not be, 2 for a usage\n"
         "error.\n";
}

CommandLine ParseCommandLine(int argc, char* const* argv) {
  CommandLine result;
  SymbolizeOptions& o = result.options;
  bool addr2line = false, llvm = false, obj = false, help = false, version = false;
  bool no_inlines = false, no_demangle = false, no_functions = false, output_style = false;
  std::string addr2line_only, needs_a_style;  // the first such option seen, for the message
  bool exe = false;
  optind = 0;  // GNU getopt: start over (tests and the fuzzer parse many command lines)
  opterr = 0;  // messages are ours
  for (;;) {
    const int before = optind;
    int code = getopt_long(argc, const_cast<char**>(argv), kShortOptions, kLongOptions, nullptr);
    if (code == -1) break;
    // The argument the option came from (for long options, its spelling).
    const char* spelled = before < argc && optind - 1 >= 0 && optind - 1 < argc ? argv[optind - 1]
                                                                                 : nullptr;
    if (before < argc && argv[before] != nullptr && argv[before][0] == '-' &&
        argv[before][1] == '-') {
      spelled = argv[before];
    }
    switch (code) {
      case '?':
        if (spelled != nullptr && spelled[0] == '-' && spelled[1] == '-') {
          return UsageError(std::string(optopt != 0 ? "option '" : "unrecognized option '") +
                            Spelling(0, spelled) +
                            (optopt != 0 ? "' doesn't allow an argument" : "'"));
        }
        if (optopt != 0) return UsageError(std::string("invalid option -- '") +
                                           static_cast<char>(optopt) + "'");
        return UsageError(std::string("unrecognized option '") +
                          (spelled != nullptr ? spelled : "") + "'");
      case ':':
        if (optopt != 0 && (spelled == nullptr || spelled[1] != '-')) {
          return UsageError(std::string("option requires an argument -- '") +
                            static_cast<char>(optopt) + "'");
        }
        return UsageError(std::string("option '") + (spelled != nullptr ? spelled : "") +
                          "' requires an argument");
      case 'a':
        o.addresses = true;
        if (needs_a_style.empty()) needs_a_style = Spelling(code, spelled);
        break;
      case 'C':
        o.demangle = true;
        if (needs_a_style.empty()) needs_a_style = Spelling(code, spelled);
        break;
      case 'e':
        o.exe = optarg;
        exe = true;
        break;
      case 'f':
        if (optarg != nullptr && std::strcmp(optarg, "none") == 0) {
          no_functions = true;
        } else if (optarg != nullptr && std::strcmp(optarg, "linkage") != 0) {
          // (llvm-symbolizer's "short", names without their parameters, is not offered.)
          return UsageError(std::string("--functions takes linkage or none, not '") + optarg +
                            "'");
        } else {
          o.functions = true;
        }
        if (needs_a_style.empty()) needs_a_style = Spelling(code, spelled);
        break;
      case 'h':
        help = true;
        break;
      case 'i':
        o.inlines = true;
        break;
      case 'j':
        o.section = optarg;
        if (addr2line_only.empty()) addr2line_only = Spelling(code, spelled);
        break;
      case 'p':
        o.pretty = true;
        if (addr2line_only.empty()) addr2line_only = Spelling(code, spelled);
        break;
      case 'r':
      case 'R':
        break;  // binutils' demangler recursion limit: the demangler here has its own
      case 's':
        o.basenames = true;
        if (needs_a_style.empty()) needs_a_style = Spelling(code, spelled);
        break;
      case 'v':
      case 'V':
        version = true;
        break;
      case kAddr2line:
        addr2line = true;
        break;
      case kLlvm:
        llvm = true;
        break;
      case kObj:
        o.exe = optarg;
        obj = true;
        break;
      case kJson:
        o.json = true;
        break;
      case kDebugRoot:
        o.debug_root = optarg;
        break;
      case kPid: {
        uint64_t pid;
        if (!ParseWhole(optarg, 10, &pid) || pid == 0 || pid > 0x7fffffff) {
          return UsageError(std::string("--pid takes a process id, not '") + optarg + "'");
        }
        o.pid = optarg;
        o.maps = std::string("/proc/") + optarg + "/maps";
        break;
      }
      case kMaps:
        o.maps = optarg;
        o.pid.clear();
        break;
      case kOutputStyle:
        if (std::strcmp(optarg, "JSON") == 0) {
          o.json = true;
        } else if (std::strcmp(optarg, "LLVM") == 0) {
          o.json = false;
        } else {
          return UsageError(std::string("--output-style takes LLVM or JSON, not '") + optarg + "'");
        }
        output_style = true;
        break;
      case kNoInlines:
        no_inlines = true;
        break;
      case kNoDemangle:
        no_demangle = true;
        break;
      default:
        return UsageError("unexpected option");
    }
  }
  if (help) {
    result.exit_status = 0;
    result.message = UsageText();
    return result;
  }
  if (version) {
    result.exit_status = 0;
    result.message = std::string(kProgram) + " (stackwalk) " + STACKWALK_VERSION + "\n";
    return result;
  }
  for (int i = optind; i < argc; ++i) o.inputs.emplace_back(argv[i]);
  if (obj) llvm = true;
  if (addr2line && llvm) {
    return UsageError(obj ? "--obj is llvm-symbolizer's option; --addr2line takes -e FILE"
                          : "--addr2line and --llvm-symbolizer exclude each other");
  }
  if ((addr2line || llvm) && !o.maps.empty()) {
    return UsageError(std::string(o.pid.empty() ? "--maps" : "--pid") + " is not an option of " +
                      (addr2line ? "--addr2line" : "--llvm-symbolizer") +
                      " (they name one file's addresses)");
  }
  if (addr2line) {
    o.style = Style::kAddr2line;
    if (o.json) {
      return UsageError(
          "--json is not an addr2line option (--obj FILE --output-style=JSON prints "
          "llvm-symbolizer's JSON)");
    }
    if (no_inlines || no_demangle || no_functions || output_style) {
      return UsageError("--no-inlines, --no-demangle, --functions=none and --output-style are "
                        "llvm-symbolizer's options, not addr2line's");
    }
    if (!exe) o.exe = "a.out";
    o.has_exe = true;
    return result;
  }
  if (llvm) {
    o.style = Style::kLlvm;
    if (!addr2line_only.empty()) {
      return UsageError(addr2line_only + " is an option of --addr2line only");
    }
    if (exe || obj) o.has_exe = true;
    // llvm-symbolizer's defaults: function names, demangled, with the inline chain.
    o.functions = !no_functions;
    o.demangle = !no_demangle;
    o.inlines = !no_inlines;
    return result;
  }
  if (exe) {
    return UsageError("-e FILE is addr2line's option: add --addr2line (or use --obj FILE for "
                      "llvm-symbolizer's style, or MODULE+OFFSET arguments)");
  }
  if (!addr2line_only.empty() || !needs_a_style.empty()) {
    return UsageError((!addr2line_only.empty() ? addr2line_only : needs_a_style) +
                      " needs --addr2line (or --obj FILE)");
  }
  if (no_inlines || no_demangle || no_functions || output_style) {
    return UsageError("--no-inlines, --no-demangle, --functions=none and --output-style need "
                      "--obj FILE (llvm-symbolizer's style)");
  }
  return result;
}

namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// strtoull(text, nullptr, 16), without needing a NUL-terminated string.
uint64_t StrToULL16(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsSpace(text[i])) ++i;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    negative = text[i] == '-';
    ++i;
  }
  // "0x" counts only when a hex digit follows ("0xg" reads as 0).
  if (i + 2 < text.size() && text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X') &&
      IsHex(text[i + 2])) {
    i += 2;
  }
  uint64_t value = 0;
  bool overflow = false;
  for (; i < text.size() && IsHex(text[i]); ++i) {
    if (value >> 60 != 0) overflow = true;
    value = value << 4 | static_cast<uint64_t>(HexValue(text[i]));
  }
  if (overflow) return UINT64_MAX;
  return negative ? 0 - value : value;
}

}  // namespace

uint64_t ParseAddr2lineAddress(std::string_view text) {
  // As binutils 2.40 reads (measured: see tests/symbolize_input_test.cc): after blanks, a '-'
  // gives 0 and one '+' is skipped; then strtoull does the rest ("+-10" is -0x10).
  size_t i = 0;
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i < text.size() && text[i] == '-') return 0;
  if (i < text.size() && text[i] == '+') ++i;
  return StrToULL16(text.substr(i));
}

std::vector<std::string> SplitAddr2lineInput(std::string_view text) {
  constexpr size_t kPiece = 99;  // fgets into char[100]
  std::vector<std::string> pieces;
  size_t at = 0;
  while (at < text.size()) {
    size_t newline = text.find('\n', at);
    size_t line_end = newline == std::string_view::npos ? text.size() : newline + 1;
    size_t end = line_end - at > kPiece ? at + kPiece : line_end;
    pieces.emplace_back(text.substr(at, end - at));
    at = end;
  }
  return pieces;
}

bool ParseLlvmLine(std::string_view line, bool has_obj, Request* out) {
  constexpr std::string_view kDelimiters = " \n\r";
  Request r;
  if (line.substr(0, 5) == "CODE ") {
    line.remove_prefix(5);
  } else if (line.substr(0, 5) == "DATA ") {
    r.kind = Request::Kind::kData;
    line.remove_prefix(5);
  }
  auto skip = [&]() {
    size_t n = line.find_first_not_of(kDelimiters);
    line.remove_prefix(n == std::string_view::npos ? line.size() : n);
  };
  auto word = [&]() {
    size_t n = line.find_first_of(kDelimiters);
    std::string_view w = line.substr(0, n);
    line.remove_prefix(w.size());
    return w;
  };
  if (!has_obj) {
    skip();
    if (!line.empty() && (line[0] == '"' || line[0] == '\'')) {
      size_t close = line.find(line[0], 1);
      if (close == std::string_view::npos) return false;
      r.module = std::string(line.substr(1, close - 1));
      line.remove_prefix(close + 1);
    } else {
      r.module = std::string(word());
    }
    if (r.module.empty()) return false;
  }
  skip();
  std::string_view number = word();
  // Base 0, as LLVM's getAsInteger: 0x hex, 0 octal, decimal.
  int base = 10;
  if (number.size() > 2 && number[0] == '0' && (number[1] == 'x' || number[1] == 'X')) {
    base = 16;
    number.remove_prefix(2);
  } else if (number.size() > 1 && number[0] == '0') {
    base = 8;
    number.remove_prefix(1);
  }
  if (!ParseWhole(number, base, &r.address)) return false;
  *out = std::move(r);
  return true;
}

std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  constexpr std::string_view kBlanks = " \t\r\n\v\f";
  size_t at = text.find_first_not_of(kBlanks);
  while (at != std::string_view::npos) {
    size_t end = text.find_first_of(kBlanks, at);
    if (end == std::string_view::npos) end = text.size();
    words.emplace_back(text.substr(at, end - at));
    at = text.find_first_not_of(kBlanks, end);
  }
  return words;
}

bool ParseStackwalkWord(std::string_view word, bool absolute, Request* out) {
  std::string_view number = word;
  Request r;
  if (!absolute) {
    size_t plus = word.rfind('+');
    if (plus == std::string_view::npos || plus == 0) return false;
    r.module = std::string(word.substr(0, plus));
    number = word.substr(plus + 1);
  }
  if (number.size() > 2 && number[0] == '0' && (number[1] == 'x' || number[1] == 'X')) {
    number.remove_prefix(2);
  }
  if (!ParseWhole(number, 16, &r.address)) return false;
  *out = std::move(r);
  return true;
}

bool ParseMapsLine(std::string_view line, MapsLine* out) {
  stackwalk::internal::MapsLine parsed;  // core's parser, the one FindMapping uses
  if (!stackwalk::internal::ParseMapsLine(line.data(), line.size(), &parsed) ||
      parsed.path_end == parsed.path_begin || line[parsed.path_begin] != '/') {
    return false;
  }
  MapsLine m;
  m.lo = parsed.mapping.range.lo;
  m.hi = parsed.mapping.range.hi;
  m.offset = parsed.offset;
  m.path = std::string(line.substr(parsed.path_begin, parsed.path_end - parsed.path_begin));
  *out = std::move(m);
  return true;
}

}  // namespace stackwalk::tools
