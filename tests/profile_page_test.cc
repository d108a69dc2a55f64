// The HTML report, its timeline chart and its JSON input (leakcheck/profile).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/profile/html_report.h"
#include "leakcheck/profile/page_json.h"
#include "leakcheck/profile/timeline_chart.h"
#include "leakcheck/profile/value_format.h"

namespace stackwalk::profile {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// The number of points of the polyline drawn for `series` (string search: libstdc++'s
// std::regex recurses per character and overflows the stack on a long points list).
size_t PolylinePoints(const std::string& svg, const std::string& series) {
  const size_t line = svg.find("data-series=\"" + series + "\"");
  if (line == std::string::npos) return 0;
  const size_t start = svg.find(" points=\"", line);
  if (start == std::string::npos) return 0;
  const size_t end = svg.find('"', start + 9);
  return Count(svg.substr(start + 9, end - start - 9), ",");
}

TEST(ValueFormat, BytesInBinaryUnitsCountsGrouped) {
  EXPECT_EQ(FormatValue(1023, ValueUnit::kBytes), "1023 B");
  EXPECT_EQ(FormatValue(1536, ValueUnit::kBytes), "1.50 KiB");
  EXPECT_EQ(FormatValue(uint64_t{200} << 20, ValueUnit::kBytes), "200 MiB");
  EXPECT_EQ(FormatValue(UINT64_MAX, ValueUnit::kBytes), "16.0 EiB");
  EXPECT_EQ(FormatValue(1234567, ValueUnit::kCount), "1,234,567");
  EXPECT_EQ(FormatExact(1, ValueUnit::kBytes), "1 byte");
  EXPECT_EQ(FormatShare(1, 3), "33.33%");
  EXPECT_EQ(FormatShare(1, 0), "0.00%");
  EXPECT_EQ(FormatCoordinate(12.5), "12.5");
  EXPECT_EQ(FormatCoordinate(-0.001), "0");
}

TEST(TimelineChart, AxisStepsAreOneTwoOrFive) {
  EXPECT_EQ(NiceStep(10, 5, 10), 2);
  EXPECT_EQ(NiceStep(7.3, 8, 10), 1);
  EXPECT_EQ(NiceStep(0.03, 8, 10), 0.005);
  EXPECT_EQ(NiceStep(5 << 20, 5, 1024), 1 << 20);       // 1 MiB
  EXPECT_EQ(NiceStep(900 << 10, 5, 1024), 200 << 10);   // 200 KiB
}

TEST(TimelineChart, DrawsTotalAndThreadsWithAxesAndLegend) {
  Timeline timeline;
  timeline.thread_names = {"main", "w<1>"};
  for (int i = 0; i <= 10; ++i) {
    timeline.points.push_back(TimelinePoint{i * 0.5, uint64_t(i) << 20, {uint64_t(i) << 19, uint64_t(i) << 19}});
  }
  const std::string svg = RenderTimelineChart(timeline, 1000, 300);
  EXPECT_EQ(PolylinePoints(svg, "total"), 11u);
  EXPECT_EQ(PolylinePoints(svg, "thread main"), 11u);
  EXPECT_EQ(PolylinePoints(svg, "thread w&lt;1&gt;"), 11u);
  EXPECT_NE(svg.find(std::string("stroke=\"") + kTotalLineColour), std::string::npos);
  EXPECT_NE(svg.find(">10.0 MiB</text>"), std::string::npos);  // the top of the byte axis
  EXPECT_NE(svg.find(">5 s</text>"), std::string::npos);        // the end of the time axis
  EXPECT_NE(svg.find(">time (seconds)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">live bytes</text>"), std::string::npos);
  EXPECT_NE(svg.find(">thread w&lt;1&gt;</text>"), std::string::npos);  // in the legend
}

TEST(TimelineChart, AMillionSamplesDrawAtMostTwoPointsPerPixelKeepingThePeak) {
  Timeline timeline;
  for (int i = 0; i < 1000000; ++i) {
    timeline.points.push_back(TimelinePoint{i * 0.001, uint64_t(i % 1000), {}});
  }
  timeline.points[777777].total_bytes = 5000;  // one sample's peak
  const std::string svg = RenderTimelineChart(timeline, 1000, 300);
  const size_t plot_width = 1000 - 80 - 20;
  EXPECT_LE(PolylinePoints(svg, "total"), 2 * (plot_width + 1));
  EXPECT_GT(PolylinePoints(svg, "total"), plot_width);
  // The peak's y: the axis tops at 5000 B rounded up to a step of 1 KiB: 5 KiB.
  const double y = 20 + 240 - 5000.0 * 240 / (5 * 1024);
  EXPECT_NE(svg.find("," + FormatCoordinate(y)), std::string::npos);
}

TEST(TimelineChart, DrawsOnlyTheThreadsWithTheHighestPeaks) {
  Timeline timeline;
  TimelinePoint point{0, 100, {}};
  for (int t = 0; t < 12; ++t) {
    timeline.thread_names.push_back("t" + std::to_string(t));
    point.thread_bytes.push_back(uint64_t(t));
  }
  timeline.points = {point, point};
  timeline.points[1].seconds = 1;
  const std::string svg = RenderTimelineChart(timeline, 800, 300);
  EXPECT_EQ(Count(svg, "<polyline"), 1 + kMaxThreadSeries);
  EXPECT_EQ(PolylinePoints(svg, "thread t11"), 2u);
  EXPECT_EQ(PolylinePoints(svg, "thread t3"), 0u);
  EXPECT_NE(svg.find("4 threads with lower peaks not drawn"), std::string::npos);
  EXPECT_NE(RenderTimelineChart(Timeline{}, 800, 300).find("No timeline samples"), std::string::npos);
}

ReportPage SamplePage() {
  ReportPage page;
  page.title = "profile of <prog>";
  page.summary = {{"peak", "1.00 MiB"}, {"program", "./a & b"}};
  page.timeline.thread_names = {"main"};
  page.timeline.points = {{0, 10, {10}}, {1, 1 << 20, {1 << 20}}, {2, 100, {100}}};
  page.tables.push_back(ReportTable{"top <peak>", {"bytes", "function"}, {{"1,024", "f<int>"}, {"7"}}});
  FlameInput graph;
  graph.title = "peak";
  graph.stacks = {{{"main", "f<int>"}, 1024}, {{"main", "g"}, 7}};
  page.flame_graphs = {graph, graph};
  page.flame_graphs[1].title = "allocations";
  page.flame_graphs[1].unit = ValueUnit::kCount;
  return page;
}

TEST(ReportPage, HasSummaryChartTablesAndFlameGraphsEscaped) {
  const std::string html = RenderReportPage(SamplePage(), ReportPageOptions{});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>profile of &lt;prog&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>program</th><td>./a &amp; b</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<h2>top &lt;peak&gt;</h2>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"number\">1,024</td><td>f&lt;int&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"number\">7</td><td></td>"), std::string::npos);  // padded
  EXPECT_EQ(Count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\""), 1u);
  EXPECT_EQ(Count(html, "class=\"fg-root\""), 2u);
  EXPECT_EQ(Count(html, "<input class=\"flame-search\""), 2u);
  EXPECT_EQ(Count(html, "<?xml"), 0u);  // inline SVG: no declarations
  EXPECT_EQ(Count(html, "data-unit=\"count\""), 1u);
  EXPECT_EQ(html.find("http://", html.find("<body>")), html.find("http://www.w3.org/2000/svg"))
      << "nothing but the SVG namespace names a URL";
}

TEST(PageJson, ReadsEveryPartAndNamesWhatItLeftOut) {
  std::vector<std::string> errors;
  const ReportPage page = ReadPageJson(R"({
    "title": "t", "summary": [["peak", 12], ["bad"]],
    "timeline": {"threads": ["main"], "points": [[0, 1, [1]], [1, -5], [2, 3, [3]], [1.5, 2]]},
    "tables": [{"title": "top", "columns": ["a", "b"], "rows": [["x", 2], 5]}],
    "flamegraphs": [{"title": "g", "unit": "count", "folded": "a;b 3\nbadline\na 2\n"},
                    {"title": "h", "unit": "pages", "folded": "x 1"}]})",
                                       errors);
  EXPECT_EQ(page.title, "t");
  ASSERT_EQ(page.summary.size(), 1u);
  EXPECT_EQ(page.summary[0].second, "12");
  ASSERT_EQ(page.timeline.points.size(), 2u);
  EXPECT_EQ(page.timeline.points[1].total_bytes, 3u);
  ASSERT_EQ(page.tables.size(), 1u);
  EXPECT_EQ(page.tables[0].rows.size(), 1u);
  EXPECT_EQ(page.tables[0].rows[0][1], "2");
  ASSERT_EQ(page.flame_graphs.size(), 2u);
  EXPECT_EQ(page.flame_graphs[0].unit, ValueUnit::kCount);
  EXPECT_EQ(page.flame_graphs[0].stacks.size(), 2u);
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "summary[1]: expected [key, value]",
                        "timeline.points[1]: expected [seconds, total_bytes, [thread_bytes, ...]]",
                        "timeline.points[3]: earlier than the point before it",
                        "tables[0].rows[1]: not an array",
                        "flamegraphs[0].folded:2: no value: expected 'frame;frame;... VALUE'",
                        "flamegraphs[1].unit: neither \"bytes\" nor \"count\"",
                    }));
  errors.clear();
  ReadPageJson("{not json", errors);
  EXPECT_EQ(errors, std::vector<std::string>{"not a JSON object"});
}

}  // namespace
}  // namespace stackwalk::profile
