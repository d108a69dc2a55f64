// The HTML report: one self-contained page (inline style and script, nothing fetched) with a
// summary, a chart of live bytes over time (timeline_chart.h), top tables and flame graphs
// (flame_svg.h, inline, each with its own search box). The page's input is plain data, so any
// view of a profile can fill it.
#ifndef STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_
#define STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_

#include <string>
#include <utility>
#include <vector>

#include "leakcheck/profile/flame_graph.h"
#include "leakcheck/profile/timeline_chart.h"

namespace stackwalk::profile {

// A table of rows of cells, `columns` naming them; a row shorter than the header gets empty
// cells, a longer one is cut to it.
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

struct ReportPageOptions {
  double width_px = 1200;          // the chart's and the flame graphs' width
  double chart_height_px = 320;
  FlameLayoutOptions flame_layout;  // its width_px is replaced by width_px
};

// RenderReportPage(): the page as UTF-8 HTML5. Every text of `page` goes through MarkupEscape().
std::string RenderReportPage(const ReportPage& page, const ReportPageOptions& options);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_HTML_REPORT_H_
