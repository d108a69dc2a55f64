#include "leakcheck/report_render_text.h"

#include <cinttypes>
#include <cstdio>

#include "leakcheck/untracked_figures.h"

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

// "stopped 7 threads with ptrace (1 not stopped: tid 812, signal blocked)".
std::string StopLine(const ReportSummary& s) {
  std::string text;
  if (s.method == "none") {
    text = "scanned while other threads ran (none stopped)";
  } else {
    text = "stopped " + std::to_string(s.stopped_threads) + " thread" +
           (s.stopped_threads == 1 ? "" : "s") + " with " + s.method;
  }
  if (!s.unstopped.empty()) {
    text += " (" + std::to_string(s.unstopped.size()) + " not stopped:";
    for (size_t i = 0; i < s.unstopped.size(); ++i) {
      text += std::string(i ? ";" : "") + " tid " + std::to_string(s.unstopped[i].tid) + ", " +
              s.unstopped[i].why;
    }
    text += ")";
  }
  if (!s.fallback_reason.empty()) text += " (ptrace not used: " + s.fallback_reason + ")";
  return text;
}

// The header's line on them, with why: none of the report's figures counts them.
std::string UntrackedLine(const UntrackedCounts& u) {
  std::string why;
  if (u.refused > 0) {
    why = std::to_string(u.refused) +
          " refused (an address above 2^48 or not 8-byte aligned, or a block of 1 TiB or more)";
  }
  if (u.no_memory > 0) {
    why += std::string(why.empty() ? "" : ", ") + std::to_string(u.no_memory) +
           " for lack of memory for the checker's tables";
  }
  return kPrefix + UntrackedFigures(u) + " could not be tracked: " + why +
         "; they are in no figure of this report\n";
}

// LeakSanitizer's headline of an entry.
std::string Headline(const ReportEntry& entry) {
  const std::string what = std::to_string(entry.bytes) + " byte(s) in " +
                           std::to_string(entry.count) + " object(s) allocated from:";
  switch (entry.verdict) {
    case Verdict::kDirect: return "Direct leak of " + what;
    case Verdict::kIndirect: return "Indirect leak of " + what;
    case Verdict::kReachable: return "Reachable: " + what;
    default: return "Live: " + what;
  }
}

std::string Header(const LeakReport& report) {
  const ReportSummary& s = report.summary;
  const char* what = report.at_exit          ? "leaks at exit"
                     : report.summary.scanned ? "leaks"
                                              : "live allocations";
  std::string text = kPrefix + std::string(what) + " (report " + std::to_string(report.number) +
                     (report.at_exit ? "" : ", on " + report.occasion) + ")\n";
  text += kPrefix + std::string("process ") + std::to_string(report.pid) + " (" + report.program +
          ")\n";
  if (report.sample_bytes != 0) {
    text += kPrefix + std::string("sampled: mean ") + FormatBytes(report.sample_bytes) +
            ", figures are estimates\n";
  }
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
  if (s.untracked.allocations() > 0) text += UntrackedLine(s.untracked);
  if (!report.naming_error.empty()) {
    text += kPrefix + std::string("frames are not named: ") + report.naming_error + "\n";
  }
  if (!report.suppressions_error.empty()) {
    text += kPrefix + std::string("suppressions not applied: ") + report.suppressions_error + "\n";
  }
  if (s.scanned) {
    text += kPrefix + StopLine(s) + "\n";
    text += kPrefix + std::string("leaks: ") + FormatBytes(s.direct_bytes) + " direct in " +
            FormatCount(s.direct_allocations) + ", " + FormatBytes(s.indirect_bytes) +
            " indirect in " + FormatCount(s.indirect_allocations) + "\n";
    text += kPrefix + FormatBytes(s.reachable_bytes) + " in " +
            FormatCount(s.reachable_allocations) + " still reachable" +
            (report.show_reachable ? "" : " (not shown)") + "\n";
    if (s.suppressed_allocations > 0) {
      text += kPrefix + FormatBytes(s.suppressed_bytes) + " in " +
              FormatCount(s.suppressed_allocations) + " suppressed\n";
    }
  } else {
    text += kPrefix + std::string("no reachability scan ran: every live block is listed\n");
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
  std::string text = "\n" + Headline(entry) + "\n";
  if (entry.frames.empty()) {
    text += "    (no stack)\n";
  } else {
    const std::string lines = format_frames(entry.frames);
    for (size_t start = 0; start < lines.size();) {
      size_t end = lines.find('\n', start);
      if (end == std::string::npos) end = lines.size();
      text += "    " + lines.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }
  return text + "    first allocated by thread " + entry.thread_name + " (tid " +
         std::to_string(entry.tid) + ")\n";
}

// LeakSanitizer's table of the suppressions used.
std::string SuppressionsUsed(const std::vector<SuppressionEntry>& used) {
  if (used.empty()) return "";
  std::string text = "\nSuppressions used:\n  count      bytes template\n";
  for (const SuppressionEntry& rule : used) {
    char row[64];
    std::snprintf(row, sizeof(row), "%7" PRIu64 " %10" PRIu64 " ", rule.count, rule.bytes);
    text += row + rule.pattern + (rule.builtin ? " (built-in)" : "") + "\n";
  }
  return text;
}

}  // namespace

std::string RenderText(const LeakReport& report, const FrameFormatter& format_frames) {
  std::string text = Header(report);
  for (const ReportEntry& entry : report.entries) text += Entry(entry, format_frames);
  text += SuppressionsUsed(report.suppressions);
  // Leaks when a scan ran (the summary's bytes are direct + indirect); else every live block.
  const bool leaks = report.summary.scanned || report.at_exit;
  text += "\nSUMMARY: stackwalk-leakcheck: " + FormatBytes(report.summary.bytes) +
          (leaks ? " leaked in " : " live in ") + FormatCount(report.summary.allocations) + ".\n";
  // Right under the SUMMARY line, so that no one takes "0 leaked" for a clean bill.
  if (const UntrackedCounts& u = report.summary.untracked; u.allocations() > 0) {
    text += "WARNING: stackwalk-leakcheck: " + UntrackedFigures(u) +
            " could not be tracked and are not in this summary: whether they leaked is unknown.\n";
  }
  return text;
}

}  // namespace stackwalk::leakcheck
