// What stackwalk-symbolize is asked: its command line (getopt_long, GNU conventions) and the
// requests of its input, read as the tool it stands in for reads them. Kept apart from the
// tool so that its unit tests and tests/fuzz/symbolize_input_fuzz.cc run this very code.
//
// Three styles, chosen on the command line:
//   stackwalk (default)   MODULE+OFFSET per argument or stdin word; or absolute addresses with
//                         --pid PID / --maps FILE
//   --addr2line           binutils addr2line: -e FILE, hex addresses, its options and output
//   --llvm-symbolizer     llvm-symbolizer: --obj FILE (implies the style), "[CODE] [FILE] ADDR"
//                         input lines, --output-style=LLVM|JSON
//
// Not signal-safe (allocates); getopt_long's global state makes ParseCommandLine
// not thread-safe.
#ifndef STACKWALK_TOOLS_SYMBOLIZE_INPUT_H_
#define STACKWALK_TOOLS_SYMBOLIZE_INPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stackwalk::tools {

enum class Style { kStackwalk, kAddr2line, kLlvm };

struct SymbolizeOptions {
  Style style = Style::kStackwalk;
  bool addresses = false;   // -a: print the address first
  bool functions = false;   // -f: print function names
  bool demangle = false;    // -C
  bool inlines = false;     // -i: the inline chain
  bool pretty = false;      // -p: one line per frame
  bool basenames = false;   // -s: file names without directories
  bool json = false;        // --json (stackwalk style) or --output-style=JSON (llvm style)
  std::string exe;          // -e/--exe/--obj; addr2line's default is a.out
  bool has_exe = false;
  std::string section;      // -j: addresses are offsets into this section
  std::string debug_root = "/usr/lib/debug";
  std::string maps;         // --pid (as /proc/PID/maps) or --maps
  std::string pid;          // as given, for messages
  std::vector<std::string> inputs;  // addresses or requests given as arguments
};

struct CommandLine {
  SymbolizeOptions options;
  // -1: go on and symbolize. Otherwise exit with it after writing `message` (to stdout for
  // --help and --version, status 0; to stderr for a usage error, status 2).
  int exit_status = -1;
  std::string message;
};

// Parses argv (argv[0] is the program). Bad options are named in the message, as
// "stackwalk-symbolize: unrecognized option '--bogus'".
CommandLine ParseCommandLine(int argc, char* const* argv);

// The usage text --help prints.
std::string UsageText();

// An address as binutils addr2line 2.40 reads one: leading blanks, then a '-' gives 0 and one
// '+' is skipped, then strtoull in base 16 (blanks, a sign, 0x, as many hex digits as there
// are, anything after them ignored; nothing readable is 0, an overflow saturates at all ones).
uint64_t ParseAddr2lineAddress(std::string_view text);

// Splits stdin text into the pieces addr2line reads, one fgets() of a 100-byte buffer each:
// lines, with any line longer than 99 bytes cut into 99-byte pieces. A last line without a
// newline is a piece too; nothing at all is no piece.
std::vector<std::string> SplitAddr2lineInput(std::string_view text);

// A request of the stackwalk and llvm styles.
struct Request {
  enum class Kind { kCode, kData };
  Kind kind = Kind::kCode;
  std::string module;  // empty: the --obj file (llvm style), or the process map (--pid/--maps)
  uint64_t address = 0;
};

// One llvm-symbolizer input line: "[CODE |DATA ]["FILE"|'FILE'|FILE ]ADDR", FILE only without
// --obj (`has_obj`), ADDR decimal, 0x-hex or 0-octal; words separated by spaces (as LLVM 14:
// also CR and LF, not tabs). False for a line it cannot read (llvm-symbolizer echoes those).
bool ParseLlvmLine(std::string_view line, bool has_obj, Request* out);

// Splits stackwalk-style input into words (blanks, tabs, CR and LF separate requests).
std::vector<std::string> SplitWords(std::string_view text);

// A stackwalk-style word: MODULE+OFFSET (hex offset, 0x optional; the last '+' splits), or
// with `absolute` (--pid/--maps) a hex address. False if it is neither.
bool ParseStackwalkWord(std::string_view word, bool absolute, Request* out);

// One line of a /proc/PID/maps text, "lo-hi perms offset dev inode path": false unless it is
// well formed and maps a file (a path starting with '/'; " (deleted)" stays part of it).
// Parsed by src/core/proc_maps.h's ParseMapsLine, the parser of the library's own map reader.
struct MapsLine {
  uint64_t lo = 0, hi = 0, offset = 0;
  std::string path;
};
bool ParseMapsLine(std::string_view line, MapsLine* out);

}  // namespace stackwalk::tools

#endif  // STACKWALK_TOOLS_SYMBOLIZE_INPUT_H_
