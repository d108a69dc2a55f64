// Suppressions (leakcheck/suppressions.h): LeakSanitizer's file format and pattern rule, read from
// real files; and the report's suppress stage (leakcheck/report_suppress.h) over a heap of real
// blocks linked by real pointers.
#include "leakcheck/suppressions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "leakcheck/report_suppress.h"

namespace stackwalk::leakcheck {
namespace {

TEST(SuppressionPattern, SubstringGlobsAndAnchorsAsLeakSanitizer) {
  // No '*', no anchor: anywhere in the text.
  EXPECT_TRUE(SuppressionPatternMatches("Widget", "MakeWidget(int)"));
  EXPECT_FALSE(SuppressionPatternMatches("Gadget", "MakeWidget(int)"));
  // '*': any run, pieces in order.
  EXPECT_TRUE(SuppressionPatternMatches("Make*int", "MakeWidget(int)"));
  EXPECT_TRUE(SuppressionPatternMatches("*tls_get_addr*", "__tls_get_addr"));
  EXPECT_FALSE(SuppressionPatternMatches("int*Make", "MakeWidget(int)"));
  EXPECT_TRUE(SuppressionPatternMatches("*", "x"));
  // '^' and '$'.
  EXPECT_TRUE(SuppressionPatternMatches("^Make", "MakeWidget"));
  EXPECT_FALSE(SuppressionPatternMatches("^Widget", "MakeWidget"));
  EXPECT_TRUE(SuppressionPatternMatches("Widget$", "MakeWidget"));
  EXPECT_FALSE(SuppressionPatternMatches("Make$", "MakeWidget"));
  EXPECT_TRUE(SuppressionPatternMatches("^MakeWidget$", "MakeWidget"));
  EXPECT_FALSE(SuppressionPatternMatches("^MakeWidget$", "MakeWidgets"));
  EXPECT_TRUE(SuppressionPatternMatches("^/usr/lib/*.so$", "/usr/lib/libfoo.so"));
  EXPECT_FALSE(SuppressionPatternMatches("^/usr/lib/*.so$", "/usr/lib/libfoo.so.1"));
  EXPECT_TRUE(SuppressionPatternMatches("^a*b*c$", "aXbYc"));
  EXPECT_FALSE(SuppressionPatternMatches("^a*b*c$", "aXcYb"));
  EXPECT_FALSE(SuppressionPatternMatches("^ab$", "a"));  // shorter than the pattern
  // An unknown name (empty) matches nothing.
  EXPECT_FALSE(SuppressionPatternMatches("*", ""));
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name + "." + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

SymbolizedFrame Frame(const std::string& function, const std::string& module,
                      const std::string& file, bool inlined = false) {
  SymbolizedFrame f;
  f.function = function;
  f.module = module;
  f.file = file;
  f.inlined = inlined;
  return f;
}

TEST(Suppressions, FileFormatCommentsBlankLinesAndErrorsWithFileAndLine) {
  const std::string good = WriteFile("good.supp",
                                     "# known leaks\n"
                                     "\n"
                                     "leak:MakeWidget\n"
                                     "   leak:^libplugin*   \r\n"
                                     "leak:src/cache.cc$\n");
  Suppressions s;
  ASSERT_TRUE(s.AddFile(good).ok());
  ASSERT_EQ(s.rules().size(), 3u);
  EXPECT_EQ(s.rules()[0].pattern, "MakeWidget");
  EXPECT_EQ(s.rules()[1].pattern, "^libplugin*");
  EXPECT_EQ(s.rules()[2].pattern, "src/cache.cc$");
  EXPECT_FALSE(s.rules()[0].builtin);

  // Another type, no type, an empty pattern: the file and line, and nothing of that file added.
  const struct {
    const char* text;
    const char* message;
  } bad[] = {{"leak:ok\n# c\nrace:Foo\n", ":3: suppression type 'race' is not one"},
             {"\nMakeWidget\n", ":2: not a suppression (TYPE:PATTERN expected): 'MakeWidget'"},
             {"leak:   \n", ":1: empty suppression pattern"},
             {"leak:^$\n", ":1: empty suppression pattern"}};
  for (const auto& c : bad) {
    const std::string path = WriteFile("bad.supp", c.text);
    const SuppressionsStatus status = s.AddFile(path);
    EXPECT_FALSE(status.ok()) << c.text;
    EXPECT_NE(std::string(status.message()).find(path + c.message), std::string::npos)
        << status.message();
  }
  EXPECT_EQ(s.rules().size(), 3u);
  const SuppressionsStatus missing = s.AddFile("/nonexistent/x.supp");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.message()).find("/nonexistent/x.supp"), std::string::npos);

  // Files add up, through the option's comma list too (empty items skipped).
  const std::string other = WriteFile("other.supp", "leak:Other\n");
  ASSERT_TRUE(s.AddFiles(other + ",," + good).ok());
  EXPECT_EQ(s.rules().size(), 7u);
  EXPECT_EQ(s.rules()[3].pattern, "Other");
  EXPECT_FALSE(s.AddFiles(other + ",/nonexistent/y.supp").ok());
}

TEST(Suppressions, MatchesFunctionObjectOrFileOfAnyFrameFirstRuleFirst) {
  Suppressions s;
  ASSERT_TRUE(s.AddText("leak:Inlined\nleak:^/opt/libplugin\nleak:cache.cc$\nleak:main\n", "t").ok());
  s.AddBuiltin();
  ASSERT_EQ(s.rules().size(), 5u);
  EXPECT_TRUE(s.rules()[4].builtin);
  EXPECT_EQ(s.rules()[4].pattern, "*tls_get_addr*");
  auto match = [&](const std::vector<SymbolizedFrame>& frames) -> std::string {
    const SuppressionRule* rule = s.Match(frames);
    return rule != nullptr ? rule->pattern : "(none)";
  };
  // By function, by object path, by source file; an inlined frame is a frame too.
  EXPECT_EQ(match({Frame("Helper", "/usr/bin/app", "a.cc", /*inlined=*/false),
                   Frame("Inlined", "/usr/bin/app", "b.cc", true)}),
            "Inlined");
  EXPECT_EQ(match({Frame("Init", "/opt/libplugin.so", "p.cc")}), "^/opt/libplugin");
  EXPECT_EQ(match({Frame("Init", "/usr/opt/libplugin.so", "p.cc")}), "(none)");  // anchored
  EXPECT_EQ(match({Frame("Fill", "/usr/bin/app", "src/cache.cc")}), "cache.cc$");
  EXPECT_EQ(match({Frame("__tls_get_addr", "/lib64/ld-linux-x86-64.so.2", "")}),
            "*tls_get_addr*");
  // Two rules match: the first one added wins, whichever frame matched.
  EXPECT_EQ(match({Frame("main", "/usr/bin/app", "m.cc"), Frame("x", "", "src/cache.cc")}),
            "cache.cc$");
  EXPECT_EQ(match({}), "(none)");
  EXPECT_TRUE(s.Used().empty());
  EXPECT_EQ(s.MutableRule(nullptr), nullptr);
}

// ---- the suppress stage ----

// A heap of real blocks: `count` of them, each `size` bytes; blocks[i].address its memory.
struct Heap {
  std::vector<std::vector<uintptr_t>> memory;
  std::vector<Allocation> blocks;
  void Add(uint32_t stack_id, size_t words) {
    memory.emplace_back(words, 0);
    Allocation a{};
    a.address = reinterpret_cast<uintptr_t>(memory.back().data());
    a.size = words * sizeof(uintptr_t);
    a.sequence = blocks.size();
    a.stack_id = stack_id;
    a.thread = 1;
    blocks.push_back(a);
  }
  void Point(size_t from, size_t word, size_t to) {
    memory[from][word] = blocks[to].address + 8;  // interior pointers count
  }
};

// SpreadFrom's contract, the plain way: the leaked blocks reachable from the seeds through
// leaked blocks, following every word that points into a block.
bool FollowPointers(const Allocation* blocks, size_t n, const Verdict* verdicts,
                    const uint8_t* seeds, uint8_t* out) {
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i) {
    if (seeds[i] && IsLeak(verdicts[i])) {
      out[i] = 1;
      work.push_back(i);
    }
  }
  while (!work.empty()) {
    const Allocation& a = blocks[work.back()];
    work.pop_back();
    const uintptr_t* words = reinterpret_cast<const uintptr_t*>(a.address);
    for (size_t w = 0; w < a.size / sizeof(uintptr_t); ++w) {
      for (size_t j = 0; j < n; ++j) {
        if (words[w] >= blocks[j].address && words[w] < blocks[j].address + blocks[j].size &&
            !out[j] && IsLeak(verdicts[j])) {
          out[j] = 1;
          work.push_back(j);
        }
      }
    }
  }
  return true;
}

std::vector<NamedStack> StageStacks() {
  std::vector<NamedStack> stacks(5);
  stacks[1].frames = {Frame("MakeList", "/usr/bin/app", "list.cc")};
  stacks[2].frames = {Frame("MakeNode", "/usr/bin/app", "list.cc")};
  stacks[3].frames = {Frame("Keep", "/usr/bin/app", "keep.cc")};
  stacks[4].frames = {Frame("Other", "/usr/bin/app", "other.cc")};
  return stacks;
}

TEST(ReportSuppress, ASuppressedHeadTakesTheNodesItAloneHoldsWithIt) {
  // A leaked list: head (stack 1, direct) -> 9 nodes (stack 2, indirect). A reachable block
  // (stack 1) and an unrelated direct leak (stack 4). A node whose own stack matches a second
  // rule counts under that rule.
  Heap heap;
  heap.Add(1, 4);                                       // 0: head
  for (int i = 0; i < 9; ++i) heap.Add(2, 2);           // 1..9: nodes
  heap.Add(1, 3);                                       // 10: reachable
  heap.Add(4, 5);                                       // 11: another leak
  heap.Point(0, 1, 1);
  for (size_t i = 1; i < 9; ++i) heap.Point(i, 0, i + 1);
  std::vector<Verdict> base(heap.blocks.size(), Verdict::kIndirect);
  base[0] = Verdict::kDirect;
  base[10] = Verdict::kReachable;
  base[11] = Verdict::kDirect;

  for (bool with_spread : {true, false}) {
    Suppressions s;
    ASSERT_TRUE(s.AddText("leak:MakeList\nleak:keep.cc\n", "t").ok());
    std::vector<Verdict> verdicts = base;
    LeakReport report;
    SuppressLeaks(heap.blocks.data(), heap.blocks.size(), StageStacks(),
                  with_spread ? LeakSpread(FollowPointers) : LeakSpread(), &s, &verdicts,
                  &report);
    const size_t suppressed = with_spread ? 10 : 1;
    for (size_t i = 0; i < 10; ++i) {
      EXPECT_EQ(verdicts[i], i < suppressed ? Verdict::kIgnored : base[i]) << i << with_spread;
    }
    EXPECT_EQ(verdicts[10], Verdict::kReachable);  // not a leak: never suppressed
    EXPECT_EQ(verdicts[11], Verdict::kDirect);
    ASSERT_EQ(report.suppressions.size(), 1u);  // "keep.cc" suppressed nothing: not listed
    EXPECT_EQ(report.suppressions[0].pattern, "MakeList");
    EXPECT_EQ(report.suppressions[0].count, suppressed);
    EXPECT_EQ(report.suppressions[0].bytes, 32u + (suppressed - 1) * 16u);
    EXPECT_EQ(report.summary.suppressed_allocations, suppressed);
    EXPECT_EQ(report.summary.suppressed_bytes, report.suppressions[0].bytes);
  }

  // A node's own stack matching a rule: counted in that rule, the rest in the head's.
  std::vector<NamedStack> stacks = StageStacks();
  heap.blocks[5].stack_id = 3;  // "Keep", keep.cc
  Suppressions s;
  ASSERT_TRUE(s.AddText("leak:MakeList\nleak:keep.cc\n", "t").ok());
  std::vector<Verdict> verdicts = base;
  LeakReport report;
  SuppressLeaks(heap.blocks.data(), heap.blocks.size(), stacks, FollowPointers, &s, &verdicts,
                &report);
  ASSERT_EQ(report.suppressions.size(), 2u);
  EXPECT_EQ(report.suppressions[0].count, 9u);
  EXPECT_EQ(report.suppressions[1].pattern, "keep.cc");
  EXPECT_EQ(report.suppressions[1].count, 1u);
  EXPECT_EQ(report.summary.suppressed_allocations, 10u);

  // No rules: nothing changes.
  Suppressions none;
  verdicts = base;
  LeakReport untouched;
  SuppressLeaks(heap.blocks.data(), heap.blocks.size(), stacks, FollowPointers, &none, &verdicts,
                &untouched);
  EXPECT_EQ(verdicts, base);
  EXPECT_TRUE(untouched.suppressions.empty());
}

}  // namespace
}  // namespace stackwalk::leakcheck
