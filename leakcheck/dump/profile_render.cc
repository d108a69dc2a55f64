#include "leakcheck/dump/profile_render.h"

#include <cinttypes>
#include <cstdio>

#include "format/json_string.h"

namespace stackwalk::leakcheck::dump {
namespace {

using internal::JsonString;

size_t Shown(size_t n, size_t top) { return top == 0 || top > n ? n : top; }

std::string Percent(uint64_t part, uint64_t whole) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%5.1f%%", whole == 0 ? 0.0 : 100.0 * part / whole);
  return buf;
}

// A frame name as one folded field: ';' separates frames and a line ends the stack.
std::string FoldedField(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::string Header(const ProfileView& view) {
  std::string out;
  if (!view.missing.empty()) out += "*** " + view.missing + "\n";
  if (!view.naming_error.empty()) out += "*** frames are not named: " + view.naming_error + "\n";
  if (view.sample_bytes != 0) {
    out += "*** sampled (mean " + std::to_string(view.sample_bytes) +
           " bytes): bytes are estimates; allocations are counts of recorded blocks\n";
  }
  if (const UntrackedCounts& u = view.untracked; u.allocations() > 0) {
    out += "*** " + std::to_string(u.allocations()) + " allocation(s) (" + std::to_string(u.bytes) +
           " bytes) could not be tracked: in no figure of this view\n";
  }
  return out;
}

std::string ThreadsText(const ProfileView& view, size_t top) {
  std::string out = "threads view: " + std::to_string(view.threads.size()) + " thread(s), " +
                    std::to_string(view.total_bytes) + " byte(s) live; the process peaked at " +
                    std::to_string(view.process_peak_bytes) + " byte(s)\n";
  char line[160];
  std::snprintf(line, sizeof(line), "%8s %8s %-16s %14s %14s\n", "serial", "tid", "name",
                "live bytes", "peak bytes");
  out += line;
  for (size_t i = 0; i < Shown(view.threads.size(), top); ++i) {
    const ProfileThread& t = view.threads[i];
    std::snprintf(line, sizeof(line), "%8u %8d %-16s %14" PRIu64 " %14" PRIu64 "%s\n", t.serial,
                  t.tid, t.name.c_str(), t.live_bytes, t.peak_bytes, t.exited ? " (exited)" : "");
    out += line;
  }
  return out;
}

std::string TimelineText(const ProfileView& view, size_t top) {
  std::string out = "timeline view: " + std::to_string(view.timeline.size()) +
                    " point(s), one every " + std::to_string(view.timeline_interval_ns / 1000000) +
                    " ms now (and at new peaks); the process peaked at " +
                    std::to_string(view.process_peak_bytes) + " byte(s)\n";
  char line[96];
  std::snprintf(line, sizeof(line), "%12s %14s  %s\n", "seconds", "live bytes", "busiest threads");
  out += line;
  // --top N: N points spread over the run (the first and the last always among them).
  const size_t n = view.timeline.size();
  const size_t shown = top == 0 || top >= n ? n : top;
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = shown == n ? k : (shown == 1 ? n - 1 : k * (n - 1) / (shown - 1));
    const ProfileTimelinePoint& p = view.timeline[i];
    std::snprintf(line, sizeof(line), "%12.3f %14" PRIu64 "%s", p.time_ns / 1e9, p.live_bytes,
                  p.at_peak ? " peak" : "     ");
    out += line;
    for (const ProfileTimelineThread& t : p.threads) {
      out += " " + t.name + "[" + std::to_string(t.serial) + "]=" + std::to_string(t.live_bytes);
    }
    out += "\n";
  }
  return out;
}

std::string TimelineJson(const ProfileView& view) {
  std::string out = ",\"interval_ns\":" + std::to_string(view.timeline_interval_ns) + ",\"timeline\":[";
  for (size_t i = 0; i < view.timeline.size(); ++i) {
    const ProfileTimelinePoint& p = view.timeline[i];
    out += std::string(i ? "," : "") + "{\"time_ns\":" + std::to_string(p.time_ns) +
           ",\"live_bytes\":" + std::to_string(p.live_bytes) +
           ",\"at_peak\":" + (p.at_peak ? "true" : "false") + ",\"threads\":[";
    for (size_t t = 0; t < p.threads.size(); ++t) {
      out += std::string(t ? "," : "") + "{\"serial\":" + std::to_string(p.threads[t].serial) +
             ",\"name\":" + JsonString(p.threads[t].name) +
             ",\"live_bytes\":" + std::to_string(p.threads[t].live_bytes) + "}";
    }
    out += "]}";
  }
  return out + "]}\n";
}

}  // namespace

std::string RenderViewText(const ProfileView& view, size_t top) {
  std::string out = Header(view);
  if (view.kind == ViewKind::kThreads) return out + ThreadsText(view, top);
  if (view.kind == ViewKind::kTimeline) return out + TimelineText(view, top);
  const char* unit = view.by_count ? "allocation(s)" : "byte(s)";
  out += std::string(ViewName(view.kind)) + " view: " + std::to_string(view.total()) + " " + unit +
         " in " + std::to_string(view.stacks.size()) + " stack(s)";
  if (view.by_count) out += ", " + std::to_string(view.total_bytes) + " byte(s)";
  out += "; the process peaked at " + std::to_string(view.process_peak_bytes) + " byte(s)\n";
  const size_t shown = Shown(view.stacks.size(), top);
  for (size_t i = 0; i < shown; ++i) {
    const ProfileStack& s = view.stacks[i];
    out += "\n#" + std::to_string(i + 1) + " " + std::to_string(view.value(s)) + " " + unit + " " +
           Percent(view.value(s), view.total()) + "  (" +
           (view.by_count ? std::to_string(s.bytes) + " byte(s)"
                          : std::to_string(s.allocations) + " block(s)") +
           ")\n";
    for (size_t f = 0; f < s.frames.size(); ++f) {
      out += "    #" + std::to_string(f) + " " + s.frames[f] + "\n";
    }
  }
  if (shown < view.stacks.size()) {
    out += "\n... " + std::to_string(view.stacks.size() - shown) + " more stack(s) (--top)\n";
  }
  return out;
}

std::string RenderViewJson(const ProfileView& view, size_t top) {
  std::string out = "{\"view\":" + JsonString(ViewName(view.kind)) +
                    ",\"total_bytes\":" + std::to_string(view.total_bytes) +
                    ",\"total_allocations\":" + std::to_string(view.total_allocations) +
                    ",\"peak_bytes\":" + std::to_string(view.process_peak_bytes);
  if (!view.missing.empty()) out += ",\"missing\":" + JsonString(view.missing);
  if (!view.naming_error.empty()) out += ",\"naming_error\":" + JsonString(view.naming_error);
  if (view.sample_bytes != 0) {
    out += ",\"sampled\":{\"sample_bytes\":" + std::to_string(view.sample_bytes) +
           ",\"bytes\":\"estimates\",\"allocations\":\"counts of recorded blocks\"}";
  }
  if (const UntrackedCounts& u = view.untracked; u.allocations() > 0) {
    out += ",\"untracked\":{\"allocations\":" + std::to_string(u.allocations()) +
           ",\"bytes\":" + std::to_string(u.bytes) + "}";
  }
  if (view.kind == ViewKind::kTimeline) return out + TimelineJson(view);
  if (view.kind == ViewKind::kThreads) {
    out += ",\"threads\":[";
    for (size_t i = 0; i < Shown(view.threads.size(), top); ++i) {
      const ProfileThread& t = view.threads[i];
      out += std::string(i ? "," : "") + "{\"serial\":" + std::to_string(t.serial) +
             ",\"tid\":" + std::to_string(t.tid) + ",\"name\":" + JsonString(t.name) +
             ",\"exited\":" + (t.exited ? "true" : "false") +
             ",\"live_bytes\":" + std::to_string(t.live_bytes) +
             ",\"peak_bytes\":" + std::to_string(t.peak_bytes) + "}";
    }
    return out + "]}\n";
  }
  out += ",\"stacks\":[";
  for (size_t i = 0; i < Shown(view.stacks.size(), top); ++i) {
    const ProfileStack& s = view.stacks[i];
    out += std::string(i ? "," : "") + "{\"frames\":[";
    for (size_t f = 0; f < s.frames.size(); ++f) out += (f ? "," : "") + JsonString(s.frames[f]);
    out += "],\"bytes\":" + std::to_string(s.bytes) +
           ",\"allocations\":" + std::to_string(s.allocations) + "}";
  }
  return out + "]}\n";
}

std::string RenderViewFolded(const ProfileView& view) {
  std::string out;
  if (view.kind == ViewKind::kThreads) {
    for (const ProfileThread& t : view.threads) {
      if (t.live_bytes == 0) continue;
      out += FoldedField(t.name) + "[" + std::to_string(t.serial) + "] " +
             std::to_string(t.live_bytes) + "\n";
    }
    return out;
  }
  for (const ProfileStack& s : view.stacks) {
    std::string line;
    for (size_t f = s.frames.size(); f-- > 0;) {
      line += FoldedField(s.frames[f]);
      if (f != 0) line += ';';
    }
    if (line.empty()) line = "[unknown]";
    out += line + " " + std::to_string(view.value(s)) + "\n";
  }
  return out;
}

}  // namespace stackwalk::leakcheck::dump
