// The leak report's stages as units: grouping and filtering on hand-made blocks, the name stage
// on this test's own code, and each renderer on a hand-built LeakReport.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "leakcheck/report_group.h"
#include "leakcheck/report_model.h"
#include "leakcheck/report_name.h"
#include "leakcheck/report_render_json.h"
#include "leakcheck/report_render_text.h"

namespace stackwalk::leakcheck {
namespace {

SymbolizedFrame Frame(const std::string& function, const std::string& module, int index = 0) {
  SymbolizedFrame f;
  f.pc = 0x401000 + index * 16;
  f.index = index;
  f.module = module;
  f.module_offset = 0x1000 + index * 16;
  f.function = function;
  f.file = "src/" + function + ".cc";
  f.line = 10 + index;
  f.column = 3;
  return f;
}

// Stacks 1-4: the program's (two objects), a plugin's, and glibc's list of exit handlers.
std::vector<NamedStack> Stacks() {
  std::vector<NamedStack> stacks(5);
  stacks[1].frames = {Frame("MakeWidget", "/usr/bin/app"), Frame("main", "/usr/bin/app", 1)};
  stacks[2].frames = {Frame("PluginInit", "/opt/libplugin.so"), Frame("main", "/usr/bin/app", 1)};
  stacks[3].frames = {Frame("__new_exitfn", "/lib/libc.so.6")};
  stacks[4].frames = {};  // no stack
  for (uint32_t id = 1; id < stacks.size(); ++id) stacks[id].pcs = {0x401000u + id};
  return stacks;
}

Allocation Block(uintptr_t address, uint64_t size, uint32_t stack, int32_t thread, uint64_t sequence) {
  return Allocation{address, size, sequence, stack, thread};
}

const std::vector<Allocation> kBlocks = {
    Block(0x1000, 100, 1, 1, 5), Block(0x2000, 100, 1, 2, 3), Block(0x3000, 50, 2, 2, 9),
    Block(0x4000, 7, 3, 1, 1),   Block(0x5000, 30, 4, 3, 2),  Block(0x6000, 200, 2, 1, 4)};

TEST(LeakReportGroup, GroupsByStackAndTalliesThreads) {
  LeakReport report;
  GroupBlocks(kBlocks.data(), kBlocks.size(), {}, Stacks(), /*at_exit=*/false, &report);
  ASSERT_EQ(report.entries.size(), 4u);
  FilterEntries("", "", /*show_reachable=*/false, Stacks(), &report);
  ASSERT_EQ(report.entries.size(), 4u);
  // Largest first: stack 2 (250 bytes), stack 1 (200), stack 4 (30), stack 3 (7).
  EXPECT_EQ(report.entries[0].stack_id, 2u);
  EXPECT_EQ(report.entries[0].bytes, 250u);
  EXPECT_EQ(report.entries[0].count, 2u);
  EXPECT_EQ(report.entries[0].first_sequence, 4u);
  EXPECT_EQ(report.entries[0].thread, 1u);  // the earliest block's thread
  EXPECT_EQ(report.entries[0].frames[0].function, "PluginInit");
  EXPECT_EQ(report.entries[0].pcs, (std::vector<uintptr_t>{0x401002}));
  EXPECT_EQ(report.entries[1].stack_id, 1u);
  EXPECT_EQ(report.entries[1].thread, 2u);
  EXPECT_EQ(report.entries[3].stack_id, 3u);
  EXPECT_EQ(report.summary.bytes, 487u);
  EXPECT_EQ(report.summary.allocations, 6u);
  // Threads: 1 has 307 bytes in 3 blocks, 2 has 150 in 2, 3 has 30 in 1.
  ASSERT_EQ(report.threads.size(), 3u);
  EXPECT_EQ(report.threads[0].serial, 1u);
  EXPECT_EQ(report.threads[0].bytes, 307u);
  EXPECT_EQ(report.threads[0].count, 3u);
  EXPECT_EQ(report.threads[2].serial, 3u);
}

TEST(LeakReportGroup, AtExitTheExitHandlersListIsNotALeak) {
  LeakReport report;
  GroupBlocks(kBlocks.data(), kBlocks.size(), {}, Stacks(), /*at_exit=*/true, &report);
  FilterEntries("", "", /*show_reachable=*/false, Stacks(), &report);
  EXPECT_EQ(report.entries.size(), 3u);
  EXPECT_EQ(report.summary.bytes, 480u);
  EXPECT_EQ(report.threads[0].bytes, 300u);  // left out of the thread's tally too
}

TEST(LeakReportGroup, ReachableBlocksAreCountedNotShown) {
  const std::vector<Verdict> verdicts = {Verdict::kReachable,   Verdict::kDirect,
                                         Verdict::kDirect, Verdict::kReachable,
                                         Verdict::kReachable,   Verdict::kDirect};
  LeakReport report;
  GroupBlocks(kBlocks.data(), kBlocks.size(), verdicts, Stacks(), false, &report);
  EXPECT_EQ(report.entries.size(), 5u);  // stack 1 has blocks of both verdicts
  FilterEntries("", "", /*show_reachable=*/false, Stacks(), &report);
  ASSERT_EQ(report.entries.size(), 2u);
  EXPECT_EQ(report.entries[0].stack_id, 2u);
  EXPECT_EQ(report.entries[0].bytes, 250u);
  EXPECT_EQ(report.entries[1].stack_id, 1u);
  EXPECT_EQ(report.entries[1].bytes, 100u);
  EXPECT_EQ(report.entries[1].thread, 2u);  // the earliest unreachable block's thread
  EXPECT_EQ(report.summary.bytes, 350u);
  EXPECT_EQ(report.summary.reachable_bytes, 137u);
  EXPECT_EQ(report.summary.reachable_allocations, 3u);
  EXPECT_EQ(report.threads[0].bytes, 307u);  // threads count every live block
}

TEST(LeakReportGroup, DirectAndIndirectAreTotalledApartAndReachableShownOnRequest) {
  // Stack 1: one direct block (thread 2), one reachable; stack 2: indirect 250 bytes; stack 4:
  // reachable; stack 3 (glibc's exit handlers): ignored (suppressed or intended).
  const std::vector<Verdict> verdicts = {Verdict::kReachable, Verdict::kDirect,
                                         Verdict::kIndirect,  Verdict::kIgnored,
                                         Verdict::kReachable, Verdict::kIndirect};
  for (bool show : {false, true}) {
    LeakReport report;
    GroupBlocks(kBlocks.data(), kBlocks.size(), verdicts, Stacks(), false, &report);
    FilterEntries("", "", show, Stacks(), &report);
    EXPECT_EQ(report.show_reachable, show);
    ASSERT_EQ(report.entries.size(), show ? 4u : 2u);
    // Leaks first, largest first; then the reachable ones, largest first.
    EXPECT_EQ(report.entries[0].verdict, Verdict::kIndirect);
    EXPECT_EQ(report.entries[0].bytes, 250u);
    EXPECT_EQ(report.entries[1].verdict, Verdict::kDirect);
    EXPECT_EQ(report.entries[1].bytes, 100u);
    if (show) {
      EXPECT_EQ(report.entries[2].verdict, Verdict::kReachable);
      EXPECT_EQ(report.entries[2].bytes, 100u);
      EXPECT_EQ(report.entries[3].verdict, Verdict::kReachable);
      EXPECT_EQ(report.entries[3].bytes, 30u);
    }
    const ReportSummary& s = report.summary;
    EXPECT_EQ(s.bytes, 350u);  // direct + indirect, reachable never
    EXPECT_EQ(s.allocations, 3u);
    EXPECT_EQ(s.direct_bytes, 100u);
    EXPECT_EQ(s.direct_allocations, 1u);
    EXPECT_EQ(s.indirect_bytes, 250u);
    EXPECT_EQ(s.indirect_allocations, 2u);
    EXPECT_EQ(s.reachable_bytes, 130u);
    EXPECT_EQ(s.reachable_allocations, 2u);
  }
  // The library filters apply to the reachable totals too: only the plugin's stack (2) passes.
  LeakReport plugin;
  GroupBlocks(kBlocks.data(), kBlocks.size(), verdicts, Stacks(), false, &plugin);
  FilterEntries("libplugin*", "", true, Stacks(), &plugin);
  ASSERT_EQ(plugin.entries.size(), 1u);
  EXPECT_EQ(plugin.summary.indirect_bytes, 250u);
  EXPECT_EQ(plugin.summary.reachable_bytes, 0u);
  EXPECT_EQ(plugin.summary.direct_bytes, 0u);
}

TEST(LeakReportGroup, LibraryFilters) {
  auto shown = [](const char* libraries, const char* ignore) {
    LeakReport report;
    GroupBlocks(kBlocks.data(), kBlocks.size(), {}, Stacks(), false, &report);
    FilterEntries(libraries, ignore, false, Stacks(), &report);
    std::vector<uint32_t> ids;
    for (const ReportEntry& e : report.entries) ids.push_back(e.stack_id);
    return ids;
  };
  // Only stacks with a frame in a matching object (by file name or whole path)...
  EXPECT_EQ(shown("libplugin*", ""), (std::vector<uint32_t>{2}));
  EXPECT_EQ(shown("/usr/bin/app", ""), (std::vector<uint32_t>{2, 1}));
  // ... and none with a frame in an ignored one; a stack without frames passes ignoring.
  EXPECT_EQ(shown("", "libplugin.so,libc.so*"), (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(shown("app", "libplugin*"), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(PassesLibraryFilters("", "", {}));
  EXPECT_FALSE(PassesLibraryFilters("libx*", "", {}));
}

__attribute__((noinline)) uintptr_t PcInNamedFunction() {
  return reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}

TEST(LeakReportName, NamesOnlyStacksWithLiveBlocks) {
  std::vector<NamedStack> stacks(3);
  stacks[1].earliest = 7;
  stacks[1].pcs = {PcInNamedFunction()};  // a return address in this test's function
  stacks[2].pcs = {PcInNamedFunction()};  // no live block: not named
  std::unique_ptr<FrameNamer> namer;
  EXPECT_EQ(NameStacks(&stacks, nullptr, &namer), "");
  ASSERT_NE(namer, nullptr);
  ASSERT_FALSE(stacks[1].frames.empty());
  EXPECT_NE(stacks[1].frames.back().function.find("NamesOnlyStacksWithLiveBlocks"),
            std::string::npos)
      << stacks[1].frames.back().function;
  EXPECT_TRUE(stacks[2].frames.empty());
  // Nothing to name: no symbolizer is loaded.
  std::vector<NamedStack> none(2);
  std::unique_ptr<FrameNamer> unused;
  EXPECT_EQ(NameStacks(&none, nullptr, &unused), "");
  EXPECT_EQ(unused, nullptr);
}

// A report as the group and filter stages leave it, labels filled in.
LeakReport HandBuilt(bool scanned) {
  LeakReport report;
  report.occasion = "signal 12";
  report.number = 2;
  report.pid = 4242;
  report.program = "/usr/bin/app";
  ReportSummary& s = report.summary;
  s.bytes = 251;
  s.allocations = 3;
  s.direct_bytes = 250;
  s.direct_allocations = 2;
  s.indirect_bytes = 1;
  s.indirect_allocations = 1;
  s.suppressed_bytes = 64;
  s.suppressed_allocations = 2;
  s.method = "signal";
  s.fallback_reason = "ptrace_scope is 3";
  s.stopped_threads = 7;
  s.unstopped = {{812, "signal blocked"}, {813, "timeout"}};
  s.pause_ns = 1500;
  s.check_ns = 90000;
  s.scanned = scanned;
  s.reachable_bytes = 137;
  s.reachable_allocations = 1;
  s.peak_bytes = 9000;
  s.live_allocations = 10;
  s.distinct_stacks = 4;
  s.table_bytes = 2048;
  s.stack_bytes = 1000;
  ThreadEntry main_thread;
  main_thread.serial = 1;
  main_thread.bytes = 300;
  main_thread.count = 2;
  main_thread.name = "app";
  main_thread.tid = 4242;
  main_thread.peak_bytes = 5000;
  report.threads = {main_thread};
  ReportEntry big;
  big.stack_id = 2;
  big.verdict = Verdict::kDirect;
  big.bytes = 250;
  big.count = 2;
  big.thread = 1;
  big.thread_name = "app";
  big.tid = 4242;
  big.frames = {Frame("PluginInit", "/opt/libplugin.so"), Frame("main", "/usr/bin/app", 1)};
  ReportEntry bare;
  bare.stack_id = 4;
  bare.verdict = Verdict::kIndirect;
  bare.bytes = 1;
  bare.count = 1;
  bare.thread = 3;
  bare.thread_name = "w\xff";  // not UTF-8
  bare.tid = 4250;
  report.entries = {big, bare};
  report.suppressions = {{"libfoo.so", 1, 40, false}, {"*tls_get_addr*", 1, 24, true}};
  return report;
}

std::string OneLinePerFrame(const std::vector<SymbolizedFrame>& frames) {
  std::string text;
  for (const SymbolizedFrame& f : frames) text += "#" + std::to_string(f.index) + " " + f.function + "\n";
  return text;
}

TEST(LeakReportRender, Text) {
  const std::string text = RenderText(HandBuilt(true), OneLinePerFrame);
  EXPECT_EQ(text,
            "==stackwalk-leakcheck== leaks (report 2, on signal 12)\n"
            "==stackwalk-leakcheck== process 4242 (/usr/bin/app)\n"
            "==stackwalk-leakcheck== peak 9000 bytes live; 4 distinct allocation stacks\n"
            "==stackwalk-leakcheck== own memory 3048 bytes (allocation table 2048 bytes, stacks "
            "1000 bytes), 304 per live allocation\n"
            "==stackwalk-leakcheck== stopped 7 threads with signal (2 not stopped: tid 812, "
            "signal blocked; tid 813, timeout) (ptrace not used: ptrace_scope is 3)\n"
            "==stackwalk-leakcheck== leaks: 250 bytes direct in 2 allocations, 1 byte indirect in "
            "1 allocation\n"
            "==stackwalk-leakcheck== 137 bytes in 1 allocation still reachable (not shown)\n"
            "==stackwalk-leakcheck== 64 bytes in 2 allocations suppressed\n"
            "==stackwalk-leakcheck== thread app (tid 4242): 300 bytes live in 2 allocations, "
            "peak 5000 bytes\n"
            "\nDirect leak of 250 byte(s) in 2 object(s) allocated from:\n"
            "    #0 PluginInit\n"
            "    #1 main\n"
            "    first allocated by thread app (tid 4242)\n"
            "\nIndirect leak of 1 byte(s) in 1 object(s) allocated from:\n"
            "    (no stack)\n"
            "    first allocated by thread w\xff (tid 4250)\n"
            "\nSuppressions used:\n"
            "  count      bytes template\n"
            "      1         40 libfoo.so\n"
            "      1         24 *tls_get_addr* (built-in)\n"
            "\nSUMMARY: stackwalk-leakcheck: 251 bytes leaked in 3 allocations.\n");
}

TEST(LeakReportRender, TextNamesEachKindAndTheStopWithoutAScan) {
  LeakReport report = HandBuilt(true);
  report.summary.method = "ptrace";
  report.summary.stopped_threads = 1;
  report.summary.unstopped.clear();
  report.summary.fallback_reason.clear();
  report.show_reachable = true;
  report.entries[1].verdict = Verdict::kReachable;
  std::string text = RenderText(report, OneLinePerFrame);
  EXPECT_NE(text.find("== stopped 1 thread with ptrace\n"), std::string::npos) << text;
  EXPECT_NE(text.find("== 137 bytes in 1 allocation still reachable\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nReachable: 1 byte(s) in 1 object(s) allocated from:\n"), std::string::npos)
      << text;
  report.summary.method = "none";
  text = RenderText(report, OneLinePerFrame);
  EXPECT_NE(text.find("== scanned while other threads ran (none stopped)\n"), std::string::npos)
      << text;
  // No scan could run: every live block, as such, and no per-kind lines.
  report = HandBuilt(false);
  for (ReportEntry& e : report.entries) e.verdict = Verdict::kLive;
  report.suppressions_error = "/x.supp:3: empty suppression pattern";
  text = RenderText(report, OneLinePerFrame);
  EXPECT_NE(text.find("== live allocations (report 2, on signal 12)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("== no reachability scan ran: every live block is listed\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("== suppressions not applied: /x.supp:3: empty suppression pattern\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\nLive: 250 byte(s) in 2 object(s) allocated from:\n"), std::string::npos);
  EXPECT_EQ(text.find("leaks:"), std::string::npos) << text;
  EXPECT_EQ(text.find("still reachable"), std::string::npos) << text;
  EXPECT_NE(text.find("SUMMARY: stackwalk-leakcheck: 251 bytes live in 3 allocations.\n"),
            std::string::npos) << text;
}

TEST(LeakReportRender, TextAtExitWithUnnamedFramesAndManyThreads) {
  LeakReport report = HandBuilt(false);
  report.occasion = "exit";
  report.at_exit = true;
  report.naming_error = "cannot load libstackwalk_leakcheck_names.so";
  report.summary.live_allocations = 0;
  report.threads.resize(20, report.threads[0]);
  const std::string text = RenderText(report, OneLinePerFrame);
  EXPECT_EQ(text.rfind("==stackwalk-leakcheck== leaks at exit (report 2)\n", 0), 0u) << text;
  EXPECT_NE(text.find("stacks 1000 bytes)\n"), std::string::npos) << text;  // no per-allocation
  EXPECT_NE(text.find("==stackwalk-leakcheck== frames are not named: cannot load "
                      "libstackwalk_leakcheck_names.so\n"),
            std::string::npos);
  EXPECT_EQ(text.find("still reachable"), std::string::npos);
  size_t thread_lines = 0;
  for (size_t at = 0; (at = text.find("== thread ", at)) != std::string::npos; ++at) ++thread_lines;
  EXPECT_EQ(thread_lines, 16u);
  EXPECT_NE(text.find("==stackwalk-leakcheck== ... and 4 more threads\n"), std::string::npos);
  EXPECT_NE(text.find("\nSUMMARY: stackwalk-leakcheck: 251 bytes leaked in 3 allocations.\n"),
            std::string::npos);
}

TEST(LeakReportRender, Json) {
  const std::string text = RenderJson(HandBuilt(true));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1);  // one line
  // The keys the tests of the whole checker read, in the order they read them.
  EXPECT_EQ(text.rfind("{\"occasion\":\"signal 12\",\"pid\":4242,", 0), 0u) << text;
  EXPECT_NE(text.find("\"summary\":{\"bytes\":251,\"allocations\":3,"), std::string::npos) << text;
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["program"], "/usr/bin/app");
  const nlohmann::json& s = json["summary"];
  EXPECT_EQ(s["peak_bytes"], 9000);
  EXPECT_EQ(s["own_bytes"], 3048);
  EXPECT_EQ(s["scanned"], true);
  EXPECT_EQ(s["direct_bytes"], 250);
  EXPECT_EQ(s["direct_allocations"], 2);
  EXPECT_EQ(s["indirect_bytes"], 1);
  EXPECT_EQ(s["indirect_allocations"], 1);
  EXPECT_EQ(s["reachable_bytes"], 137);
  EXPECT_EQ(s["reachable_allocations"], 1);
  EXPECT_EQ(s["suppressed_bytes"], 64);
  EXPECT_EQ(s["suppressed_allocations"], 2);
  EXPECT_EQ(s["pause_ns"], 1500);
  EXPECT_EQ(s["check_ns"], 90000);
  EXPECT_EQ(json["stop"], nlohmann::json::parse(R"({"method":"signal",
      "fallback_reason":"ptrace_scope is 3","stopped_threads":7,
      "unstopped":[{"tid":812,"why":"signal blocked"},{"tid":813,"why":"timeout"}]})"));
  EXPECT_EQ(json["suppressions"], nlohmann::json::parse(R"([
      {"pattern":"libfoo.so","count":1,"bytes":40,"builtin":false},
      {"pattern":"*tls_get_addr*","count":1,"bytes":24,"builtin":true}])"));
  EXPECT_FALSE(json.contains("suppressions_error"));
  ASSERT_EQ(json["threads"].size(), 1u);
  EXPECT_EQ(json["threads"][0],
            nlohmann::json::parse(R"({"thread":"app","tid":4242,"bytes":300,"allocations":2,
                                      "peak_bytes":5000})"));
  ASSERT_EQ(json["leaks"].size(), 2u);
  const nlohmann::json& leak = json["leaks"][0];
  EXPECT_EQ(leak["kind"], "direct");
  EXPECT_EQ(json["leaks"][1]["kind"], "indirect");
  EXPECT_EQ(leak["bytes"], 250);
  EXPECT_EQ(leak["allocations"], 2);
  EXPECT_EQ(leak["thread"], "app");
  EXPECT_EQ(leak["tid"], 4242);
  ASSERT_EQ(leak["frames"].size(), 2u);
  EXPECT_EQ(leak["frames"][0]["function"], "PluginInit");
  EXPECT_EQ(leak["frames"][0]["module"], "/opt/libplugin.so");
  EXPECT_EQ(leak["frames"][0]["pc"], "0x401000");
  EXPECT_EQ(leak["frames"][1]["line"], 11);
  EXPECT_EQ(json["leaks"][1]["thread"], "w\xef\xbf\xbd");  // U+FFFD for the bad byte
  EXPECT_NE(text.find("\"thread\":\"w\\ufffd\""), std::string::npos) << text;
  EXPECT_TRUE(json["leaks"][1]["frames"].empty());
  // Without a scan, no per-kind totals; each entry "live"; an unread suppressions file said.
  LeakReport unscanned = HandBuilt(false);
  unscanned.entries[0].verdict = Verdict::kLive;
  unscanned.entries[1].verdict = Verdict::kReachable;
  unscanned.suppressions_error = "a.supp:1: bad";
  const nlohmann::json plain = nlohmann::json::parse(RenderJson(unscanned));
  EXPECT_EQ(plain["summary"]["scanned"], false);
  EXPECT_FALSE(plain["summary"].contains("reachable_bytes"));
  EXPECT_FALSE(plain["summary"].contains("direct_bytes"));
  EXPECT_EQ(plain["leaks"][0]["kind"], "live");
  EXPECT_EQ(plain["leaks"][1]["kind"], "reachable");
  EXPECT_EQ(plain["suppressions_error"], "a.supp:1: bad");
}

}  // namespace
}  // namespace stackwalk::leakcheck
