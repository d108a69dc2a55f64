// FrameJson(): the one JSON layout of a named frame, written with nlohmann-json, for every
// producer of JSON frames (FormatFramesJson, stackwalk-symbolize --json, the leak report's
// "frames"). docs/schema/frame.schema.json is its schema; tests check each producer against it.
//
//   {"index":0,"pc":"0x55d0c0a0151b","function":"f()","file":"a.cc","line":3,"column":9,
//    "inlined":false,"module":"/bin/a","module_offset":"0x151b"}
//
// Header-only (nlohmann-json is), so the preloaded leak checker uses it without linking the
// symbolizer. Allocates and may throw std::bad_alloc: NOT async-signal-safe; callers catch it.
#ifndef STACKWALK_SRC_FORMAT_FRAME_JSON_H_
#define STACKWALK_SRC_FORMAT_FRAME_JSON_H_

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stackwalk/symbolizer.h"  // SymbolizedFrame only

namespace stackwalk::internal {

// Fields in the order written (ordered_json keeps insertion order).
inline nlohmann::ordered_json FrameJson(const SymbolizedFrame& f) {
  const auto hex = [](uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
    return std::string(buf);
  };
  nlohmann::ordered_json j;
  j["index"] = f.index;
  j["pc"] = hex(f.pc);
  j["function"] = f.function;
  j["file"] = f.file;
  j["line"] = f.line;
  j["column"] = f.column;
  j["inlined"] = f.inlined;
  j["module"] = f.module;
  j["module_offset"] = hex(f.module_offset);
  return j;
}

inline nlohmann::ordered_json FramesJsonArray(const std::vector<SymbolizedFrame>& frames) {
  nlohmann::ordered_json array = nlohmann::ordered_json::array();
  for (const SymbolizedFrame& f : frames) array.push_back(FrameJson(f));
  return array;
}

// Compact text; bytes that are not UTF-8 (a path, a name) become U+FFFD, so it is always valid.
inline std::string DumpJson(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FORMAT_FRAME_JSON_H_
