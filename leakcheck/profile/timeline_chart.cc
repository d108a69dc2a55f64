#include "leakcheck/profile/timeline_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "leakcheck/profile/flame_graph.h"
#include "leakcheck/profile/markup_escape.h"
#include "leakcheck/profile/value_format.h"

namespace stackwalk::profile {
namespace {

constexpr double kLeft = 80, kRight = 20, kTop = 20, kBottom = 40, kLegendRow = 18;
constexpr const char* kThreadColours[kMaxThreadSeries] = {
    "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"};

struct Series {
  std::string name;
  const char* colour;
  double stroke;
  std::vector<double> values;  // bytes, one per point
};

std::string FormatSeconds(double seconds, double step) {
  char text[32];
  const int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;
  std::snprintf(text, sizeof(text), "%.*f s", decimals, seconds);
  return text;
}

// The polyline's points: at most the lowest and highest value per pixel column, in time order.
std::string Polyline(const std::vector<TimelinePoint>& points, const std::vector<double>& values,
                     double t0, double x_scale, double y_of_zero, double y_scale) {
  std::string out;
  const auto emit = [&](double x, double value) {
    out += FormatCoordinate(x) + "," + FormatCoordinate(y_of_zero - value * y_scale) + " ";
  };
  size_t i = 0;
  while (i < points.size()) {
    const double x = kLeft + (points[i].seconds - t0) * x_scale;
    const long column = std::lround(x);
    size_t low = i, high = i, last = i;
    for (; last < points.size() && std::lround(kLeft + (points[last].seconds - t0) * x_scale) == column;
         ++last) {
      if (values[last] < values[low]) low = last;
      if (values[last] > values[high]) high = last;
    }
    const size_t first_of_pair = std::min(low, high), second_of_pair = std::max(low, high);
    emit(kLeft + (points[first_of_pair].seconds - t0) * x_scale, values[first_of_pair]);
    if (second_of_pair != first_of_pair) {
      emit(kLeft + (points[second_of_pair].seconds - t0) * x_scale, values[second_of_pair]);
    }
    i = last;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace

double NiceStep(double span, int ticks, double base) {
  if (!(span > 0) || !std::isfinite(span) || ticks <= 0) return 1;
  const double raw = span / ticks;
  double unit = 1;
  if (base > 10) {  // bytes: a power of 1024 first, then decimal steps within it
    while (unit * base <= span) unit *= base;
  }
  double magnitude = unit * std::pow(10.0, std::floor(std::log10(raw / unit)));
  for (const double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (magnitude * factor >= raw) return magnitude * factor;
  }
  return magnitude * 10;
}

std::string RenderTimelineChart(const Timeline& timeline, double width_px, double height_px) {
  // The series: the total, then the threads with the highest peaks.
  std::vector<Series> series;
  Series total{"total", kTotalLineColour, 2.5, {}};
  for (const TimelinePoint& point : timeline.points) {
    total.values.push_back(static_cast<double>(point.total_bytes));
  }
  std::vector<std::pair<double, size_t>> thread_peaks;
  for (size_t t = 0; t < timeline.thread_names.size(); ++t) {
    double peak = 0;
    for (const TimelinePoint& point : timeline.points) {
      if (t < point.thread_bytes.size()) peak = std::max(peak, static_cast<double>(point.thread_bytes[t]));
    }
    thread_peaks.emplace_back(peak, t);
  }
  std::stable_sort(thread_peaks.begin(), thread_peaks.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t drawn_threads = std::min(thread_peaks.size(), kMaxThreadSeries);
  series.push_back(std::move(total));
  for (size_t k = 0; k < drawn_threads; ++k) {
    const size_t t = thread_peaks[k].second;
    Series thread{"thread " + timeline.thread_names[t], kThreadColours[k], 1.5, {}};
    for (const TimelinePoint& point : timeline.points) {
      thread.values.push_back(t < point.thread_bytes.size() ? static_cast<double>(point.thread_bytes[t]) : 0);
    }
    series.push_back(std::move(thread));
  }

  const size_t legend_rows = series.size() + (thread_peaks.size() > drawn_threads ? 1 : 0);
  const double plot_height = height_px - kTop - kBottom;
  const double full_height = height_px + legend_rows * kLegendRow;
  const double plot_width = width_px - kLeft - kRight;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"" +
                    FormatCoordinate(width_px) + "\" height=\"" + FormatCoordinate(full_height) +
                    "\" viewBox=\"0 0 " + FormatCoordinate(width_px) + " " +
                    FormatCoordinate(full_height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  if (timeline.points.empty()) {
    out += "<text x=\"" + FormatCoordinate(width_px / 2) + "\" y=\"" +
           FormatCoordinate(height_px / 2) + "\" text-anchor=\"middle\">No timeline samples</text>\n</svg>\n";
    return out;
  }

  const double t0 = timeline.points.front().seconds;
  const double t1 = std::max(timeline.points.back().seconds, t0);
  double max_bytes = 0;
  for (const Series& s : series) {
    for (const double v : s.values) max_bytes = std::max(max_bytes, v);
  }
  const double y_step = NiceStep(std::max(max_bytes, 1.0), 5, 1024);
  const double y_max = std::ceil(std::max(max_bytes, 1.0) / y_step) * y_step;
  const double x_step = NiceStep(t1 > t0 ? t1 - t0 : 1, 8, 10);
  const double x_max = t1 > t0 ? t0 + std::ceil((t1 - t0) / x_step) * x_step : t0 + x_step;
  const double x_scale = plot_width / (x_max - t0);
  const double y_of_zero = kTop + plot_height;
  const double y_scale = plot_height / y_max;

  // Grid and axes.
  out += "<g class=\"axes\" stroke=\"#cccccc\" stroke-width=\"1\">\n";
  // Tick loops count ticks (a bounded number), so no value can make them spin.
  const int y_ticks = static_cast<int>(std::min(50.0, std::round(y_max / y_step)));
  const int x_ticks = std::isfinite(x_max - t0) ? static_cast<int>(std::min(50.0, std::round((x_max - t0) / x_step))) : 0;
  for (int k = 0; k <= y_ticks; ++k) {
    const double v = k * y_step;
    const std::string y = FormatCoordinate(y_of_zero - v * y_scale);
    out += "<line x1=\"" + FormatCoordinate(kLeft) + "\" y1=\"" + y + "\" x2=\"" +
           FormatCoordinate(kLeft + plot_width) + "\" y2=\"" + y + "\"/>\n";
  }
  out += "</g>\n<g class=\"y-labels\" text-anchor=\"end\" fill=\"#333333\">\n";
  for (int k = 0; k <= y_ticks; ++k) {
    const double v = k * y_step;
    out += "<text x=\"" + FormatCoordinate(kLeft - 6) + "\" y=\"" +
           FormatCoordinate(y_of_zero - v * y_scale + 4) + "\">" +
           FormatValue(static_cast<uint64_t>(v), ValueUnit::kBytes) + "</text>\n";
  }
  out += "</g>\n<g class=\"x-labels\" text-anchor=\"middle\" fill=\"#333333\">\n";
  for (int k = 0; k <= x_ticks; ++k) {
    const double t = t0 + k * x_step;
    out += "<text x=\"" + FormatCoordinate(kLeft + (t - t0) * x_scale) + "\" y=\"" +
           FormatCoordinate(y_of_zero + 16) + "\">" + FormatSeconds(t, x_step) + "</text>\n";
  }
  out += "</g>\n";
  out += "<text x=\"" + FormatCoordinate(kLeft + plot_width / 2) + "\" y=\"" +
         FormatCoordinate(y_of_zero + 32) + "\" text-anchor=\"middle\">time (seconds)</text>\n";
  out += "<text x=\"14\" y=\"" + FormatCoordinate(kTop + plot_height / 2) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
         FormatCoordinate(kTop + plot_height / 2) + ")\">live bytes</text>\n";
  out += "<path d=\"M" + FormatCoordinate(kLeft) + " " + FormatCoordinate(kTop) + " V" +
         FormatCoordinate(y_of_zero) + " H" + FormatCoordinate(kLeft + plot_width) +
         "\" stroke=\"#333333\" fill=\"none\"/>\n";

  // The lines: threads first, the total on top.
  for (size_t s = series.size(); s-- > 0;) {
    out += "<polyline class=\"series\" data-series=\"" + MarkupEscape(series[s].name) +
           "\" fill=\"none\" stroke=\"" + series[s].colour + "\" stroke-width=\"" +
           FormatCoordinate(series[s].stroke) + "\" stroke-linejoin=\"round\" points=\"" +
           Polyline(timeline.points, series[s].values, t0, x_scale, y_of_zero, y_scale) + "\"/>\n";
  }

  // The legend, one row per series.
  out += "<g class=\"legend\">\n";
  double y = height_px + 4;
  for (const Series& s : series) {
    out += "<rect x=\"" + FormatCoordinate(kLeft) + "\" y=\"" + FormatCoordinate(y) +
           "\" width=\"18\" height=\"4\" fill=\"" + s.colour + "\"/>";
    out += "<text x=\"" + FormatCoordinate(kLeft + 26) + "\" y=\"" + FormatCoordinate(y + 6) +
           "\">" + MarkupEscape(s.name) + "</text>\n";
    y += kLegendRow;
  }
  if (thread_peaks.size() > drawn_threads) {
    out += "<text x=\"" + FormatCoordinate(kLeft) + "\" y=\"" + FormatCoordinate(y + 6) + "\">" +
           std::to_string(thread_peaks.size() - drawn_threads) +
           " threads with lower peaks not drawn (they count in the total)</text>\n";
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace stackwalk::profile
