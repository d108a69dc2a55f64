// The flame graph's tree, layout, folded reader and SVG (leakcheck/profile), on hand-built
// stacks whose sums the tests compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "leakcheck/profile/flame_graph.h"
#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/folded_reader.h"
#include "leakcheck/profile/markup_escape.h"

namespace stackwalk::profile {
namespace {

const FlameNode* Find(const FlameTree& tree, const std::vector<std::string>& path) {
  const FlameNode* node = &tree.root();
  for (const std::string& name : path) {
    const FlameNode* next = nullptr;
    for (const uint32_t child : node->children) {
      if (tree.Name(tree.nodes()[child]) == name) next = &tree.nodes()[child];
    }
    if (next == nullptr) return nullptr;
    node = next;
  }
  return node;
}

FlameInput SampleInput() {
  FlameInput input;
  input.title = "sample";
  input.stacks = {{{"main", "parse", "std::vector<int>::push_back"}, 4096},
                  {{"main", "parse"}, 100},
                  {{"main", "work<A&>"}, 8192},
                  {{"main", "parse", "std::vector<int>::push_back"}, 1000},
                  {{"start_thread", "run"}, 3000}};
  return input;
}

TEST(FlameTree, MergesCommonPrefixesAndAddsValues) {
  const FlameTree tree = FlameTree::Build(SampleInput());
  EXPECT_EQ(tree.root().total, 4096u + 100 + 8192 + 1000 + 3000);
  EXPECT_EQ(Find(tree, {"main"})->total, 4096u + 100 + 8192 + 1000);
  EXPECT_EQ(Find(tree, {"main", "parse"})->total, 4096u + 100 + 1000);
  EXPECT_EQ(Find(tree, {"main", "parse", "std::vector<int>::push_back"})->total, 5096u);
  EXPECT_EQ(Find(tree, {"main", "parse", "std::vector<int>::push_back"})->depth, 3u);
  EXPECT_EQ(Find(tree, {"start_thread", "run"})->total, 3000u);
  EXPECT_EQ(tree.nodes().size(), 7u);  // all, main, parse, push_back, work, start_thread, run
  EXPECT_FALSE(tree.saturated());
  // Children by name: "main" < "start_thread", "parse" < "work<A&>".
  EXPECT_EQ(tree.Name(tree.nodes()[tree.root().children[0]]), "main");
  EXPECT_EQ(tree.Name(tree.nodes()[Find(tree, {"main"})->children[1]]), "work<A&>");
}

TEST(FlameTree, SaturatesInsteadOfWrapping) {
  FlameInput input;
  const uint64_t half = uint64_t{1} << 63;
  input.stacks = {{{"a"}, half}, {{"a"}, half}, {{"b"}, 5}};
  const FlameTree tree = FlameTree::Build(input);
  EXPECT_TRUE(tree.saturated());
  EXPECT_EQ(tree.root().total, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(Find(tree, {"a"})->total, std::numeric_limits<uint64_t>::max());
}

TEST(FlameLayout, ChildrenSitSideBySideInsideTheirCaller) {
  const FlameTree tree = FlameTree::Build(SampleInput());
  const FlameLayout layout = LayOut(tree, FlameLayoutOptions{});
  ASSERT_EQ(layout.rects.size(), tree.nodes().size());
  EXPECT_EQ(layout.hidden_frames, 0u);
  EXPECT_EQ(layout.max_depth, 3u);
  std::vector<uint64_t> offset(tree.nodes().size(), UINT64_MAX);
  for (const FlameRect& rect : layout.rects) offset[rect.node] = rect.offset;
  for (const FlameRect& rect : layout.rects) {
    const FlameNode& node = tree.nodes()[rect.node];
    uint64_t next = rect.offset;
    for (const uint32_t child : node.children) {
      EXPECT_EQ(offset[child], next) << tree.Name(tree.nodes()[child]);
      next += tree.nodes()[child].total;
    }
    EXPECT_LE(next, rect.offset + node.total);
  }
  EXPECT_EQ(offset[Find(tree, {"start_thread"}) - tree.nodes().data()], 4096u + 100 + 8192 + 1000);
}

TEST(FlameLayout, FramesBelowTheMinimumWidthCountInTheirCaller) {
  FlameInput input;
  input.stacks.push_back({{"big"}, 1000000});
  for (int i = 0; i < 1000; ++i) input.stacks.push_back({{"small", "s" + std::to_string(i), "leaf"}, 1});
  const FlameTree tree = FlameTree::Build(input);
  FlameLayoutOptions options;  // 0.1 px of 1200: frames under 1001000 / 12000 = 83.4 -> 84
  const FlameLayout layout = LayOut(tree, options);
  EXPECT_EQ(layout.min_drawn_value, 1000u);  // "small": the narrowest at least 84 wide
  // all, big, small drawn; each s<i> and its leaf hidden.
  EXPECT_EQ(layout.rects.size(), 3u);
  EXPECT_EQ(layout.hidden_frames, 2000u);
  EXPECT_EQ(layout.hidden_value, 1000u);
}

TEST(FlameLayout, AtMostMaxFramesTheWidestKept) {
  FlameInput input;
  for (uint64_t i = 1; i <= 100; ++i) input.stacks.push_back({{"f" + std::to_string(i)}, i * 1000});
  const FlameTree tree = FlameTree::Build(input);
  FlameLayoutOptions options;
  options.max_frames = 10;
  const FlameLayout layout = LayOut(tree, options);
  ASSERT_LE(layout.rects.size(), 10u);
  EXPECT_EQ(layout.rects.size(), 10u);  // all, f92..f100
  uint64_t narrowest = UINT64_MAX;
  for (const FlameRect& rect : layout.rects) narrowest = std::min(narrowest, tree.nodes()[rect.node].total);
  EXPECT_EQ(narrowest, 92000u);
  EXPECT_EQ(layout.hidden_frames, 91u);
}

// 300,000 distinct stacks (a million is scripts/bench_flamegraph.sh's: 95 s under qemu-arm here).
TEST(FlameLayout, ManyDistinctStacksStayBounded) {
  FlameTree tree;
  std::vector<std::string> frames(3);
  for (int i = 0; i < 300000; ++i) {
    frames[0] = "main";
    frames[1] = "caller" + std::to_string(i % 300);
    frames[2] = "site" + std::to_string(i);
    tree.Add(frames, 1 + i % 7);
  }
  tree.Finish();
  FlameSvgOptions options;
  const std::string svg = RenderFlameSvg(tree, "300,000 stacks", ValueUnit::kBytes, options);
  const FlameLayout layout = LayOut(tree, options.layout);
  // Only callers are wide enough (each ~0.33% of the total); no site is (at most 7 of ~1.2M).
  EXPECT_EQ(layout.rects.size(), 2u + 300);
  EXPECT_EQ(layout.hidden_frames, 300000u);
  EXPECT_LT(svg.size(), 300u * 1000);
  EXPECT_NE(svg.find("300,000 frames (100.00% of the total) are not drawn: narrower than 0.1 px "
                     "or past the 50,000 widest"),
            std::string::npos);
}

TEST(FlameLayout, DeepStacksNeedNoRecursion) {
  FlameInput input;
  FlameStack deep;
  for (int i = 0; i < 200000; ++i) deep.frames.push_back("f" + std::to_string(i % 3));
  deep.value = 1;
  input.stacks.push_back(std::move(deep));
  const FlameTree tree = FlameTree::Build(input);
  const FlameLayout layout = LayOut(tree, FlameLayoutOptions{});
  // 200,001 frames of equal width, more than max_frames (50,000): the outermost are kept.
  EXPECT_EQ(layout.rects.size(), 50000u);
  EXPECT_EQ(layout.hidden_frames, 150001u);
  EXPECT_EQ(layout.max_depth, 49999u);
}

TEST(FoldedReader, ReadsNamesWithSpacesAndCrLf) {
  FlameTree tree;
  const FoldedResult result = ReadFolded(
      "main;operator new(unsigned long) 10\r\n\n  \nmain;std::map<K, V>::operator[]\t 5\n"
      "main;operator new(unsigned long) 7",
      tree);
  tree.Finish();
  EXPECT_EQ(result.stacks, 3u);
  EXPECT_EQ(result.bad_lines, 0u);
  EXPECT_EQ(Find(tree, {"main", "operator new(unsigned long)"})->total, 17u);
  EXPECT_EQ(Find(tree, {"main", "std::map<K, V>::operator[]"})->total, 5u);
}

TEST(FoldedReader, NamesEachBadLineAndKeepsTheGoodOnes) {
  FlameTree tree;
  const FoldedResult result = ReadFolded(
      "a;b 1\nno-value\nc 1.5\n   7\nd -3\ne 18446744073709551616\nf 18446744073709551615\n", tree);
  tree.Finish();
  EXPECT_EQ(result.stacks, 2u);
  EXPECT_EQ(result.bad_lines, 5u);
  EXPECT_EQ(FormatFoldedErrors(result, "in.folded"),
            "in.folded:2: no value: expected 'frame;frame;... VALUE'\n"
            "in.folded:3: the value '1.5' is not a non-negative integer\n"
            "in.folded:4: no frames before the value\n"
            "in.folded:5: the value '-3' is not a non-negative integer\n"
            "in.folded:6: the value overflows 64 bits\n");
  EXPECT_EQ(Find(tree, {"f"})->total, std::numeric_limits<uint64_t>::max());
}

TEST(FoldedReader, KeepsTheFirstErrorsAndCountsTheRest) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "bad\n";
  FlameTree tree;
  const FoldedResult result = ReadFolded(text, tree);
  EXPECT_EQ(result.bad_lines, 50u);
  EXPECT_EQ(result.errors.size(), kMaxFoldedErrors);
  EXPECT_EQ(result.errors.back().line, kMaxFoldedErrors);
  EXPECT_NE(FormatFoldedErrors(result, "x").find("x: 30 more bad lines\n"), std::string::npos);
}

TEST(FlameSvg, EscapesEveryNameAndStaysValidUtf8) {
  FlameInput input;
  input.title = "t<&>";
  input.stacks = {{{"std::map<K, V>::at(K const&)", "say \"hi\" 'x'", std::string("bad\xff\xfe name")}, 10},
                  {{"]]></script><script>alert(1)</script>"}, 10}};
  const std::string svg =
      RenderFlameSvg(FlameTree::Build(input), input.title, ValueUnit::kBytes, FlameSvgOptions{});
  // Only well-formed UTF-8 is written (ValidUtf8 keeps no newline: line by line).
  for (size_t start = 0, end; start < svg.size(); start = end + 1) {
    end = std::min(svg.find('\n', start), svg.size());
    const std::string line = svg.substr(start, end - start);
    EXPECT_EQ(ValidUtf8(line), line);
  }
  EXPECT_NE(svg.find("<title>std::map&lt;K, V&gt;::at(K const&amp;)\n"), std::string::npos);
  EXPECT_NE(svg.find("say &quot;hi&quot; &#39;x&#39;"), std::string::npos);
  EXPECT_NE(svg.find("bad\xEF\xBF\xBD\xEF\xBF\xBD name"), std::string::npos);
  EXPECT_NE(svg.find(">t&lt;&amp;&gt;</text>"), std::string::npos);
  // The one CDATA section is the script's own.
  EXPECT_EQ(svg.find("]]>"), svg.rfind("]]>"));
  EXPECT_EQ(svg.find("<script>alert"), std::string::npos);
}

TEST(FlameSvg, SameStacksInAnyOrderGiveTheSameBytes) {
  FlameInput input = SampleInput();
  const std::string first =
      RenderFlameSvg(FlameTree::Build(input), "x", ValueUnit::kBytes, FlameSvgOptions{});
  std::mt19937 random(7);
  for (int i = 0; i < 5; ++i) {
    std::shuffle(input.stacks.begin(), input.stacks.end(), random);
    EXPECT_EQ(RenderFlameSvg(FlameTree::Build(input), "x", ValueUnit::kBytes, FlameSvgOptions{}), first);
  }
}

TEST(FlameSvg, OneRectPerFrameSizedByValue) {
  const FlameTree tree = FlameTree::Build(SampleInput());
  const std::string svg = RenderFlameSvg(tree, "x", ValueUnit::kBytes, FlameSvgOptions{});
  const std::regex frame(R"re(<g class="f" data-x="(\d+)" data-v="(\d+)" data-d="(\d+)"><title>([^\n]*)\n[^<]*</title><rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)")re");
  size_t frames = 0;
  const double total = static_cast<double>(tree.root().total);
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator(); ++it) {
    ++frames;
    const double value = std::stod((*it)[2]);
    EXPECT_NEAR(std::stod((*it)[6]), value / total * 1180, 0.01) << (*it)[4];
    EXPECT_NEAR(std::stod((*it)[5]), 10 + std::stod((*it)[1]) / total * 1180, 0.01) << (*it)[4];
  }
  EXPECT_EQ(frames, tree.nodes().size());
  // A frame as wide as its label shows it; "run" (3000 of 16388: 216 px) does, whole.
  EXPECT_NE(svg.find(">run</text>"), std::string::npos);
}

TEST(FlameSvg, LabelsAreClippedToTheirFrame) {
  FlameInput input;
  const std::string long_name(300, 'n');
  input.stacks = {{{long_name}, 1}, {{"wide"}, 9}};
  const std::string svg =
      RenderFlameSvg(FlameTree::Build(input), "x", ValueUnit::kCount, FlameSvgOptions{});
  // 118 px: (118 - 6) / 7 = 16 characters, 14 and "..".
  EXPECT_NE(svg.find(">" + std::string(14, 'n') + "..</text>"), std::string::npos);
  EXPECT_EQ(svg.find(std::string(15, 'n') + "</text>"), std::string::npos);
}

TEST(FlameSvg, SaysWhatItLeftOut) {
  FlameInput input;
  input.stacks = {{{"big"}, 100000}, {{"tiny"}, 1}};
  const std::string svg =
      RenderFlameSvg(FlameTree::Build(input), "x", ValueUnit::kBytes, FlameSvgOptions{});
  EXPECT_NE(svg.find("1 frames (0.00% of the total) are not drawn: narrower than 0.1 px"), std::string::npos);
  const std::string empty = RenderFlameSvg(FlameTree::Build(FlameInput{}), "x", ValueUnit::kBytes, FlameSvgOptions{});
  EXPECT_NE(empty.find("No values: nothing to draw."), std::string::npos);
}

TEST(MarkupEscape, EscapesTheFiveCharacters) {
  EXPECT_EQ(MarkupEscape("a<b>&\"'c"), "a&lt;b&gt;&amp;&quot;&#39;c");
  EXPECT_EQ(MarkupEscape("&amp;"), "&amp;amp;");
}

TEST(MarkupEscape, MakesAnyBytesValidUtf8ForXml) {
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\tx"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\tx");
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(ValidUtf8("\xff"), r);
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), r + r);          // overlong '/'
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), r + r + r);  // a surrogate
  EXPECT_EQ(ValidUtf8("\xf4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(ValidUtf8("\xe2\x82"), r + r);          // cut short
  EXPECT_EQ(ValidUtf8(std::string("a\0b\nc\x1b", 6)), "a" + r + "b" + r + "c" + r);
  EXPECT_EQ(ValidUtf8("\xef\xbf\xbe\xef\xbf\xbf"), r + r);  // U+FFFE, U+FFFF
}

TEST(MarkupEscape, PrefixesCountCodePoints) {
  EXPECT_EQ(Utf8Prefix("h\xc3\xa9llo", 2), "h\xc3\xa9");
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 1), "\xf0\x9f\x98\x80");
  EXPECT_EQ(Utf8Prefix("abc", 5), "abc");
  EXPECT_EQ(Utf8Length("h\xc3\xa9llo"), 5u);
}

}  // namespace
}  // namespace stackwalk::profile
