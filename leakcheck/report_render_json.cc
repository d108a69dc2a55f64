#include "leakcheck/report_render_json.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "format/frame_json.h"
#include "format/json_string.h"

// Written as text, member by member: a JSON library's document for the whole report cost ten
// times the text renderer's time (each frame list read back into it, every node freed through
// the checker's hooks), for the same bytes. Only each frame list goes through one (the library's
// one frame layout, format/frame_json.h), dumped once.
namespace stackwalk::leakcheck {
namespace {

using internal::JsonString;

// One leak's frames as JSON objects.
std::string FramesJson(const std::vector<SymbolizedFrame>& frames) {
  return internal::DumpJson(internal::FramesJsonArray(frames));
}

// "key":value members, each value already JSON.
std::string Member(const char* key, const std::string& json) {
  return JsonString(key) + ":" + json;
}
std::string Member(const char* key, uint64_t n) { return Member(key, std::to_string(n)); }

// An array of the JSON of each item.
template <class T, class Fn>
std::string Array(const std::vector<T>& items, Fn&& json) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + json(items[i]);
  return out + "]";
}

std::string SummaryJson(const ReportSummary& s) {
  std::string out = "{" + Member("bytes", s.bytes) + "," + Member("allocations", s.allocations) +
                    "," + Member("peak_bytes", s.peak_bytes) + "," +
                    Member("own_bytes", s.own_bytes());
  out += "," + Member("untracked", "{" + Member("allocations", s.untracked.allocations()) + "," +
                                       Member("bytes", s.untracked.bytes) + "," +
                                       Member("refused", s.untracked.refused) + "," +
                                       Member("no_memory", s.untracked.no_memory) + "}");
  out += "," + Member("scanned", std::string(s.scanned ? "true" : "false"));
  if (s.scanned) {
    out += "," + Member("direct_bytes", s.direct_bytes) + "," +
           Member("direct_allocations", s.direct_allocations) + "," +
           Member("indirect_bytes", s.indirect_bytes) + "," +
           Member("indirect_allocations", s.indirect_allocations) + "," +
           Member("reachable_bytes", s.reachable_bytes) + "," +
           Member("reachable_allocations", s.reachable_allocations) + "," +
           Member("suppressed_bytes", s.suppressed_bytes) + "," +
           Member("suppressed_allocations", s.suppressed_allocations) + "," +
           Member("pause_ns", s.pause_ns) + "," + Member("check_ns", s.check_ns);
  }
  return out + "}";
}

std::string StopJson(const ReportSummary& s) {
  return "{" + Member("method", JsonString(s.method)) + "," +
         Member("fallback_reason", JsonString(s.fallback_reason)) + "," +
         Member("stopped_threads", s.stopped_threads) + "," +
         Member("unstopped", Array(s.unstopped, [](const UnstoppedEntry& u) {
                  return "{" + Member("tid", std::to_string(u.tid)) + "," +
                         Member("why", JsonString(u.why)) + "}";
                })) +
         "}";
}

std::string SuppressionJson(const SuppressionEntry& rule) {
  return "{" + Member("pattern", JsonString(rule.pattern)) + "," + Member("count", rule.count) +
         "," + Member("bytes", rule.bytes) + "," +
         Member("builtin", std::string(rule.builtin ? "true" : "false")) + "}";
}

// An entry's "kind": what its verdict says.
const char* Kind(Verdict verdict) {
  switch (verdict) {
    case Verdict::kDirect: return "direct";
    case Verdict::kIndirect: return "indirect";
    case Verdict::kReachable: return "reachable";
    default: return "live";
  }
}

std::string ThreadJson(const ThreadEntry& t) {
  return "{" + Member("thread", JsonString(t.name)) + "," +
         Member("tid", std::to_string(t.tid)) + "," + Member("bytes", t.bytes) + "," +
         Member("allocations", t.count) + "," + Member("peak_bytes", t.peak_bytes) + "}";
}

std::string LeakJson(const ReportEntry& e) {
  return "{" + Member("kind", JsonString(Kind(e.verdict))) + "," + Member("bytes", e.bytes) + "," +
         Member("allocations", e.count) + "," +
         Member("thread", JsonString(e.thread_name)) + "," + Member("tid", std::to_string(e.tid)) +
         "," + Member("frames", FramesJson(e.frames)) + "}";
}

}  // namespace

std::string RenderJson(const LeakReport& report) {
  return "{" + Member("occasion", JsonString(report.occasion)) + "," +
         Member("pid", std::to_string(report.pid)) + "," +
         Member("program", JsonString(report.program)) + "," +
         Member("summary", SummaryJson(report.summary)) + "," +
         Member("stop", StopJson(report.summary)) + "," +
         Member("threads", Array(report.threads, ThreadJson)) + "," +
         Member("leaks", Array(report.entries, LeakJson)) + "," +
         Member("suppressions", Array(report.suppressions, SuppressionJson)) +
         (report.suppressions_error.empty()
              ? std::string()
              : "," + Member("suppressions_error", JsonString(report.suppressions_error))) +
         (report.sample_bytes == 0
              ? std::string()
              : "," + Member("sampled", "{" + Member("mean_bytes", report.sample_bytes) + "," +
                                            Member("note", JsonString("figures are estimates")) +
                                            "}")) +
         "}\n";
}

}  // namespace stackwalk::leakcheck
