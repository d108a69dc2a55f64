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
  if (s.scanned) {
    out += "," + Member("reachable_bytes", s.reachable_bytes) + "," +
           Member("reachable_allocations", s.reachable_allocations);
  }
  return out + "}";
}

std::string ThreadJson(const ThreadEntry& t) {
  return "{" + Member("thread", JsonString(t.name)) + "," +
         Member("tid", std::to_string(t.tid)) + "," + Member("bytes", t.bytes) + "," +
         Member("allocations", t.count) + "," + Member("peak_bytes", t.peak_bytes) + "}";
}

std::string LeakJson(const ReportEntry& e) {
  return "{" + Member("bytes", e.bytes) + "," + Member("allocations", e.count) + "," +
         Member("thread", JsonString(e.thread_name)) + "," + Member("tid", std::to_string(e.tid)) +
         "," + Member("frames", FramesJson(e.frames)) + "}";
}

}  // namespace

std::string RenderJson(const LeakReport& report) {
  return "{" + Member("occasion", JsonString(report.occasion)) + "," +
         Member("pid", std::to_string(report.pid)) + "," +
         Member("program", JsonString(report.program)) + "," +
         Member("summary", SummaryJson(report.summary)) + "," +
         Member("threads", Array(report.threads, ThreadJson)) + "," +
         Member("leaks", Array(report.entries, LeakJson)) + "}\n";
}

}  // namespace stackwalk::leakcheck
