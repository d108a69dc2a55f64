#include "leakcheck/report_render_json.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/json_string.h"

namespace stackwalk::leakcheck {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

// One leak's frames as JSON objects.
std::string FramesJson(const std::vector<SymbolizedFrame>& frames) {
  using internal::JsonString;
  std::string out = "[";
  char number[40];
  for (size_t i = 0; i < frames.size(); ++i) {
    const SymbolizedFrame& f = frames[i];
    std::snprintf(number, sizeof(number), "0x%" PRIx64, f.pc);
    out += std::string(i ? "," : "") + "{\"pc\":\"" + number + "\",\"module\":" + JsonString(f.module);
    std::snprintf(number, sizeof(number), "0x%" PRIx64, f.module_offset);
    out += std::string(",\"offset\":\"") + number + "\",\"function\":" + JsonString(f.function) +
           ",\"file\":" + JsonString(f.file) + ",\"line\":" + std::to_string(f.line) +
           ",\"column\":" + std::to_string(f.column) +
           ",\"inlined\":" + (f.inlined ? "true" : "false") + "}";
  }
  return out + "]";
}

// The frames' layout is FramesJson's alone: its text, read back into the report's object.
Json FramesValue(const std::vector<SymbolizedFrame>& frames) {
  Json value = Json::parse(FramesJson(frames), nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? Json::array() : value;
}

Json SummaryValue(const ReportSummary& s) {
  Json summary = {{"bytes", s.bytes},
                  {"allocations", s.allocations},
                  {"peak_bytes", s.peak_bytes},
                  {"own_bytes", s.own_bytes()}};
  if (s.scanned) {
    summary["reachable_bytes"] = s.reachable_bytes;
    summary["reachable_allocations"] = s.reachable_allocations;
  }
  return summary;
}

}  // namespace

std::string RenderJson(const LeakReport& report) {
  Json threads = Json::array();
  for (const ThreadEntry& t : report.threads) {
    threads.push_back({{"thread", t.name},
                       {"tid", t.tid},
                       {"bytes", t.bytes},
                       {"allocations", t.count},
                       {"peak_bytes", t.peak_bytes}});
  }
  Json leaks = Json::array();
  for (const ReportEntry& entry : report.entries) {
    leaks.push_back({{"bytes", entry.bytes},
                     {"allocations", entry.count},
                     {"thread", entry.thread_name},
                     {"tid", entry.tid},
                     {"frames", FramesValue(entry.frames)}});
  }
  const Json json = {{"occasion", report.occasion},
                     {"pid", report.pid},
                     {"program", report.program},
                     {"summary", SummaryValue(report.summary)},
                     {"threads", std::move(threads)},
                     {"leaks", std::move(leaks)}};
  return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace stackwalk::leakcheck
