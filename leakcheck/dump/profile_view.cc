#include "leakcheck/dump/profile_view.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

namespace stackwalk::leakcheck::dump {
namespace {

constexpr struct {
  ViewKind kind;
  const char* name;
} kViews[] = {
    {ViewKind::kLeaks, "leaks"},           {ViewKind::kPeak, "peak"},
    {ViewKind::kAllocations, "allocations"}, {ViewKind::kTemporary, "temporary"},
    {ViewKind::kLive, "live"},             {ViewKind::kThreads, "threads"},
    {ViewKind::kTimeline, "timeline"},
};

std::vector<std::string> FrameNames(const std::vector<SymbolizedFrame>& frames) {
  std::vector<std::string> out;
  out.reserve(frames.size());
  for (const SymbolizedFrame& f : frames) out.push_back(ProfileFrameName(f));
  return out;
}

// Largest first; ties by bytes, then by frames, so that the order is the same on every run.
void Order(ProfileView* view) {
  std::sort(view->stacks.begin(), view->stacks.end(),
            [view](const ProfileStack& a, const ProfileStack& b) {
              if (view->value(a) != view->value(b)) return view->value(a) > view->value(b);
              if (a.bytes != b.bytes) return a.bytes > b.bytes;
              return a.frames < b.frames;
            });
}

// Adds a stack with its value, if it has one, and counts it in the totals.
void Add(ProfileView* view, std::vector<std::string> frames, uint64_t bytes, uint64_t count) {
  ProfileStack s{std::move(frames), bytes, count};
  if (view->value(s) == 0) return;
  view->total_bytes += bytes;
  view->total_allocations += count;
  view->stacks.push_back(std::move(s));
}

void ThreadsView(const DumpContents& dump, ProfileView* view) {
  if (!dump.has_thread_totals) {
    view->missing = "this dump has no thread totals (written before the threads view existed)";
    return;
  }
  for (const DumpThreadTotal& t : dump.thread_totals) {
    view->threads.push_back({t.serial, t.tid, t.name.empty() ? "?" : t.name, t.exited,
                             t.live_bytes, t.peak_bytes});
    view->total_bytes += t.live_bytes;
  }
  std::sort(view->threads.begin(), view->threads.end(),
            [](const ProfileThread& a, const ProfileThread& b) {
              return a.peak_bytes != b.peak_bytes ? a.peak_bytes > b.peak_bytes
                                                  : a.serial < b.serial;
            });
}

void TimelineView(const DumpContents& dump, ProfileView* view) {
  if (!dump.has_timeline) {
    view->missing = "this dump has no timeline (written before the timeline existed)";
    return;
  }
  std::map<uint32_t, std::string> names;
  for (const DumpThreadTotal& t : dump.thread_totals) names[t.serial] = t.name;
  view->timeline_interval_ns = dump.timeline_interval_ns;
  for (const DumpTimelinePoint& p : dump.timeline) {
    ProfileTimelinePoint point{p.time_ns, p.live_bytes, p.at_peak, {}};
    for (const DumpThreadBytes& t : p.threads) {
      const auto name = names.find(t.serial);
      point.threads.push_back({t.serial,
                               name == names.end() || name->second.empty() ? "?" : name->second,
                               t.live_bytes});
    }
    view->timeline.push_back(std::move(point));
  }
}

}  // namespace

bool ParseViewKind(const std::string& name, ViewKind* kind) {
  for (const auto& v : kViews) {
    if (name == v.name) {
      *kind = v.kind;
      return true;
    }
  }
  return false;
}

const char* ViewName(ViewKind kind) {
  for (const auto& v : kViews) {
    if (v.kind == kind) return v.name;
  }
  return "?";
}

std::string ProfileFrameName(const SymbolizedFrame& frame) {
  if (!frame.function.empty()) return frame.function;
  char hex[32];
  if (frame.module.empty()) {
    std::snprintf(hex, sizeof(hex), "0x%" PRIx64, frame.pc);
    return hex;
  }
  std::snprintf(hex, sizeof(hex), "+0x%" PRIx64, frame.module_offset);
  const size_t slash = frame.module.rfind('/');
  return (slash == std::string::npos ? frame.module : frame.module.substr(slash + 1)) + hex;
}

ProfileView BuildProfileView(const DumpContents& dump, ViewKind kind, DumpNamer* namer) {
  ProfileView view;
  view.kind = kind;
  view.by_count = kind == ViewKind::kAllocations || kind == ViewKind::kTemporary;
  view.process_peak_bytes = dump.summary.peak_bytes;
  view.sample_bytes = dump.sample_bytes;
  view.untracked = dump.summary.untracked;
  if (kind == ViewKind::kThreads) {
    ThreadsView(dump, &view);
    return view;
  }
  if (kind == ViewKind::kTimeline) {
    TimelineView(dump, &view);
    return view;
  }
  std::map<uint32_t, const DumpStack*> stacks;
  for (const DumpStack& s : dump.stacks) stacks.emplace(s.id, &s);
  // Only the stacks the view shows are named.
  auto frames = [&](uint32_t id) {
    const auto found = stacks.find(id);
    return found != stacks.end() ? FrameNames(namer->Name(*found->second))
                                 : std::vector<std::string>{};
  };
  if (kind == ViewKind::kLive && dump.process.snapshot) {
    // A snapshot lists no blocks: each stack's live figures are in its statistics.
    for (const DumpStackStats& s : dump.stack_stats) {
      if (s.live_blocks != 0) Add(&view, frames(s.stack_id), s.live_bytes, s.live_blocks);
    }
  } else if (kind == ViewKind::kLive) {
    // The blocks the dump lists: the live table as the report copied it (one consistent view).
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> per_stack;
    for (const DumpBlock& b : dump.blocks) {
      per_stack[b.stack_id].first += b.size;
      per_stack[b.stack_id].second += 1;
    }
    for (const auto& [id, totals] : per_stack) Add(&view, frames(id), totals.first, totals.second);
  } else if (!dump.has_stack_stats) {
    view.missing = "this dump has no stack statistics (written before the profile views existed)";
  } else {
    for (const DumpStackStats& s : dump.stack_stats) {
      switch (kind) {
        case ViewKind::kPeak:
          if (s.peak_bytes != 0) Add(&view, frames(s.stack_id), s.peak_bytes, s.peak_blocks);
          break;
        case ViewKind::kAllocations:
          if (s.allocations != 0) Add(&view, frames(s.stack_id), s.allocated_bytes, s.allocations);
          break;
        case ViewKind::kTemporary:
          if (s.temporary != 0) Add(&view, frames(s.stack_id), s.temporary_bytes, s.temporary);
          break;
        default: break;
      }
    }
  }
  if (!namer->missing().empty()) {
    view.naming_error = "no file for " + std::to_string(namer->missing().size()) + " object(s): ";
    for (size_t i = 0; i < namer->missing().size(); ++i) {
      view.naming_error += (i ? "; " : "") + namer->missing()[i];
    }
  }
  Order(&view);
  return view;
}

ProfileView LeaksView(const LeakReport& report) {
  ProfileView view;
  view.kind = ViewKind::kLeaks;
  view.process_peak_bytes = report.summary.peak_bytes;
  view.sample_bytes = report.sample_bytes;
  view.untracked = report.summary.untracked;
  view.naming_error = report.naming_error;
  for (const ReportEntry& e : report.entries) {
    const bool leak = report.summary.scanned ? IsLeak(e.verdict) : e.verdict == Verdict::kLive;
    if (leak) Add(&view, FrameNames(e.frames), e.bytes, e.count);
  }
  Order(&view);
  return view;
}

}  // namespace stackwalk::leakcheck::dump
