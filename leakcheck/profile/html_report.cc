#include "leakcheck/profile/html_report.h"

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

void AppendTable(std::string& out, const ReportTable& table) {
  out += "<h2>" + MarkupEscape(table.title) + "</h2>\n<table class=\"top\">\n<tr>";
  for (const std::string& column : table.columns) out += "<th>" + MarkupEscape(column) + "</th>";
  out += "</tr>\n";
  for (const std::vector<std::string>& row : table.rows) {
    out += "<tr>";
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : std::string();
      out += LooksNumeric(cell) ? "<td class=\"number\">" : "<td>";
      out += MarkupEscape(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
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
  for (const FlameInput& input : page.flame_graphs) {
    out += "<section class=\"flame\">\n<h2>" + MarkupEscape(input.title) + "</h2>\n";
    out += "<input class=\"flame-search\" type=\"search\" placeholder=\"Highlight frames containing...\" size=\"40\">\n";
    out += RenderFlameSvg(FlameTree::Build(input), input.title, input.unit, flame_options);
    out += "</section>\n";
  }
  out += "<script>";
  out += kPageScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace stackwalk::profile
