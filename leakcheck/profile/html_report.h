// The HTML report: one self-contained page (inline style and script, nothing fetched) with a
// summary, a chart of live bytes over time (timeline_chart.h), top tables and flame graphs
// (flame_svg.h, inline, each with its own search box). The page's input is plain data, so any
// view of a profile can fill it.
#ifndef STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_
#define STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "leakcheck/profile/flame_graph.h"
#include "leakcheck/profile/timeline_chart.h"

namespace stackwalk::profile {

// A table of rows of cells, `columns` naming them; a row shorter than the header gets empty
// cells (up to the longest row's length), a longer one is cut to it.
struct ReportTable {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

struct ReportPage {
  std::string title;
  std::vector<std::pair<std::string, std::string>> summary;  // key, value, in order
  Timeline timeline;
  std::vector<ReportTable> tables;
  std::vector<FlameInput> flame_graphs;
};

// What one page draws at most, so its size follows what it shows, not what it was given: the
// columns and rows of each table and the flame graphs. The page says what it left out.
inline constexpr size_t kMaxReportColumns = 64;
inline constexpr size_t kMaxReportRows = 10000;
inline constexpr size_t kMaxReportFlameGraphs = 16;

struct ReportPageOptions {
  double width_px = 1200;          // the chart's and the flame graphs' width
  double chart_height_px = 320;
  FlameLayoutOptions flame_layout;  // its width_px is replaced by width_px
};

// RenderReportPage(): the page as UTF-8 HTML5. Every text of `page` goes through MarkupEscape().
std::string RenderReportPage(const ReportPage& page, const ReportPageOptions& options);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_
