#include "leakcheck/profile/html_report.h"

#include <algorithm>
#include <string_view>

#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/markup_escape.h"

namespace stackwalk::profile {
namespace {

constexpr std::string_view kPageStyle = R"CSS(
body { font-family: sans-serif; margin: 16px 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; font-size: 13px; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
table.summary th { background: #f0f0f0; }
.flame-search { margin: 6px 0; }
section.flame { margin-bottom: 24px; }
)CSS";

// Each flame graph's search box drives the graph's own script (svg.stackwalkFlame).
constexpr std::string_view kPageScript = R"JS(
document.querySelectorAll('section.flame').forEach(function (section) {
  var box = section.querySelector('input.flame-search');
  var svg = section.querySelector('svg.fg-root');
  if (!box || !svg || !svg.stackwalkFlame) return;
  box.addEventListener('input', function () { svg.stackwalkFlame.search(box.value); });
});
)JS";

const std::string kEmpty;

bool LooksNumeric(const std::string& cell) {
  if (cell.empty()) return false;
  for (const char c : cell) {
    if (!((c >= '0' && c <= '9') || c == ',' || c == '.' || c == '%' || c == ' ' || c == '-' ||
          c == 'B' || c == 'K' || c == 'M' || c == 'G' || c == 'i')) {
      return false;
    }
  }
  return cell[0] >= '0' && cell[0] <= '9';
}

std::string Plural(size_t count, std::string_view one) {
  return std::to_string(count) + " " + std::string(one) + (count == 1 ? "" : "s");
}

void AppendTable(std::string& out, const ReportTable& table) {
  // Cells per row: the header's, but no more than the longest row has (an empty cell per column
  // per row would make a few bytes of JSON, a million columns and a million empty rows, into
  // 10^12 cells) and no more than kMaxReportColumns.
  size_t longest_row = 0;
  for (const std::vector<std::string>& row : table.rows) longest_row = std::max(longest_row, row.size());
  const size_t columns = std::min(table.columns.size(), kMaxReportColumns);
  const size_t cells = std::min(columns, longest_row);
  const size_t rows = std::min(table.rows.size(), kMaxReportRows);
  out += "<h2>" + MarkupEscape(table.title) + "</h2>\n<table class=\"top\">\n<tr>";
  for (size_t c = 0; c < columns; ++c) out += "<th>" + MarkupEscape(table.columns[c]) + "</th>";
  out += "</tr>\n";
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<std::string>& row = table.rows[r];
    out += "<tr>";
    for (size_t c = 0; c < cells; ++c) {
      const std::string& cell = c < row.size() ? row[c] : kEmpty;
      out += LooksNumeric(cell) ? "<td class=\"number\">" : "<td>";
      out += MarkupEscape(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
  if (table.columns.size() > columns) {
    out += "<p class=\"left-out\">" + Plural(table.columns.size() - columns, "more column") +
           " not shown (at most " + std::to_string(kMaxReportColumns) + ").</p>\n";
  }
  if (table.rows.size() > rows) {
    out += "<p class=\"left-out\">" + Plural(table.rows.size() - rows, "more row") +
           " not shown (at most " + std::to_string(kMaxReportRows) + ").</p>\n";
  }
}

}  // namespace

std::string RenderReportPage(const ReportPage& page, const ReportPageOptions& options) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + MarkupEscape(page.title) + "</title>\n<style>";
  out += kPageStyle;
  out += "</style>\n</head>\n<body>\n<h1>" + MarkupEscape(page.title) + "</h1>\n";

  if (!page.summary.empty()) {
    out += "<table class=\"summary\">\n";
    for (const auto& [key, value] : page.summary) {
      out += "<tr><th>" + MarkupEscape(key) + "</th><td>" + MarkupEscape(value) + "</td></tr>\n";
    }
    out += "</table>\n";
  }

  out += "<h2>Live bytes over time</h2>\n<div class=\"chart\">\n";
  out += RenderTimelineChart(page.timeline, options.width_px, options.chart_height_px);
  out += "</div>\n";

  for (const ReportTable& table : page.tables) AppendTable(out, table);

  FlameSvgOptions flame_options;
  flame_options.layout = options.flame_layout;
  flame_options.layout.width_px = options.width_px;
  flame_options.standalone = false;
  const size_t graphs = std::min(page.flame_graphs.size(), kMaxReportFlameGraphs);
  for (size_t g = 0; g < graphs; ++g) {
    const FlameInput& input = page.flame_graphs[g];
    out += "<section class=\"flame\">\n<h2>" + MarkupEscape(input.title) + "</h2>\n";
    out += "<input class=\"flame-search\" type=\"search\" placeholder=\"Highlight frames containing...\" size=\"40\">\n";
    out += RenderFlameSvg(FlameTree::Build(input), input.title, input.unit, flame_options);
    out += "</section>\n";
  }
  if (page.flame_graphs.size() > graphs) {
    out += "<p class=\"left-out\">" + Plural(page.flame_graphs.size() - graphs, "more flame graph") +
           " not drawn (at most " + std::to_string(kMaxReportFlameGraphs) + ").</p>\n";
  }
  out += "<script>";
  out += kPageScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace stackwalk::profile
