// The parser of stackwalk-symbolize's command line and input (tools/symbolize_input.h). The
// expected addresses of ParseAddr2lineAddress are what binutils addr2line 2.40 prints for the
// same text; symbolize_cli_test runs the real addr2line on the same kind of input.
#include "symbolize_input.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stackwalk::tools {
namespace {

CommandLine Parse(std::vector<std::string> words) {
  words.insert(words.begin(), "stackwalk-symbolize");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return ParseCommandLine(static_cast<int>(words.size()), argv.data());
}

TEST(SymbolizeInput, Addr2lineStyleOptionsInEveryGnuSpelling) {
  CommandLine c = Parse({"--addr2line", "-afCi", "--exe=/bin/true", "-p", "-s", "0x10", "0x20"});
  ASSERT_EQ(c.exit_status, -1) << c.message;
  const SymbolizeOptions& o = c.options;
  EXPECT_EQ(o.style, Style::kAddr2line);
  EXPECT_TRUE(o.addresses && o.functions && o.demangle && o.inlines && o.pretty && o.basenames);
  EXPECT_EQ(o.exe, "/bin/true");
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"0x10", "0x20"}));

  c = Parse({"0x10", "--addr2line", "--functions", "--demangle", "--inlines", "--addresses",
             "--exe", "/bin/ls", "--section", ".text", "--basenames", "--pretty-print"});
  ASSERT_EQ(c.exit_status, -1) << c.message;
  EXPECT_TRUE(c.options.functions && c.options.demangle && c.options.inlines &&
              c.options.addresses && c.options.basenames && c.options.pretty);
  EXPECT_EQ(c.options.exe, "/bin/ls");
  EXPECT_EQ(c.options.section, ".text");
  EXPECT_EQ(c.options.inputs, std::vector<std::string>{"0x10"});  // permuted, as GNU does

  c = Parse({"--addr2line", "-j.data", "0x1"});
  EXPECT_EQ(c.options.section, ".data");
  c = Parse({"--addr2line"});
  EXPECT_EQ(c.options.exe, "a.out");  // binutils' default
}

TEST(SymbolizeInput, UsageErrorsNameTheOptionAndExitTwo) {
  struct Case {
    std::vector<std::string> words;
    std::string says;
  } cases[] = {
      {{"--bogus"}, "unrecognized option '--bogus'"},
      {{"--addr2line", "-x"}, "invalid option -- 'x'"},
      {{"--addr2line", "-e"}, "option requires an argument -- 'e'"},
      {{"--addr2line", "--exe"}, "option '--exe' requires an argument"},
      {{"--help=3"}, "option '--help' doesn't allow an argument"},
      {{"-e", "/bin/true", "0x10"}, "-e FILE is addr2line's option"},
      {{"--addr2line", "--json", "0x10"}, "--json is not an addr2line option"},
      {{"--addr2line", "--pid", "1"}, "--pid is not an option of --addr2line"},
      {{"--pid", "12ab"}, "--pid takes a process id, not '12ab'"},
      {{"-f", "x+0x10"}, "-f needs --addr2line"},
      {{"--obj=/bin/true", "-p"}, "-p is an option of --addr2line only"},
      {{"--obj=/bin/true", "--addr2line"}, "--obj is llvm-symbolizer's option"},
      {{"--obj=/bin/true", "--output-style=YAML"}, "--output-style takes LLVM or JSON"},
      {{"--no-inlines", "x+0x10"}, "need --obj FILE"},
      {{"--obj=/bin/true", "--functions=short"}, "--functions takes linkage or none, not 'short'"},
  };
  for (const Case& c : cases) {
    CommandLine r = Parse(c.words);
    EXPECT_EQ(r.exit_status, 2) << c.words[0];
    EXPECT_NE(r.message.find(c.says), std::string::npos) << r.message;
    EXPECT_EQ(r.message.rfind("stackwalk-symbolize: ", 0), 0u) << r.message;
  }
}

TEST(SymbolizeInput, HelpAndVersionExitZero) {
  for (const char* flag : {"-h", "--help"}) {
    CommandLine c = Parse({flag});
    EXPECT_EQ(c.exit_status, 0);
    EXPECT_EQ(c.message, UsageText());
  }
  for (const char* flag : {"-V", "-v", "--version"}) {
    CommandLine c = Parse({"--addr2line", flag});
    EXPECT_EQ(c.exit_status, 0);
    EXPECT_EQ(c.message.rfind("stackwalk-symbolize (stackwalk) ", 0), 0u) << c.message;
    EXPECT_EQ(c.message.back(), '\n');
  }
}

TEST(SymbolizeInput, LlvmStyleDefaultsAndNegations) {
  CommandLine c = Parse({"--obj=/bin/true", "0x10"});
  ASSERT_EQ(c.exit_status, -1) << c.message;
  EXPECT_EQ(c.options.style, Style::kLlvm);
  EXPECT_TRUE(c.options.has_exe && c.options.functions && c.options.demangle && c.options.inlines);
  EXPECT_FALSE(c.options.json);
  c = Parse({"--llvm-symbolizer", "--no-inlines", "--no-demangle", "--functions=none",
             "--output-style=JSON"});
  ASSERT_EQ(c.exit_status, -1) << c.message;
  EXPECT_FALSE(c.options.has_exe || c.options.functions || c.options.demangle ||
               c.options.inlines);
  EXPECT_TRUE(c.options.json);
}

TEST(SymbolizeInput, Addr2lineAddressesAsBinutilsReadsThem) {
  struct Case {
    const char* text;
    uint64_t want;
  } cases[] = {
      {"0x1139\r\n", 0x1139},  {"  0x1139  \n", 0x1139}, {"\t0x1139\n", 0x1139},
      {"0x1139 0x1140\n", 0x1139}, {"1139", 0x1139},     {"0X1139", 0x1139},
      {"+0x1139", 0x1139},     {"\n", 0},                {"zz", 0},
      {"-1", 0},               {" -1", 0},               {"+-1", UINT64_MAX},
      {"+-0x10", 0xfffffffffffffff0},                     {"++1", 1},
      {"+ 1", 1},              {"+ -1", UINT64_MAX},     {"+-+1", 0},
      {"0x", 0},               {"0xg", 0},               {"0x-5", 0},
      {"0x1139zz", 0x1139},    {"0x1ffffffffffffffff", UINT64_MAX},
      {"ffffffffffffffff", UINT64_MAX},                  {"", 0},
  };
  for (const Case& c : cases) EXPECT_EQ(ParseAddr2lineAddress(c.text), c.want) << c.text;
}

TEST(SymbolizeInput, Addr2lineInputIsCutAsFgetsCutsIt) {
  EXPECT_TRUE(SplitAddr2lineInput("").empty());
  EXPECT_EQ(SplitAddr2lineInput("a\n\nb"), (std::vector<std::string>{"a\n", "\n", "b"}));
  std::string longer = "0x1139" + std::string(120, ' ') + "x\n";  // 128 bytes
  std::vector<std::string> pieces = SplitAddr2lineInput(longer);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].size(), 99u);
  EXPECT_EQ(pieces[1].size(), 29u);
  EXPECT_EQ(SplitAddr2lineInput(std::string(198, 'a')).size(), 2u);
}

TEST(SymbolizeInput, LlvmLines) {
  Request r;
  ASSERT_TRUE(ParseLlvmLine("CODE /bin/true 0x10", false, &r));
  EXPECT_EQ(r.module, "/bin/true");
  EXPECT_EQ(r.address, 0x10u);
  EXPECT_EQ(r.kind, Request::Kind::kCode);
  ASSERT_TRUE(ParseLlvmLine("DATA  '/a b/c' 010\r", false, &r));
  EXPECT_EQ(r.module, "/a b/c");
  EXPECT_EQ(r.address, 8u);  // octal, as LLVM's base 0
  EXPECT_EQ(r.kind, Request::Kind::kData);
  ASSERT_TRUE(ParseLlvmLine("\"/x\" 16", false, &r));
  EXPECT_EQ(r.address, 16u);
  ASSERT_TRUE(ParseLlvmLine("  0x20 0x30", true, &r));
  EXPECT_EQ(r.module, "");
  EXPECT_EQ(r.address, 0x20u);
  EXPECT_FALSE(ParseLlvmLine("xyz", true, &r));
  EXPECT_FALSE(ParseLlvmLine("/bin/true", false, &r));
  EXPECT_FALSE(ParseLlvmLine("\"/unclosed 0x10", false, &r));
  EXPECT_FALSE(ParseLlvmLine("\t0x10", true, &r));  // LLVM 14 does not take tabs
  EXPECT_FALSE(ParseLlvmLine("0x1ffffffffffffffff", true, &r));
  EXPECT_FALSE(ParseLlvmLine("", true, &r));
}

TEST(SymbolizeInput, StackwalkWordsAndMapsLines) {
  EXPECT_EQ(SplitWords(" a+0x1\tb+2\r\n\nc+3 "),
            (std::vector<std::string>{"a+0x1", "b+2", "c+3"}));
  Request r;
  ASSERT_TRUE(ParseStackwalkWord("/lib/a+b.so+0x2a", false, &r));
  EXPECT_EQ(r.module, "/lib/a+b.so");
  EXPECT_EQ(r.address, 0x2au);
  EXPECT_FALSE(ParseStackwalkWord("+0x10", false, &r));
  EXPECT_FALSE(ParseStackwalkWord("/lib/a.so+", false, &r));
  EXPECT_FALSE(ParseStackwalkWord("/lib/a.so+0xzz", false, &r));
  EXPECT_FALSE(ParseStackwalkWord("/lib/a.so", false, &r));
  ASSERT_TRUE(ParseStackwalkWord("7f0012345678", true, &r));
  EXPECT_EQ(r.address, 0x7f0012345678u);
  EXPECT_FALSE(ParseStackwalkWord("0x", true, &r));

  MapsLine m;
  ASSERT_TRUE(ParseMapsLine(
      "7f1c2a000000-7f1c2a028000 r-xp 00028000 08:01 1234      /usr/lib/libc.so.6 (deleted)\n",
      &m));
  EXPECT_EQ(m.lo, 0x7f1c2a000000u);
  EXPECT_EQ(m.hi, 0x7f1c2a028000u);
  EXPECT_EQ(m.offset, 0x28000u);
  EXPECT_EQ(m.path, "/usr/lib/libc.so.6 (deleted)");
  EXPECT_FALSE(ParseMapsLine("7f1c2a000000-7f1c2a028000 rw-p 00000000 00:00 0 ", &m));
  EXPECT_FALSE(ParseMapsLine("7ffd1000-7ffd2000 rw-p 00000000 00:00 0   [stack]", &m));
  EXPECT_FALSE(ParseMapsLine("zz-7f1c2a028000 r-xp 0 08:01 1 /x", &m));  // used to throw
  EXPECT_FALSE(ParseMapsLine("2000-1000 r-xp 0 08:01 1 /x", &m));
  EXPECT_FALSE(ParseMapsLine("", &m));
}

}  // namespace
}  // namespace stackwalk::tools
