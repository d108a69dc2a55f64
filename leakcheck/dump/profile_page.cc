#include "leakcheck/dump/profile_page.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/html_report.h"
#include "leakcheck/profile/value_format.h"

namespace stackwalk::leakcheck::dump {
namespace {

using profile::FormatExact;
using profile::FormatShare;
using profile::GroupThousands;
using profile::ValueUnit;

ValueUnit Unit(const ProfileView& view) {
  return view.by_count ? ValueUnit::kCount : ValueUnit::kBytes;
}

std::string GraphTitle(const ProfileView& view) {
  const std::string name = ViewName(view.kind);
  return name + " view: " + FormatExact(view.total(), Unit(view)) +
         (view.by_count ? " allocation(s)" : "");
}

// The frames of a table row: the innermost few, the allocating function first.
std::string StackCell(const ProfileStack& stack) {
  constexpr size_t kShownFrames = 4;
  std::string out;
  for (size_t f = 0; f < stack.frames.size() && f < kShownFrames; ++f) {
    out += (f ? " < " : "") + stack.frames[f];
  }
  if (stack.frames.size() > kShownFrames) out += " < ...";
  return out.empty() ? "[unknown]" : out;
}

profile::ReportTable StackTable(const ProfileView& view, size_t top) {
  profile::ReportTable table;
  table.title = std::string("Top stacks: ") + ViewName(view.kind) + " (" +
                std::to_string(std::min(top, view.stacks.size())) + " of " +
                std::to_string(view.stacks.size()) + ")";
  table.columns = view.by_count
                      ? std::vector<std::string>{"allocations", "share", "bytes", "stack"}
                      : std::vector<std::string>{"bytes", "share", "blocks", "stack"};
  for (size_t i = 0; i < view.stacks.size() && i < top; ++i) {
    const ProfileStack& s = view.stacks[i];
    table.rows.push_back({GroupThousands(view.value(s)), FormatShare(view.value(s), view.total()),
                          GroupThousands(view.by_count ? s.bytes : s.allocations), StackCell(s)});
  }
  return table;
}

profile::ReportTable ThreadTable(const ProfileView& view, size_t top) {
  profile::ReportTable table;
  table.title = "Threads by peak (" + std::to_string(std::min(top, view.threads.size())) + " of " +
                std::to_string(view.threads.size()) + ")";
  table.columns = {"serial", "tid", "name", "live bytes", "peak bytes", "state"};
  for (size_t i = 0; i < view.threads.size() && i < top; ++i) {
    const ProfileThread& t = view.threads[i];
    table.rows.push_back({std::to_string(t.serial), std::to_string(t.tid), t.name,
                          GroupThousands(t.live_bytes), GroupThousands(t.peak_bytes),
                          t.exited ? "exited" : "running"});
  }
  return table;
}

// The timeline view as the chart's series: one per thread seen at any point (a point without
// it counts it as 0, as the timeline keeps only each point's busiest threads).
profile::Timeline ChartTimeline(const ProfileView& view) {
  profile::Timeline chart;
  std::map<uint32_t, size_t> series;  // serial -> index in thread_names
  for (const ProfileTimelinePoint& p : view.timeline) {
    for (const ProfileTimelineThread& t : p.threads) {
      if (series.emplace(t.serial, chart.thread_names.size()).second) {
        chart.thread_names.push_back(t.name + "[" + std::to_string(t.serial) + "]");
      }
    }
  }
  for (const ProfileTimelinePoint& p : view.timeline) {
    profile::TimelinePoint point;
    point.seconds = static_cast<double>(p.time_ns) / 1e9;
    point.total_bytes = p.live_bytes;
    point.thread_bytes.assign(chart.thread_names.size(), 0);
    for (const ProfileTimelineThread& t : p.threads) point.thread_bytes[series[t.serial]] = t.live_bytes;
    chart.points.push_back(std::move(point));
  }
  return chart;
}

void AddMissing(const ProfileView& view, std::string* missing) {
  if (view.missing.empty() || missing->find(view.missing) != std::string::npos) return;
  *missing += (missing->empty() ? "" : "; ") + view.missing;
}

}  // namespace

bool ViewHasStacks(ViewKind kind) { return kind != ViewKind::kThreads && kind != ViewKind::kTimeline; }

profile::FlameInput ViewFlameInput(const ProfileView& view) {
  profile::FlameInput input;
  input.title = GraphTitle(view);
  input.unit = Unit(view);
  input.stacks.reserve(view.stacks.size());
  for (const ProfileStack& s : view.stacks) {
    profile::FlameStack stack;
    stack.frames.assign(s.frames.rbegin(), s.frames.rend());
    if (stack.frames.empty()) stack.frames.push_back("[unknown]");
    stack.value = view.value(s);
    input.stacks.push_back(std::move(stack));
  }
  return input;
}

std::string RenderViewSvg(const ProfileView& view) {
  const profile::FlameInput input = ViewFlameInput(view);
  return profile::RenderFlameSvg(profile::FlameTree::Build(input), input.title, input.unit,
                                 profile::FlameSvgOptions{});
}

std::string RenderProfilePage(const DumpContents& dump, DumpNamer* namer, ViewKind first,
                              size_t top, std::string* missing) {
  missing->clear();
  std::vector<ViewKind> stack_kinds = {ViewKind::kPeak, ViewKind::kAllocations,
                                       ViewKind::kTemporary, ViewKind::kLive};
  const auto lead = std::find(stack_kinds.begin(), stack_kinds.end(), first);
  if (lead != stack_kinds.end()) std::rotate(stack_kinds.begin(), lead, lead + 1);

  std::vector<ProfileView> views;
  for (ViewKind kind : stack_kinds) views.push_back(BuildProfileView(dump, kind, namer));
  const ProfileView threads = BuildProfileView(dump, ViewKind::kThreads, namer);
  const ProfileView timeline = BuildProfileView(dump, ViewKind::kTimeline, namer);
  const auto view_of = [&](ViewKind kind) -> const ProfileView& {
    return views[std::find(stack_kinds.begin(), stack_kinds.end(), kind) - stack_kinds.begin()];
  };

  profile::ReportPage page;
  const DumpProcess& process = dump.process;
  page.title = "Memory profile of " + (process.program.empty() ? "?" : process.program) +
               " (pid " + std::to_string(process.pid) + ")";
  auto& summary = page.summary;
  summary.emplace_back("process", process.program + " (pid " + std::to_string(process.pid) + ")");
  summary.emplace_back("occasion", (process.occasion.empty() ? "?" : process.occasion) +
                                       ", report " + std::to_string(process.number) +
                                       (process.at_exit ? " (at exit)" : ""));
  const ProfileView& live = view_of(ViewKind::kLive);
  const ProfileView& allocations = view_of(ViewKind::kAllocations);
  const ProfileView& temporary = view_of(ViewKind::kTemporary);
  summary.emplace_back("live at the dump", FormatExact(live.total_bytes, ValueUnit::kBytes) +
                                               " in " + GroupThousands(live.total_allocations) +
                                               " block(s)");
  summary.emplace_back("peak", FormatExact(live.process_peak_bytes, ValueUnit::kBytes));
  summary.emplace_back("allocations", GroupThousands(allocations.total_allocations) + " (" +
                                          FormatExact(allocations.total_bytes, ValueUnit::kBytes) +
                                          ")");
  summary.emplace_back("temporary", GroupThousands(temporary.total_allocations) + " (" +
                                        FormatExact(temporary.total_bytes, ValueUnit::kBytes) + ")");
  summary.emplace_back("threads", GroupThousands(threads.threads.size()));
  if (dump.sample_bytes != 0) {
    summary.emplace_back("sampled", "mean " + GroupThousands(dump.sample_bytes) +
                                        " bytes: bytes are estimates; allocations are counts of "
                                        "recorded blocks");
  }
  if (const UntrackedCounts& u = dump.summary.untracked; u.allocations() > 0) {
    summary.emplace_back("untracked", GroupThousands(u.allocations()) + " allocation(s) (" +
                                          FormatExact(u.bytes, ValueUnit::kBytes) +
                                          ") could not be tracked: in no view");
  }
  for (const ProfileView& view : views) AddMissing(view, missing);
  AddMissing(threads, missing);
  AddMissing(timeline, missing);
  if (!missing->empty()) summary.emplace_back("missing", *missing);
  if (!live.naming_error.empty()) summary.emplace_back("frames not named", live.naming_error);

  page.timeline = ChartTimeline(timeline);
  for (const ProfileView& view : views) page.tables.push_back(StackTable(view, top));
  page.tables.push_back(ThreadTable(threads, top));
  for (const ProfileView& view : views) page.flame_graphs.push_back(ViewFlameInput(view));
  return profile::RenderReportPage(page, profile::ReportPageOptions{});
}

}  // namespace stackwalk::leakcheck::dump
