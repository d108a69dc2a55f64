// Live bytes over time as an inline SVG line chart: the process's total and each thread's,
// axes labelled in seconds and bytes, and a legend. Bounded whatever the series' length: each
// series is drawn with at most two points per pixel column (the column's lowest and highest,
// so a peak is never smoothed away), and at most kMaxThreadSeries threads are drawn (those with
// the highest peaks; the legend says how many were left out).
#ifndef STACKWALK_LEAKCHECK_PROFILE_TIMELINE_CHART_H_
#define STACKWALK_LEAKCHECK_PROFILE_TIMELINE_CHART_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stackwalk::profile {

// One sample: seconds since the start, the total live bytes, and each thread's live bytes in
// the order of Timeline::thread_names (missing ones count as 0).
struct TimelinePoint {
  double seconds = 0;
  uint64_t total_bytes = 0;
  std::vector<uint64_t> thread_bytes;
};

struct Timeline {
  std::vector<std::string> thread_names;
  std::vector<TimelinePoint> points;  // in time order
};

inline constexpr size_t kMaxThreadSeries = 8;

// The colour of the total's line (the browser test looks for it).
inline constexpr const char* kTotalLineColour = "#1f4e9a";

// RenderTimelineChart(): an <svg> element (no XML declaration), `width_px` wide.
std::string RenderTimelineChart(const Timeline& timeline, double width_px, double height_px);

// NiceStep(): the axis step for a `span` cut into about `ticks` parts: 1, 2 or 5 times a power
// of ten (seconds: base 10), or of ten times the largest power of 1024 within the span (bytes:
// base 1024, so a 5 MiB axis steps by 1 MiB, a 900 KiB one by 200 KiB).
double NiceStep(double span, int ticks, double base);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_TIMELINE_CHART_H_
