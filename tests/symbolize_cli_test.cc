// stackwalk-symbolize against binutils' addr2line on the same addresses of an -O2 -g fixture
// with deep inlining: the --addr2line mode must print the same lines (agreement reported),
// also when the DWARF lives in a separate file found by .gnu_debuglink or by build-id.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
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
  std::string first_difference;
  bool good() const { return (same + addr2line_wrong) * 100 >= total * 99; }
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

Agreement Compare(const std::string& want_text, const std::string& got_text) {
  Agreement a;
  std::vector<std::string> want = Blocks(want_text), got = Blocks(got_text);
  a.total = want.size();
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (want[i] == got[i]) {
      ++a.same;
    } else if (NamesAMissingLine(want[i])) {
      ++a.addr2line_wrong;
    } else if (a.first_difference.empty()) {
      a.first_difference = "addr2line:\n" + want[i] + "stackwalk-symbolize:\n" + got[i];
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
  Agreement a = Compare(want, got);
  std::printf("addr2line -a -f -C -i: %zu of %zu addresses identical, %zu where addr2line names a "
              "line its file does not have\n", a.same, a.total, a.addr2line_wrong);
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
  Agreement a = Compare(want, got);
  std::printf("C fixture: %zu of %zu addresses identical\n", a.same, a.total);
  EXPECT_GT(a.total, 300u);
  EXPECT_EQ(a.same + a.addr2line_wrong, a.total) << a.first_difference;
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
      want, Shell(kTool + " --addr2line -a -f -C -i -e " + linked + " < " + addresses));
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
                                      " -a -f -C -i -e " + stripped + " < " + addresses));
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
