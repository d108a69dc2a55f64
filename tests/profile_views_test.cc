// stackwalk-report's memory-profile views over the dump of a real checked program with known
// allocation sites (fixtures/profile_sites.c): each view's figures for those sites checked
// exactly, its JSON parsed, its folded output summed against the view's total, its flame graph
// (SVG) and the HTML page checked for the same figures; old dumps (no statistics) give a clear
// error.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "file_and_shell.h"

namespace {

using nlohmann::json;

using stackwalk_test::Read;
using stackwalk_test::Shell;

// The fixture's dump, made once for the suite.
const std::string& SitesDump() {
  static const std::string dump = [] {
    const std::string dir = ::testing::TempDir() + "profile_views." + std::to_string(getpid());
    Shell("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
    const std::string path = dir + "/sites.dump";
    // Slowly (30 ms before each site) with a point every 8 ms: the timeline sees each site.
    Shell(std::string(STACKWALK_LEAKCHECK) + " --output " + dir + "/report.txt --dump " + path +
          " --timeline-interval-ms 8 " + PROFILE_SITES + " slow >/dev/null 2>&1");
    return path;
  }();
  return dump;
}

std::string Report(const std::string& args, int* status = nullptr) {
  const std::string out = ::testing::TempDir() + "profile_views.out." + std::to_string(getpid());
  const int rc = Shell(std::string(STACKWALK_REPORT) + " " + args + " >" + out + " 2>" + out + ".err");
  if (status != nullptr) *status = rc;
  return Read(out);
}

json View(const std::string& view) {
  int status = -1;
  const std::string text = Report("--view " + view + " --format json " + SitesDump(), &status);
  EXPECT_EQ(status, 0) << text;
  return json::parse(text);
}

struct Figures {
  uint64_t bytes = 0;
  uint64_t allocations = 0;
  int stacks = 0;
};

// The figures of the stacks whose innermost frame is `site`.
Figures Site(const json& view, const std::string& site) {
  Figures out;
  for (const json& s : view["stacks"]) {
    if (!s["frames"].empty() && s["frames"][0] == site) {
      out.bytes += s["bytes"].get<uint64_t>();
      out.allocations += s["allocations"].get<uint64_t>();
      ++out.stacks;
    }
  }
  return out;
}

// The values of folded output ("a;b;c VALUE" lines), summed; each line checked for its form.
uint64_t FoldedSum(const std::string& folded, int* lines) {
  uint64_t sum = 0;
  *lines = 0;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    if (space == std::string::npos) continue;
    EXPECT_GT(space, 0u) << line;
    sum += std::stoull(line.substr(space + 1));
    ++*lines;
  }
  return sum;
}

TEST(ProfileViews, PeakHoldsTheSitesLiveAtThePeakAndSumsToTheProcessPeak) {
  const json peak = View("peak");
  EXPECT_EQ(peak["view"], "peak");
  const Figures big = Site(peak, "peak_site");
  EXPECT_EQ(big.bytes, 1u << 20);
  EXPECT_EQ(big.allocations, 1u);
  EXPECT_EQ(Site(peak, "growth_site").bytes, 50000u);
  EXPECT_EQ(Site(peak, "growth_site").allocations, 50u);
  EXPECT_EQ(Site(peak, "after_peak_site").bytes, 100u);
  // Freed, and allocated after the peak: no part of it.
  EXPECT_EQ(Site(peak, "temporary_site").stacks, 0);
  EXPECT_EQ(Site(peak, "thread_site").stacks, 0);
  // One thread ran at the peak: the contributions are exact.
  EXPECT_EQ(peak["total_bytes"], peak["peak_bytes"]);
  // Largest first.
  EXPECT_EQ(peak["stacks"][0]["frames"][0], "peak_site");
}

TEST(ProfileViews, AllocationsCountEveryAllocationOfTheRun) {
  const json all = View("allocations");
  EXPECT_EQ(Site(all, "temporary_site").allocations, 100u);
  EXPECT_EQ(Site(all, "temporary_site").bytes, 6400u);
  EXPECT_EQ(Site(all, "growth_site").allocations, 50u);
  EXPECT_EQ(Site(all, "peak_site").allocations, 1u);
  EXPECT_EQ(Site(all, "peak_site").bytes, 1u << 20);
  EXPECT_EQ(Site(all, "thread_site").allocations, 30u);
  EXPECT_EQ(Site(all, "thread_site").bytes, 10 * 3000u + 20 * 500u);
  EXPECT_EQ(all["stacks"][0]["frames"][0], "temporary_site");  // the most allocations
}

TEST(ProfileViews, TemporaryHoldsOnlyBlocksFreedBeforeTheThreadAllocatedAgain) {
  const json temporary = View("temporary");
  EXPECT_EQ(Site(temporary, "temporary_site").allocations, 100u);
  EXPECT_EQ(Site(temporary, "temporary_site").bytes, 6400u);
  // Freed after after_peak_site allocated: not temporary.
  EXPECT_EQ(Site(temporary, "peak_site").stacks, 0);
  EXPECT_EQ(Site(temporary, "growth_site").stacks, 0);
}

TEST(ProfileViews, LiveHoldsTheBlocksLiveAtTheEnd) {
  const json live = View("live");
  EXPECT_EQ(Site(live, "growth_site").bytes, 50000u);
  EXPECT_EQ(Site(live, "growth_site").allocations, 50u);
  EXPECT_EQ(Site(live, "after_peak_site").bytes, 100u);
  EXPECT_EQ(Site(live, "thread_site").bytes, 40000u);
  EXPECT_EQ(Site(live, "thread_site").allocations, 30u);
  EXPECT_EQ(Site(live, "peak_site").stacks, 0);
  EXPECT_EQ(Site(live, "temporary_site").stacks, 0);
}

TEST(ProfileViews, ThreadsGiveEachWorkersLiveBytesAndPeak) {
  const json threads = View("threads");
  std::map<std::string, json> by_name;
  for (const json& t : threads["threads"]) by_name[t["name"].get<std::string>()] = t;
  ASSERT_TRUE(by_name.count("worker-a")) << threads.dump();
  ASSERT_TRUE(by_name.count("worker-b")) << threads.dump();
  // What each allocated, kept: its own blocks only (its stack and TLS are not malloc'ed).
  EXPECT_EQ(by_name["worker-a"]["live_bytes"], 30000u);
  EXPECT_EQ(by_name["worker-a"]["peak_bytes"], 30000u);
  EXPECT_EQ(by_name["worker-b"]["live_bytes"], 10000u);
  EXPECT_EQ(by_name["worker-b"]["peak_bytes"], 10000u);
  EXPECT_TRUE(by_name["worker-a"]["exited"].get<bool>());
  // The main thread held the 1 MiB block: the largest peak comes first.
  EXPECT_GE(threads["threads"][0]["peak_bytes"].get<uint64_t>(), (1u << 20) + 50000u);
}

TEST(ProfileViews, TheTimelineHasAPointAtThePeakAndEachWorkersBytes) {
  const json timeline = View("timeline");
  const json& points = timeline["timeline"];
  ASSERT_GE(points.size(), 5u) << timeline.dump();
  EXPECT_EQ(points[0]["time_ns"], 0u);
  uint64_t last = 0, highest = 0;
  bool peak_point = false, worker_a = false, worker_b = false;
  for (const json& p : points) {
    EXPECT_GE(p["time_ns"].get<uint64_t>(), last);
    last = p["time_ns"].get<uint64_t>();
    highest = std::max(highest, p["live_bytes"].get<uint64_t>());
    // The 1 MiB block came 30 ms after the last point: sampled at the new peak it made (the
    // 100 bytes of after_peak_site, allocated before the block was freed, came after it).
    if (p["at_peak"].get<bool>() &&
        p["live_bytes"].get<uint64_t>() + 100 == timeline["peak_bytes"].get<uint64_t>()) {
      peak_point = true;
    }
    for (const json& t : p["threads"]) {
      worker_a |= t["name"] == "worker-a" && t["live_bytes"] == 30000u;
      worker_b |= t["name"] == "worker-b" && t["live_bytes"] == 10000u;
    }
  }
  EXPECT_TRUE(peak_point) << timeline.dump();
  EXPECT_EQ(highest, timeline["peak_bytes"].get<uint64_t>());
  // The last point is the dump's: both workers' blocks are in it.
  EXPECT_TRUE(worker_a) << timeline.dump();
  EXPECT_TRUE(worker_b) << timeline.dump();
  // The run took over 150 ms: the points span it.
  EXPECT_GE(last, 150000000u);
  EXPECT_EQ(timeline["interval_ns"], 8000000u);
  int status = -1;
  Report("--view timeline --format folded " + SitesDump(), &status);
  EXPECT_EQ(status, 2);
}

TEST(ProfileViews, FoldedValuesSumToTheViewsTotal) {
  for (const char* view : {"peak", "allocations", "temporary", "live"}) {
    SCOPED_TRACE(view);
    const json whole = View(view);
    int status = -1;
    const std::string folded =
        Report(std::string("--view ") + view + " --format folded " + SitesDump(), &status);
    EXPECT_EQ(status, 0);
    int lines = 0;
    const bool by_count = std::string(view) == "allocations" || std::string(view) == "temporary";
    EXPECT_EQ(FoldedSum(folded, &lines),
              whole[by_count ? "total_allocations" : "total_bytes"].get<uint64_t>());
    EXPECT_EQ(static_cast<size_t>(lines), whole["stacks"].size());
  }
  // The leaks view's JSON is the leak report's own: its folded stacks sum to the leaked bytes.
  const json leaks = View("leaks");
  const std::string folded_leaks = Report("--view leaks --format folded " + SitesDump());
  int lines = 0;
  EXPECT_EQ(FoldedSum(folded_leaks, &lines), leaks["summary"]["bytes"].get<uint64_t>());
  // All three of leak_site's blocks: the recording's memory of each thread's last allocation
  // (for the temporary view) must not keep the last one reachable.
  EXPECT_EQ(leaks["summary"]["bytes"], 300u) << leaks.dump();
  EXPECT_NE(folded_leaks.find(";main;leak_site 300\n"), std::string::npos) << folded_leaks;
  // Outermost first: main's frame before the site's.
  const std::string folded = Report("--view allocations --format folded " + SitesDump());
  EXPECT_NE(folded.find("main;temporary_site 100\n"), std::string::npos) << folded;
}

// The value of `attribute` on the first element that has it, or "" when none does.
std::string Attribute(const std::string& markup, const std::string& attribute, size_t from = 0) {
  const std::string key = " " + attribute + "=\"";
  const size_t at = markup.find(key, from);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return markup.substr(start, markup.find('"', start) - start);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ProfileViews, EachStackViewsFlameGraphHoldsItsSitesAndSumsToItsTotal) {
  const std::map<std::string, std::vector<std::string>> sites = {
      {"peak", {"peak_site", "growth_site", "after_peak_site"}},
      {"allocations", {"temporary_site", "growth_site", "peak_site", "thread_site"}},
      {"temporary", {"temporary_site"}},
      {"live", {"growth_site", "after_peak_site", "thread_site"}},
      {"leaks", {"leak_site"}},
  };
  for (const auto& [view, names] : sites) {
    SCOPED_TRACE(view);
    int status = -1;
    const std::string svg = Report("--view " + view + " --format svg " + SitesDump(), &status);
    ASSERT_EQ(status, 0) << svg;
    ASSERT_EQ(svg.rfind("<?xml", 0), 0u) << svg.substr(0, 200);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    for (const std::string& site : names) {
      EXPECT_NE(svg.find("<title>" + site + "\n"), std::string::npos) << site;
    }
    // The graph's total is the folded output's sum, which is the view's total (above).
    int lines = 0;
    const uint64_t folded = FoldedSum(Report("--view " + view + " --format folded " + SitesDump()), &lines);
    EXPECT_GT(folded, 0u);
    EXPECT_EQ(Attribute(svg, "data-total"), std::to_string(folded));
    const bool by_count = view == "allocations" || view == "temporary";
    EXPECT_EQ(Attribute(svg, "data-unit"), by_count ? "count" : "bytes");
  }
  EXPECT_EQ(Attribute(Report("--view peak --format svg " + SitesDump()), "data-total"),
            std::to_string(View("peak")["total_bytes"].get<uint64_t>()));
}

TEST(ProfileViews, TheHtmlPageHasTheTimelineTablesAndFlameGraphs) {
  int status = -1;
  const std::string page = Report("--format html " + SitesDump(), &status);
  ASSERT_EQ(status, 0) << page.substr(0, 400);
  ASSERT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  // Self-contained: nothing fetched.
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
  // The summary: the process and its totals.
  EXPECT_NE(page.find("profile_sites"), std::string::npos);
  const uint64_t peak = View("peak")["peak_bytes"].get<uint64_t>();
  std::string grouped = std::to_string(peak);
  for (size_t at = grouped.size(); at > 3; at -= 3) grouped.insert(at - 3, ",");
  EXPECT_NE(page.find("<th>peak</th><td>" + grouped + " bytes</td>"), std::string::npos) << grouped;
  // The timeline chart: its total line and each worker's series.
  EXPECT_NE(page.find("<h2>Live bytes over time</h2>"), std::string::npos);
  EXPECT_NE(page.find("#1f4e9a"), std::string::npos);  // timeline_chart.h's kTotalLineColour
  EXPECT_NE(page.find("worker-a["), std::string::npos);
  EXPECT_NE(page.find("worker-b["), std::string::npos);
  // The tables' known figures: the 1 MiB peak block, temporary_site's 100 allocations, the
  // workers' 30,000 and 10,000 live bytes.
  for (const char* title : {"Top stacks: peak", "Top stacks: allocations", "Top stacks: temporary",
                            "Top stacks: live", "Threads by peak"}) {
    EXPECT_NE(page.find(std::string("<h2>") + title), std::string::npos) << title;
  }
  EXPECT_NE(page.find("<td class=\"number\">1,048,576</td><td class=\"number\">"),
            std::string::npos);
  EXPECT_NE(page.find("<td class=\"number\">100</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>temporary_site &lt; main"), std::string::npos);
  EXPECT_NE(page.find("<td>worker-a</td><td class=\"number\">30,000</td><td "
                      "class=\"number\">30,000</td>"),
            std::string::npos);
  // A flame graph per stack view, each an inline <svg> with the view's total.
  EXPECT_EQ(Count(page, "<section class=\"flame\">"), 4u);
  EXPECT_EQ(Count(page, "class=\"fg-root\""), 4u);
  const size_t peak_graph = page.find("<h2>peak view: ");
  ASSERT_NE(peak_graph, std::string::npos);
  EXPECT_EQ(Attribute(page, "data-total", peak_graph), std::to_string(View("peak")["total_bytes"].get<uint64_t>()));
  const size_t allocations_graph = page.find("<h2>allocations view: ");
  ASSERT_NE(allocations_graph, std::string::npos);
  EXPECT_EQ(Attribute(page, "data-total", allocations_graph),
            std::to_string(View("allocations")["total_allocations"].get<uint64_t>()));
  // --view picks the view shown first.
  const std::string live_first = Report("--view live --format html " + SitesDump(), &status);
  EXPECT_EQ(status, 0);
  EXPECT_LT(live_first.find("<h2>live view: "), live_first.find("<h2>peak view: "));
}

TEST(ProfileViews, AViewWithoutStacksHasNoFlameGraph) {
  for (const char* view : {"threads", "timeline"}) {
    SCOPED_TRACE(view);
    int status = -1;
    Report(std::string("--view ") + view + " --format svg " + SitesDump(), &status);
    EXPECT_EQ(status, 2);
    const std::string err = Read(::testing::TempDir() + "profile_views.out." + std::to_string(getpid()) + ".err");
    EXPECT_NE(err.find(std::string("--view ") + view + " --format svg"), std::string::npos) << err;
  }
}

TEST(ProfileViews, TextShowsTheTopStacks) {
  const std::string text = Report("--view peak --top 1 " + SitesDump());
  EXPECT_NE(text.find("#1 1048576 byte(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("#0 peak_site"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n#2 "), std::string::npos) << text;
  EXPECT_NE(text.find("more stack(s) (--top)"), std::string::npos) << text;
}

// Sampled, a stack's allocation count is of its recorded blocks, not an estimate: the views say
// so; an unsampled run's do not.
TEST(ProfileViews, ASampledRunsViewsSayTheirCountsAreOfRecordedBlocks) {
  const std::string dir = ::testing::TempDir() + "profile_views_sampled." + std::to_string(getpid());
  Shell("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  const std::string dump = dir + "/sampled.dump";
  Shell(std::string(STACKWALK_LEAKCHECK) + " --output " + dir + "/report.txt --dump " + dump +
        " --sample-bytes 4096 --sample-seed 7 " + PROFILE_SITES + " >/dev/null 2>&1");
  int status = -1;
  const std::string text = Report("--view allocations --format json " + dump, &status);
  ASSERT_EQ(status, 0) << text;
  const json sampled = json::parse(text);
  ASSERT_TRUE(sampled.contains("sampled")) << text;
  EXPECT_EQ(sampled["sampled"]["sample_bytes"], 4096);
  EXPECT_EQ(sampled["sampled"]["allocations"], "counts of recorded blocks");
  const std::string table = Report("--view allocations " + dump, &status);
  EXPECT_EQ(status, 0) << table;
  EXPECT_NE(table.find("*** sampled (mean 4096 bytes): bytes are estimates; allocations are "
                       "counts of recorded blocks"),
            std::string::npos)
      << table;
  EXPECT_FALSE(View("allocations").contains("sampled"));
  EXPECT_EQ(Report("--view allocations " + SitesDump()).find("sampled"), std::string::npos);
  Shell("rm -rf '" + dir + "'");
}

TEST(ProfileViews, BadViewOrFormatIsRefused) {
  int status = -1;
  Report("--view nothing " + SitesDump(), &status);
  EXPECT_EQ(status, 2);
  Report("--format pdf " + SitesDump(), &status);
  EXPECT_EQ(status, 2);
  Report("--top x " + SitesDump(), &status);
  EXPECT_EQ(status, 2);
}

}  // namespace
