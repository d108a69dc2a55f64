#include "leakcheck/report_render_text.h"

#include <cinttypes>
#include <cstdio>

namespace stackwalk::leakcheck {
namespace {

constexpr char kPrefix[] = "==stackwalk-leakcheck== ";
constexpr size_t kThreadLines = 16;

std::string FormatBytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
  return text;
}

std::string FormatCount(uint64_t count) {
  char text[40];
  std::snprintf(text, sizeof(text), "%" PRIu64 " allocation%s", count, count == 1 ? "" : "s");
  return text;
}

std::string Header(const LeakReport& report) {
  const ReportSummary& s = report.summary;
  const char* what = report.at_exit ? "leaks at exit" : "live allocations";
  std::string text = kPrefix + std::string(what) + " (report " + std::to_string(report.number) +
                     (report.at_exit ? "" : ", on " + report.occasion) + ")\n";
  text += kPrefix + std::string("process ") + std::to_string(report.pid) + " (" + report.program +
          ")\n";
  text += kPrefix + std::string("peak ") + FormatBytes(s.peak_bytes) + " live; " +
          std::to_string(s.distinct_stacks) + " distinct allocation stacks\n";
  // What the checker itself holds: its tables, and per live allocation.
  text += kPrefix + std::string("own memory ") + FormatBytes(s.own_bytes()) +
          " (allocation table " + FormatBytes(s.table_bytes) + ", stacks " +
          FormatBytes(s.stack_bytes) + ")";
  if (s.live_allocations > 0) {
    text += ", " + std::to_string(s.own_bytes() / s.live_allocations) + " per live allocation";
  }
  text += "\n";
  if (!report.naming_error.empty()) {
    text += kPrefix + std::string("frames are not named: ") + report.naming_error + "\n";
  }
  if (s.scanned) {
    text += kPrefix + FormatBytes(s.reachable_bytes) + " in " +
            FormatCount(s.reachable_allocations) + " still reachable (not shown)\n";
  }
  for (size_t i = 0; i < report.threads.size() && i < kThreadLines; ++i) {
    const ThreadEntry& t = report.threads[i];
    text += kPrefix + std::string("thread ") + t.name + " (tid " + std::to_string(t.tid) +
            "): " + FormatBytes(t.bytes) + " live in " + FormatCount(t.count) + ", peak " +
            FormatBytes(t.peak_bytes) + "\n";
  }
  if (report.threads.size() > kThreadLines) {
    text += kPrefix + std::string("... and ") +
            std::to_string(report.threads.size() - kThreadLines) + " more threads\n";
  }
  return text;
}

std::string Entry(const ReportEntry& entry, const FrameFormatter& format_frames) {
  std::string text = "\nLeak of " + FormatBytes(entry.bytes) + " in " + FormatCount(entry.count) +
                     " from thread " + entry.thread_name + " (tid " + std::to_string(entry.tid) +
                     "), allocated at:\n";
  if (entry.frames.empty()) return text + "    (no stack)\n";
  const std::string lines = format_frames(entry.frames);
  for (size_t start = 0; start < lines.size();) {
    size_t end = lines.find('\n', start);
    if (end == std::string::npos) end = lines.size();
    text += "    " + lines.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return text;
}

}  // namespace

std::string RenderText(const LeakReport& report, const FrameFormatter& format_frames) {
  std::string text = Header(report);
  for (const ReportEntry& entry : report.entries) text += Entry(entry, format_frames);
  text += "\nSUMMARY: stackwalk-leakcheck: " + FormatBytes(report.summary.bytes) +
          (report.at_exit ? " leaked in " : " live in ") + FormatCount(report.summary.allocations) +
          ".\n";
  return text;
}

}  // namespace stackwalk::leakcheck
