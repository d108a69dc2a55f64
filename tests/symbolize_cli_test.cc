// stackwalk-symbolize against binutils' addr2line on the same addresses of an -O2 -g fixture
// with deep inlining: the --addr2line mode must print the same lines (agreement reported),
// also when the DWARF lives in a separate file found by .gnu_debuglink or by build-id.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string Shell(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

// The per-address blocks of addr2line -a output.
std::vector<std::string> Blocks(const std::string& text) {
  std::vector<std::string> blocks;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0x", 0) == 0 && line.size() == 18) blocks.emplace_back();
    if (!blocks.empty()) blocks.back() += line + "\n";
  }
  return blocks;
}

// Every third byte of .text (at most `max` addresses), into a file.
std::string WriteAddresses(const std::string& binary, int max) {
  std::string section = Shell("readelf -SW " + binary + " | awk '$2==\".text\"{print $4, $6}'");
  std::istringstream in(section);
  std::string start_hex, size_hex;
  in >> start_hex >> size_hex;
  uint64_t start = std::stoull(start_hex, nullptr, 16), size = std::stoull(size_hex, nullptr, 16);
  // Per process: ctest runs the cases of this file in parallel.
  std::string path = ::testing::TempDir() + "addresses." + std::to_string(getpid()) + ".txt";
  std::ofstream out(path);
  uint64_t step = std::max<uint64_t>(1, size / static_cast<uint64_t>(max));
  for (uint64_t a = start; a < start + size; a += step) out << "0x" << std::hex << a << "\n";
  return path;
}

struct Agreement {
  size_t total = 0;
  size_t same = 0;
  size_t addr2line_wrong = 0;  // addr2line names a line past the end of its file
  // addr2line names the function whose symbol ends below the address (the padding after it);
  // stackwalk names none there, nor does llvm-symbolizer-14 (asked about each such address).
  size_t past_symbol_end = 0;
  std::string first_difference;
  size_t explained() const { return same + addr2line_wrong + past_symbol_end; }
  bool good() const { return explained() * 100 >= total * 99; }
};

// True if some "file:line" of an addr2line block names a line its file does not have: binutils
// 2.40 maps some DWARF 5 rows to the compilation unit's own file (llvm-symbolizer agrees with
// stackwalk on those).
bool NamesAMissingLine(const std::string& block) {
  std::istringstream in(block);
  for (std::string line; std::getline(in, line);) {
    size_t colon = line.rfind(':');
    if (line.empty() || line[0] != '/' || colon == std::string::npos) continue;
    int number = std::atoi(line.c_str() + colon + 1);
    std::ifstream file(line.substr(0, colon));
    if (!file || number <= 0) continue;
    int lines = 0;
    for (std::string l; std::getline(file, l);) ++lines;
    if (number > lines) return true;
  }
  return false;
}

// The function llvm-symbolizer-14 names at each address of `binary` ("??" for none).
std::vector<std::string> LlvmFunctions(const std::string& binary,
                                       const std::vector<std::string>& addresses) {
  std::string command = "llvm-symbolizer-14 --no-inlines --obj=" + binary;
  for (const std::string& a : addresses) command += " " + a;
  std::istringstream out(Shell(command));
  std::vector<std::string> names;
  // Per address: the function, file:line:column, a blank line.
  for (std::string name, location, blank; std::getline(out, name) && std::getline(out, location);
       std::getline(out, blank)) {
    names.push_back(name);
  }
  return names;
}

// Compares addr2line -a -f ... blocks; with `binary`, a block where stackwalk names no function
// and addr2line one is counted as past_symbol_end if llvm-symbolizer-14 names none either.
Agreement Compare(const std::string& want_text, const std::string& got_text,
                  const std::string& binary = "") {
  Agreement a;
  std::vector<std::string> want = Blocks(want_text), got = Blocks(got_text);
  a.total = want.size();
  EXPECT_EQ(want.size(), got.size());
  std::vector<size_t> unnamed;  // differing blocks where stackwalk names no function
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (want[i] == got[i]) {
      ++a.same;
    } else if (NamesAMissingLine(want[i])) {
      ++a.addr2line_wrong;
    } else if (!binary.empty() && got[i].compare(19, 3, "??\n") == 0) {
      unnamed.push_back(i);
    } else if (a.first_difference.empty()) {
      a.first_difference = "addr2line:\n" + want[i] + "stackwalk-symbolize:\n" + got[i];
    }
  }
  if (!unnamed.empty()) {
    std::vector<std::string> addresses;
    for (size_t i : unnamed) addresses.push_back(got[i].substr(0, 18));
    std::vector<std::string> llvm = LlvmFunctions(binary, addresses);
    EXPECT_EQ(llvm.size(), unnamed.size());
    for (size_t k = 0; k < unnamed.size() && k < llvm.size(); ++k) {
      if (llvm[k] == "??") {
        ++a.past_symbol_end;
      } else if (a.first_difference.empty()) {
        a.first_difference = "addr2line:\n" + want[unnamed[k]] + "stackwalk-symbolize:\n" +
                             got[unnamed[k]] + "llvm-symbolizer-14: " + llvm[k] + "\n";
      }
    }
  }
  return a;
}

const std::string kTool = STACKWALK_SYMBOLIZE;
const std::string kFixture = INLINE_FIXTURE;

TEST(SymbolizeCli, SameLinesAsAddr2lineOnAnInlineHeavyBinary) {
  std::string addresses = WriteAddresses(kFixture, 5000);
  std::string want = Shell("addr2line -a -f -C -i -e " + kFixture + " < " + addresses);
  std::string got = Shell(kTool + " --addr2line -a -f -C -i -e " + kFixture + " < " + addresses);
  Agreement a = Compare(want, got, kFixture);
  std::printf("addr2line -a -f -C -i: %zu of %zu addresses identical, %zu where addr2line names a "
              "line its file does not have, %zu past a symbol's end (as llvm-symbolizer)\n",
              a.same, a.total, a.addr2line_wrong, a.past_symbol_end);
  EXPECT_GT(a.total, 1000u);
  // binutils names some functions by an order-dependent cache (see tools/); allow 1%.
  EXPECT_TRUE(a.good()) << a.first_difference;

  // Without -i / -C / -a, and addresses as arguments.
  std::string plain_want = Shell("addr2line -f -e " + kFixture + " 0x0 0x1");
  std::string plain_got = Shell(kTool + " --addr2line -f -e " + kFixture + " 0x0 0x1");
  EXPECT_EQ(plain_want, plain_got);
}

// C with a relative DW_AT_comp_dir (as glibc is built) and an alias: file names carry the
// comp_dir in front of a relative directory, and C functions keep their DWARF names.
TEST(SymbolizeCli, SameLinesAsAddr2lineOnCWithARelativeCompDir) {
  const std::string fixture = C_FIXTURE;
  std::string addresses = WriteAddresses(fixture, 2000);
  std::string want = Shell("addr2line -a -f -C -i -e " + fixture + " < " + addresses);
  std::string got = Shell(kTool + " --addr2line -a -f -C -i -e " + fixture + " < " + addresses);
  ASSERT_NE(want.find("./build-dir/"), std::string::npos) << want.substr(0, 400);
  ASSERT_NE(want.find("ImplementationName"), std::string::npos);
  Agreement a = Compare(want, got, fixture);
  std::printf("C fixture: %zu of %zu addresses identical, %zu past a symbol's end\n", a.same,
              a.total, a.past_symbol_end);
  EXPECT_GT(a.total, 300u);
  EXPECT_EQ(a.explained(), a.total) << a.first_difference;
}

// A stripped object with MiniDebugInfo (.gnu_debugdata, made the way Fedora's build does): its
// static functions, absent from .dynsym, are named from the xz-compressed symbol table; a
// corrupt section leaves them unnamed, without a crash.
TEST(SymbolizeCli, MiniDebugInfoNamesStaticFunctionsOfAStrippedObject) {
  const std::string fixture = C_FIXTURE;
  const std::string dir = ::testing::TempDir() + "mini." + std::to_string(getpid());
  const std::string mini = dir + "/mini", bad = dir + "/bad";
  std::string make =
      "set -e; rm -rf " + dir + "; mkdir -p " + dir + "; cd " + dir + "; cp " + fixture + " " + mini +
      "; nm -D " + mini + " --format=posix --defined-only | awk '{print $1}' | sort > dynsyms"
      "; nm " + mini + " --format=posix --defined-only | awk '$2 ~ /[Tt]/ {print $1}' | sort > funcsyms"
      "; comm -13 dynsyms funcsyms > keep"
      "; objcopy -S --remove-section .comment --keep-symbols=keep " + mini + " debugdata"
      "; xz -f debugdata; strip --strip-all " + mini + "; cp " + mini + " " + bad +
      "; objcopy --add-section .gnu_debugdata=debugdata.xz " + mini +
      "; head -c 100 debugdata.xz > broken.xz; objcopy --add-section .gnu_debugdata=broken.xz " + bad;
  ASSERT_EQ(std::system(make.c_str()), 0);
  // Mix is static: in the MiniDebugInfo only.
  std::string mix = Shell("nm " + fixture + " | awk '$3 == \"Mix\" {print \"0x\" $1}'");
  ASSERT_FALSE(mix.empty());
  mix.pop_back();
  EXPECT_EQ(Shell("nm " + mini + " 2>&1 | grep -c ' Mix$' || true"), "0\n");  // really stripped
  EXPECT_EQ(Shell(kTool + " --addr2line -f -e " + mini + " " + mix), "Mix\n??:?\n");
  EXPECT_NE(Shell(kTool + " --addr2line -f -e " + bad + " " + mix).rfind("Mix\n", 0), 0u);
  EXPECT_EQ(Shell(kTool + " --addr2line -f -e " + bad + " " + mix + " >/dev/null; echo $?"), "0\n");
}

// Compressed debug sections (SHF_COMPRESSED, zlib and zstd where objcopy has it): the same
// lines as from the uncompressed file.
TEST(SymbolizeCli, CompressedDebugSectionsGiveTheSameLines) {
  const std::string fixture = C_FIXTURE;
  const std::string packed = ::testing::TempDir() + "gz." + std::to_string(getpid());
  ASSERT_EQ(std::system(("objcopy --compress-debug-sections=zlib " + fixture + " " + packed).c_str()), 0);
  ASSERT_NE(Shell("readelf -S -W " + packed + " | grep debug_info"), "");
  ASSERT_NE(Shell("readelf -S -W " + packed + " | grep debug_info | grep ' C '"), "")
      << "not compressed";
  std::string addresses = WriteAddresses(fixture, 500);
  std::string want = Shell(kTool + " --addr2line -a -f -C -i -e " + fixture + " < " + addresses);
  std::string got = Shell(kTool + " --addr2line -a -f -C -i -e " + packed + " < " + addresses);
  EXPECT_GT(want.size(), 1000u);
  EXPECT_EQ(got, want);
  EXPECT_NE(want.find("inline_c.c:"), std::string::npos);
}

TEST(SymbolizeCli, SeparateDebugFileByDebuglinkAndByBuildId) {
  const std::string dir = ::testing::TempDir() + "debugfiles." + std::to_string(getpid()) + "/";
  ASSERT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const std::string debug = dir + "fixture.debug";
  const std::string stripped = dir + "fixture";
  ASSERT_EQ(std::system(("objcopy --only-keep-debug " + kFixture + " " + debug).c_str()), 0);
  ASSERT_EQ(std::system(("objcopy --strip-debug " + kFixture + " " + stripped).c_str()), 0);
  std::string addresses = WriteAddresses(kFixture, 2000);
  std::string want = Shell("addr2line -a -f -C -i -e " + kFixture + " < " + addresses);

  // No DWARF anywhere: names from the symbol table only.
  std::string bare = Shell(kTool + " --addr2line -a -f -C -i -e " + stripped + " < " + addresses);
  EXPECT_LT(Compare(want, bare).same * 2, Compare(want, want).same) << "the stripped copy has no lines";

  // .gnu_debuglink beside the binary.
  const std::string linked = dir + "fixture.linked";
  ASSERT_EQ(std::system(("cd " + dir + " && objcopy --add-gnu-debuglink=fixture.debug fixture " +
                         linked).c_str()),
            0);
  Agreement by_link = Compare(
      want, Shell(kTool + " --addr2line -a -f -C -i -e " + linked + " < " + addresses), kFixture);
  std::printf("debuglink: %zu of %zu identical (+%zu addr2line errors)\n", by_link.same,
              by_link.total, by_link.addr2line_wrong);
  EXPECT_TRUE(by_link.good()) << by_link.first_difference;

  // By build-id under a debug root.
  std::string id = Shell("readelf -n " + kFixture + " | awk '/Build ID/{print $3}'");
  id.erase(id.find_last_not_of("\n") + 1);
  ASSERT_GT(id.size(), 2u);
  const std::string root = dir + "root";
  const std::string by_id_path = root + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  ASSERT_EQ(std::system(("mkdir -p " + root + "/.build-id/" + id.substr(0, 2) + " && cp " + debug +
                         " " + by_id_path).c_str()),
            0);
  Agreement by_id = Compare(want, Shell(kTool + " --addr2line --debug-root " + root +
                                      " -a -f -C -i -e " + stripped + " < " + addresses),
                            kFixture);
  std::printf("build-id: %zu of %zu identical (+%zu addr2line errors)\n", by_id.same, by_id.total,
              by_id.addr2line_wrong);
  EXPECT_TRUE(by_id.good()) << by_id.first_difference;
}

TEST(SymbolizeCli, ModuleOffsetModeWithInlinesAndJson) {
  std::string sym = Shell("nm -C " + kFixture + " | awk '/ Run\\(int/{print $1}'");
  ASSERT_FALSE(sym.empty());
  std::string input = kFixture + "+0x" + sym.substr(0, sym.find('\n'));
  std::string text = Shell(kTool + " --inlines " + input);
  EXPECT_NE(text.find("Run(int, std::function<double (geo::Field const&)> const&)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("inline_heavy.cc:"), std::string::npos) << text;
  std::string json = Shell(kTool + " --json " + input);
  EXPECT_EQ(json.rfind("{\"input\":", 0), 0u) << json;
  EXPECT_NE(json.find("\"line\":"), std::string::npos) << json;
}

}  // namespace

TEST(SymbolizeCli, AbsoluteAddressesThroughAProcessMap) {
  // A running process and a saved copy of its map, as a crash report would carry.
  pid_t child = fork();
  if (child == 0) {
    execlp("sleep", "sleep", "10", static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(300 * 1000);
  const std::string maps = "/proc/" + std::to_string(child) + "/maps";
  const std::string saved = ::testing::TempDir() + "saved." + std::to_string(getpid()) + ".maps";
  ASSERT_EQ(std::system(("cp " + maps + " " + saved).c_str()), 0);
  // An address 0x40 into libc's executable mapping.
  std::string line = Shell("grep -m1 'r-xp.*libc.so' " + saved);
  ASSERT_FALSE(line.empty());
  uint64_t lo = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
  std::istringstream words(line);
  std::string range, perms, offset, dev, inode, path;
  words >> range >> perms >> offset >> dev >> inode >> path;
  uint64_t file_offset = std::stoull(offset, nullptr, 16);
  char addr[32];
  std::snprintf(addr, sizeof(addr), "0x%llx", static_cast<unsigned long long>(lo + 0x40));

  std::string by_pid = Shell(kTool + " --json --pid " + std::to_string(child) + " " + addr);
  std::string by_file = Shell(kTool + " --json --maps " + saved + " " + addr);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(by_pid, by_file);
  EXPECT_NE(by_file.find("\"module\":\"" + path + "\""), std::string::npos) << by_file;
  // libc links its executable segment where it sits in the file (p_vaddr == p_offset).
  char want_offset[48];
  std::snprintf(want_offset, sizeof(want_offset), "\"offset\":\"0x%llx\"",
                static_cast<unsigned long long>(file_offset + 0x40));
  EXPECT_NE(by_file.find(want_offset), std::string::npos) << by_file;
  // The same frames as naming the file and offset directly.
  char module_offset[64];
  std::snprintf(module_offset, sizeof(module_offset), "+0x%llx",
                static_cast<unsigned long long>(file_offset + 0x40));
  std::string direct = Shell(kTool + " --json " + path + module_offset);
  EXPECT_EQ(by_file.substr(by_file.find("\"frames\"")), direct.substr(direct.find("\"frames\"")));
  EXPECT_NE(Shell(kTool + " --maps " + saved + " 0x10").find("not in a mapped file"), std::string::npos);
}

namespace {

struct Ran {
  std::string out, err;
  int status = -1;
};

// Runs `command` through the shell; its stdout, stderr and exit status.
Ran RunCommand(const std::string& command) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "run." + std::to_string(getpid()) + "." +
                           std::to_string(counter++);
  Ran r;
  int raw = std::system((command + " >" + base + ".out 2>" + base + ".err").c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream out(base + ".out"), err(base + ".err");
  std::stringstream o, e;
  o << out.rdbuf();
  e << err.rdbuf();
  r.out = o.str();
  r.err = e.str();
  return r;
}

std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + name + "." + std::to_string(getpid()) + "/";
  EXPECT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  return dir;
}

// Files that are not objects: missing, a directory, not ELF, cut short, empty, of neither ELF
// class (both are read: a 32-bit target's objects on a 64-bit host). binutils addr2line exits 1 printing nothing on stdout; so does --addr2line, naming the
// file and the reason on stderr.
TEST(SymbolizeCli, UnreadableFilesAreNamedWithTheReasonAndFail) {
  const std::string dir = Dir("unreadable");
  ASSERT_EQ(std::system(("head -c 100 " + kFixture + " > " + dir + "short && head -c 3000 " +
                         kFixture + " > " + dir + "cut && : > " + dir + "empty && echo hello > " +
                         dir + "text && printf '\\177ELF\\003' > " + dir + "class3 && "
                         "mkdir " + dir + "directory").c_str()),
            0);
  struct Case {
    std::string file, reason;
  } cases[] = {
      {dir + "missing", "No such file or directory"}, {dir + "directory", "is a directory"},
      {dir + "text", "not an ELF file"},              {dir + "short", "truncated"},
      {dir + "cut", "truncated"},                     {dir + "empty", "empty file"},
      {dir + "class3", "an ELF file of neither class"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Ran binutils = RunCommand("addr2line -f -e " + c.file + " 0x10");
    Ran ours = RunCommand(kTool + " --addr2line -f -e " + c.file + " 0x10");
    EXPECT_EQ(binutils.status, 1);
    EXPECT_EQ(ours.status, binutils.status);
    EXPECT_EQ(ours.out, binutils.out);
    EXPECT_EQ(ours.err, "stackwalk-symbolize: " + c.file + ": " +
                            ours.err.substr(ours.err.find(": ", 21) + 2));
    EXPECT_NE(ours.err.find(c.reason), std::string::npos) << ours.err;
    // llvm-symbolizer's style: its lines for an unknown address, the reason on stderr, and a
    // failing status (llvm-symbolizer-14 itself exits 0).
    Ran llvm = RunCommand("llvm-symbolizer-14 --obj=" + c.file + " 0x10");
    Ran ours_llvm = RunCommand(kTool + " --obj=" + c.file + " 0x10");
    EXPECT_EQ(ours_llvm.out, llvm.out);
    EXPECT_EQ(ours_llvm.status, 1);
    EXPECT_NE(ours_llvm.err.find(c.file + ": "), std::string::npos) << ours_llvm.err;
  }
  // MODULE+OFFSET requests: each unreadable one says why on its line, the file is named once
  // on stderr, and the status fails only when nothing could be read.
  const std::string missing = dir + "missing";
  Ran mixed = RunCommand(kTool + " " + missing + "+0x10 " + kFixture + "+0x1139 " + missing +
                         "+0x20");
  EXPECT_EQ(mixed.status, 0);
  EXPECT_EQ(mixed.err, "stackwalk-symbolize: " + missing + ": No such file or directory\n");
  EXPECT_NE(mixed.out.find(missing + "+0x10: ?? (" + missing + "+0x10: No such file or directory)\n"),
            std::string::npos) << mixed.out;
  EXPECT_NE(mixed.out.find("main"), std::string::npos) << mixed.out;
  Ran none = RunCommand(kTool + " --json " + missing + "+0x10 " + dir + "text+0x10");
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.out.find("\"error\":\"not an ELF file\""), std::string::npos) << none.out;
  Ran garbage = RunCommand("echo not-a-request | " + kTool);
  EXPECT_EQ(garbage.status, 1);
  EXPECT_NE(garbage.err.find("expected MODULE+OFFSET, got 'not-a-request'"), std::string::npos);
}

TEST(SymbolizeCli, DeadProcessAndMissingMapsFail) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // reaped: its pid names no process now
  Ran dead = RunCommand(kTool + " --pid " + std::to_string(child) + " 0x10");
  EXPECT_EQ(dead.status, 1);
  EXPECT_EQ(dead.out, "");
  EXPECT_NE(dead.err.find("--pid " + std::to_string(child) + ": cannot read /proc/" +
                          std::to_string(child) + "/maps"),
            std::string::npos)
      << dead.err;
  Ran missing = RunCommand(kTool + " --maps /nonexistent/maps 0x10");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "stackwalk-symbolize: /nonexistent/maps: No such file or directory\n");
  // A maps text with garbage lines (which used to throw out of std::stoull): they are skipped.
  const std::string dir = Dir("badmaps");
  std::ofstream(dir + "maps") << "zz-yy r-xp 00000000 08:01 1 /x\n\n12345678\n";
  Ran bad = RunCommand(kTool + " --maps " + dir + "maps 0x10");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, "0x10: ?? (not in a mapped file)\n");
}

TEST(SymbolizeCli, UsageErrorsAndWriteErrors) {
  for (const std::string& args : {std::string("--bogus"), std::string("-e ") + kFixture + " 0x10",
                                  std::string("--addr2line --json -e ") + kFixture + " 0x10",
                                  std::string("--addr2line -q")}) {
    SCOPED_TRACE(args);
    Ran r = RunCommand(kTool + " " + args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("stackwalk-symbolize: ", 0), 0u) << r.err;
  }
  EXPECT_NE(RunCommand(kTool + " --bogus").err.find("'--bogus'"), std::string::npos);
  EXPECT_NE(RunCommand(kTool + " --addr2line -q").err.find("'q'"), std::string::npos);
  Ran help = RunCommand(kTool + " -h");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--addr2line"), std::string::npos);
  Ran version = RunCommand(kTool + " -V");
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out.rfind("stackwalk-symbolize (stackwalk) ", 0), 0u) << version.out;
  // Output that cannot be written fails, in every style.
  for (const std::string& args :
       {" --addr2line -f -e " + kFixture + " 0x1139", " --obj=" + kFixture + " 0x1139",
        " " + kFixture + "+0x1139", std::string(" --help")}) {
    SCOPED_TRACE(args);
    Ran full = RunCommand("(" + kTool + args + " >/dev/full)");
    EXPECT_EQ(full.status, 1);
    EXPECT_NE(full.err.find("write error"), std::string::npos) << full.err;
  }
}

// Stdin as addr2line reads it: CRLF, blanks and tabs around, several addresses on a line (the
// first counts), signs, garbage, empty lines, lines longer than addr2line's 100-byte buffer.
TEST(SymbolizeCli, StdinReadAsAddr2lineReadsIt) {
  const std::string dir = Dir("stdin");
  std::ofstream in(dir + "input");
  in << "0x1139\r\n  0x1139  \n\t0x15e5\t\n0x1139 0x15e5\n\nzz\n-1\n+0x1139\n1139\n0X15E5\n"
     << "+-0x10\n++1\n+ -1\n0x\n0x1139zz\n0x1ffffffffffffffff\n"
     << "0x1139" << std::string(120, ' ') << "x\n" << std::string(98, ' ') << "0x1139\n"
     << "0x15e5";  // no final newline
  in.close();
  for (const std::string& flags : {"-a -f -C -i", "-a", "-f -j .text"}) {
    SCOPED_TRACE(flags);
    Ran want = RunCommand("addr2line " + flags + " -e " + kFixture + " < " + dir + "input");
    Ran got = RunCommand(kTool + " --addr2line " + flags + " -e " + kFixture + " < " + dir + "input");
    ASSERT_EQ(want.status, 0);
    EXPECT_EQ(got.status, 0);
    EXPECT_EQ(got.out, want.out);
    EXPECT_GT(std::count(want.out.begin(), want.out.end(), '\n'), 20);
  }
  // The stackwalk style splits on any blank, CRLF included.
  std::string words = "printf '" + kFixture + "+0x1139\\r\\n\\t" + kFixture + "+0x15e5 " + kFixture +
                      "+0x1139\\n' | " + kTool;
  Ran split = RunCommand(words);
  EXPECT_EQ(split.status, 0);
  EXPECT_EQ(std::count(split.out.begin(), split.out.end(), '\n'), 3) << split.out;
  EXPECT_EQ(split.out.find("??"), std::string::npos) << split.out;
}

// addr2line's options as scripts spell them, each against binutils on the same addresses.
TEST(SymbolizeCli, Addr2lineOptionsPrintWhatBinutilsPrints) {
  std::string addresses = WriteAddresses(kFixture, 400);
  const std::string same = " -e " + kFixture + " < " + addresses;
  for (const std::string& flags :
       {std::string("-p -a -f -C -i"), std::string("-pfi"), std::string("-p -a"),
        std::string("-s -f -i"), std::string("-psfiC"), std::string("--pretty-print --basenames"),
        std::string("--functions --demangle --inlines --addresses"), std::string("-afi -j .text")}) {
    SCOPED_TRACE(flags);
    std::string want = Shell("addr2line " + flags + same);
    std::string got = Shell(kTool + " --addr2line " + flags + same);
    ASSERT_GT(want.size(), 1000u);
    // Lines of the padding after functions (see Compare) aside, the very same text.
    size_t differing = 0, lines = 0;
    std::istringstream w(want), g(got);
    for (std::string a, b; std::getline(w, a) && std::getline(g, b); ++lines) {
      if (a != b) ++differing;
    }
    std::printf("addr2line %s: %zu of %zu lines differ\n", flags.c_str(), differing, lines);
    EXPECT_EQ(std::count(want.begin(), want.end(), '\n'), std::count(got.begin(), got.end(), '\n'));
    EXPECT_LE(differing * 100, lines * 3) << flags;
  }
  // --exe= with addresses as arguments: byte for byte.
  std::string exact = " --exe=" + kFixture + " -a -f -C -i -p 0x1139 0x15e5 0x0";
  EXPECT_EQ(Shell(kTool + " --addr2line" + exact), Shell("addr2line" + exact));
  // -j with a section the object does not have.
  Ran nope = RunCommand(kTool + " --addr2line -j .nope -e " + kFixture + " 0x10");
  EXPECT_EQ(nope.status, 1);
  EXPECT_EQ(nope.status, RunCommand("addr2line -j .nope -e " + kFixture + " 0x10").status);
  EXPECT_NE(nope.err.find("cannot find section .nope"), std::string::npos);
}

// LLVM's demangler writes a lambda as 'lambda'(...) where GNU's (abseil's) writes
// {lambda(...)#1}: a difference of demanglers, not of what is found.
// Likewise a clone: "f() (.cold)" where GNU's says "f() [clone .cold]".
std::string LlvmLambdas(std::string text) {
  static const std::regex gnu("\\{lambda\\(([^()]*)\\)#[0-9]+\\}");
  static const std::regex clone(" \\[clone (\\.[^\\]]*)\\]");
  return std::regex_replace(std::regex_replace(text, gnu, "'lambda'($1)"), clone, " ($1)");
}

// llvm-symbolizer's style: --obj, its options and JSON, "[CODE] FILE ADDR" lines on stdin.
TEST(SymbolizeCli, LlvmStylePrintsWhatLlvmSymbolizerPrints) {
  std::string file = WriteAddresses(kFixture, 300);
  std::string list;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) list += " " + line;
  }
  size_t text_differing = 0;
  for (const std::string& flags :
       {std::string(""), std::string("--output-style=JSON"), std::string("-a"),
        std::string("--no-inlines"), std::string("--no-demangle"),
        std::string("--functions=none -s"), std::string("--output-style=JSON --no-inlines")}) {
    SCOPED_TRACE(flags);
    std::string want = Shell("llvm-symbolizer-14 --obj=" + kFixture + " " + flags + list);
    std::string got = LlvmLambdas(Shell(kTool + " --obj=" + kFixture + " " + flags + list));
    ASSERT_GT(want.size(), 1000u);
    size_t differing = 0, lines = 0;
    std::istringstream w(want), g(got);
    std::string wtext = want, gtext = got;
    if (flags.find("JSON") != std::string::npos) {
      // A line per frame. LLVM 14 leaves StartFileName empty for some functions declared
      // through DW_AT_specification in another file (std::__invoke_impl in invoke.h): compared
      // apart, in the text style's absence of it (the function, file and line are compared).
      static const std::regex start_file("\"StartFileName\":\"[^\"]*\"");
      wtext = std::regex_replace(std::regex_replace(want, std::regex("\\},\\{"), "}\n{"),
                                 start_file, "\"StartFileName\":\"\"");
      gtext = std::regex_replace(std::regex_replace(got, std::regex("\\},\\{"), "}\n{"),
                                 start_file, "\"StartFileName\":\"\"");
      w.str(wtext);
      g.str(gtext);
    }
    std::string first;
    for (std::string a, b; std::getline(w, a) && std::getline(g, b); ++lines) {
      if (a == b) continue;
      ++differing;
      if (first.empty()) first = "llvm-symbolizer-14: " + a + "\nstackwalk: " + b;
    }
    std::printf("llvm-symbolizer %s: %zu of %zu lines differ\n", flags.c_str(), differing, lines);
    EXPECT_EQ(std::count(wtext.begin(), wtext.end(), '\n'),
              std::count(gtext.begin(), gtext.end(), '\n'));
    // Names the two demanglers write differently (decltype expressions; names LLVM 14 leaves
    // mangled) and which of two aliases (D1/D2 destructors) names a function: up to 3% of the
    // lines. Without names, the very same lines.
    // In JSON, a line per frame: no more differing frames than the text style's names.
    if (flags.find("functions=none") != std::string::npos) {
      EXPECT_EQ(got, want);
    } else if (flags == "--output-style=JSON") {
      EXPECT_LE(differing, text_differing) << first;
    } else {
      EXPECT_LE(differing * 100, lines * 3) << first;
    }
    if (flags.empty()) text_differing = differing;
  }
  // Request lines on stdin: CODE, a module per line (quoted too), CRLF, unreadable lines echoed.
  const std::string dir = Dir("llvm");
  std::ofstream(dir + "lines") << "CODE " << kFixture << " 0x1139\n"
                               << kFixture << " 0x15e5\r\n"
                               << "\"" << kFixture << "\" 5605\n"
                               << "not a request\n"
                               << "CODE " << dir << "missing 0x10\n";
  for (const std::string& flags : {std::string(""), std::string("--output-style=JSON")}) {
    SCOPED_TRACE(flags);
    Ran want = RunCommand("llvm-symbolizer-14 " + flags + " < " + dir + "lines");
    Ran got = RunCommand(kTool + " --llvm-symbolizer " + flags + " < " + dir + "lines");
    EXPECT_EQ(LlvmLambdas(got.out), want.out);
    EXPECT_EQ(got.status, 0);  // some requests could be read
    EXPECT_NE(got.err.find(dir + "missing: No such file or directory"), std::string::npos);
  }
}

// An object without .symtab (strip --strip-all): an address in a function .dynsym does not name
// is "??" with object+offset, not the exported function below it; a function symbol without a
// size reaches as far as its FDE. binutils names the symbol below; llvm-symbolizer-14 agrees
// past a sized symbol, and extends one without a size to the next symbol.
TEST(SymbolizeCli, StrippedObjectNamesOnlyWhatItsSymbolsCover) {
  const std::string dir = Dir("stripped");
  std::ofstream(dir + "lib.s")
      << ".text\n"
         ".globl exported_sized\n.type exported_sized,@function\nexported_sized:\n"
         ".cfi_startproc\nnop\nnop\nret\n.cfi_endproc\n.size exported_sized, .-exported_sized\n"
         ".p2align 4\n.type hidden_after_sized,@function\nhidden_after_sized:\n"
         ".cfi_startproc\n.rept 32\nnop\n.endr\nret\n.cfi_endproc\n"
         ".size hidden_after_sized, .-hidden_after_sized\n"
         ".p2align 4\n.globl exported_unsized\n.type exported_unsized,@function\nexported_unsized:\n"
         ".cfi_startproc\n.rept 16\nnop\n.endr\nret\n.cfi_endproc\n"
         ".p2align 4\n.type hidden_after_unsized,@function\nhidden_after_unsized:\n"
         ".cfi_startproc\n.rept 32\nnop\n.endr\nret\n.cfi_endproc\n"
         ".size hidden_after_unsized, .-hidden_after_unsized\n"
         ".section .note.GNU-stack,\"\",@progbits\n";
  ASSERT_EQ(std::system(("cd " + dir + " && cc -shared -nostdlib -Wl,--eh-frame-hdr -o lib.so lib.s"
                         " && strip --strip-all -o stripped.so lib.so").c_str()),
            0);
  auto address_of = [&](const std::string& name) {
    std::string v = Shell("nm " + dir + "lib.so | awk '$3 == \"" + name + "\" {print $1}'");
    return std::stoull(v, nullptr, 16);
  };
  auto hex = [](uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  ASSERT_EQ(Shell("readelf -S " + dir + "stripped.so | grep -c ' .symtab' || true"), "0\n");
  const std::string lib = dir + "stripped.so";
  struct Case {
    uint64_t address;
    std::string name;  // "" for none
    std::string llvm;
  } cases[] = {
      {address_of("exported_sized") + 1, "exported_sized", "exported_sized"},
      {address_of("hidden_after_sized") + 8, "", "??"},
      {address_of("exported_unsized") + 8, "exported_unsized", "exported_unsized"},
      {address_of("hidden_after_unsized") + 8, "", "exported_unsized"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(hex(c.address));
    const std::string want = c.name.empty() ? "??" : c.name;
    EXPECT_EQ(Shell(kTool + " --addr2line -f -e " + lib + " " + hex(c.address)).substr(0, want.size() + 1),
              want + "\n");
    EXPECT_EQ(LlvmFunctions(lib, {hex(c.address)}), std::vector<std::string>{c.llvm});
    std::string line = Shell(kTool + " " + lib + "+" + hex(c.address));
    if (c.name.empty()) {
      EXPECT_EQ(line, lib + "+" + hex(c.address) + ": ?? (" + lib + "+" + hex(c.address) + ")\n");
      // What binutils prints there: the exported symbol below.
      EXPECT_NE(Shell("addr2line -f -e " + lib + " " + hex(c.address)).substr(0, 2), "??");
    } else {
      EXPECT_EQ(line, c.name + " (" + lib + "+" + hex(c.address) + ")\n");
    }
  }

  // libstdc++ (no .symtab): an address between two exported functions, past the lower one's
  // size: what llvm-symbolizer-14 names there (nothing), not that function.
  std::string libstdcxx = Shell("ldd " + kFixture + " | awk '/libstdc\\+\\+/ {print $3}'");
  libstdcxx.erase(libstdcxx.find_last_not_of("\n") + 1);
  ASSERT_FALSE(libstdcxx.empty());
  std::vector<std::pair<uint64_t, uint64_t>> symbols;  // (start, end) of exported functions
  {
    std::istringstream nm(Shell("nm -D --defined-only -S " + libstdcxx));
    for (std::string line; std::getline(nm, line);) {
      std::istringstream words(line);
      std::string value, size, type;
      if ((words >> value >> size >> type) && (type == "T" || type == "W" || type == "i")) {
        uint64_t start = std::stoull(value, nullptr, 16);
        symbols.emplace_back(start, start + std::stoull(size, nullptr, 16));
      }
    }
  }
  std::sort(symbols.begin(), symbols.end());
  std::string gap;
  uint64_t reach = 0;  // the highest end so far
  for (const auto& [start, end] : symbols) {
    if (reach != 0 && start > reach + 256) {
      gap = hex(reach + 64);
      break;
    }
    reach = std::max(reach, end);
  }
  ASSERT_FALSE(gap.empty());
  EXPECT_NE(Shell("addr2line -f -e " + libstdcxx + " " + gap).substr(0, 3), "??\n");
  EXPECT_EQ(LlvmFunctions(libstdcxx, {gap}), std::vector<std::string>{"??"});
  EXPECT_EQ(Shell(kTool + " --addr2line -f -e " + libstdcxx + " " + gap), "??\n??:0\n");
}

}  // namespace
