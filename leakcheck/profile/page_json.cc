#include "leakcheck/profile/page_json.h"

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "leakcheck/profile/folded_reader.h"

namespace stackwalk::profile {
namespace {

using nlohmann::json;

// A string, or a number written as JSON writes it.
bool ReadText(const json& value, std::string& out) {
  if (value.is_string()) {
    out = value.get<std::string>();
    return true;
  }
  if (value.is_number()) {
    out = value.dump();
    return true;
  }
  return false;
}

bool ReadBytes(const json& value, uint64_t& out) {
  if (value.is_number_unsigned()) {
    out = value.get<uint64_t>();
    return true;
  }
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(value.get<int64_t>());
    return true;
  }
  return false;
}

void ReadTimeline(const json& timeline, Timeline& out, std::vector<std::string>& errors) {
  if (!timeline.is_object()) {
    errors.push_back("timeline: not an object");
    return;
  }
  if (const auto threads = timeline.find("threads"); threads != timeline.end()) {
    if (!threads->is_array()) errors.push_back("timeline.threads: not an array");
    for (size_t i = 0; threads->is_array() && i < threads->size(); ++i) {
      std::string name;
      if (!ReadText((*threads)[i], name)) {
        errors.push_back("timeline.threads[" + std::to_string(i) + "]: not a string");
      }
      out.thread_names.push_back(name);
    }
  }
  const auto points = timeline.find("points");
  if (points == timeline.end()) return;
  if (!points->is_array()) {
    errors.push_back("timeline.points: not an array");
    return;
  }
  for (size_t i = 0; i < points->size(); ++i) {
    const json& point = (*points)[i];
    const std::string where = "timeline.points[" + std::to_string(i) + "]: ";
    TimelinePoint read;
    if (!point.is_array() || point.size() < 2 || !point[0].is_number() ||
        !std::isfinite(point[0].get<double>()) || !ReadBytes(point[1], read.total_bytes)) {
      errors.push_back(where + "expected [seconds, total_bytes, [thread_bytes, ...]]");
      continue;
    }
    read.seconds = point[0].get<double>();
    if (point.size() > 2) {
      if (!point[2].is_array()) {
        errors.push_back(where + "thread bytes: not an array");
        continue;
      }
      for (const json& bytes : point[2]) {
        uint64_t value = 0;
        if (!ReadBytes(bytes, value)) errors.push_back(where + "a thread's bytes: not a count");
        read.thread_bytes.push_back(value);
      }
    }
    if (!out.points.empty() && read.seconds < out.points.back().seconds) {
      errors.push_back(where + "earlier than the point before it");
      continue;
    }
    out.points.push_back(std::move(read));
  }
}

void ReadTable(const json& table, const std::string& where, ReportTable& out,
               std::vector<std::string>& errors) {
  if (!table.is_object()) {
    errors.push_back(where + ": not an object");
    return;
  }
  if (const auto title = table.find("title"); title != table.end() && !ReadText(*title, out.title)) {
    errors.push_back(where + ".title: not a string");
  }
  if (const auto columns = table.find("columns"); columns != table.end() && columns->is_array()) {
    for (const json& column : *columns) {
      std::string text;
      if (!ReadText(column, text)) errors.push_back(where + ".columns: a column is not a string");
      out.columns.push_back(text);
    }
  }
  if (const auto rows = table.find("rows"); rows != table.end() && rows->is_array()) {
    for (size_t r = 0; r < rows->size(); ++r) {
      const json& row = (*rows)[r];
      if (!row.is_array()) {
        errors.push_back(where + ".rows[" + std::to_string(r) + "]: not an array");
        continue;
      }
      std::vector<std::string> cells;
      for (const json& cell : row) {
        std::string text;
        if (!ReadText(cell, text)) {
          errors.push_back(where + ".rows[" + std::to_string(r) + "]: a cell is not text");
        }
        cells.push_back(text);
      }
      out.rows.push_back(std::move(cells));
    }
  }
}

void ReadFlameGraph(const json& graph, const std::string& where, FlameInput& out,
                    std::vector<std::string>& errors) {
  if (!graph.is_object()) {
    errors.push_back(where + ": not an object");
    return;
  }
  if (const auto title = graph.find("title"); title != graph.end() && !ReadText(*title, out.title)) {
    errors.push_back(where + ".title: not a string");
  }
  if (const auto unit = graph.find("unit"); unit != graph.end()) {
    if (*unit == "bytes") {
      out.unit = ValueUnit::kBytes;
    } else if (*unit == "count") {
      out.unit = ValueUnit::kCount;
    } else {
      errors.push_back(where + ".unit: neither \"bytes\" nor \"count\"");
    }
  }
  const auto folded = graph.find("folded");
  if (folded == graph.end() || !folded->is_string()) {
    errors.push_back(where + ".folded: missing or not a string");
    return;
  }
  const FoldedResult result = ReadFolded(folded->get_ref<const std::string&>(), out);
  if (result.bad_lines == 0) return;
  const std::string messages = FormatFoldedErrors(result, where + ".folded");
  size_t start = 0;
  while (start < messages.size()) {
    const size_t end = messages.find('\n', start);
    errors.push_back(messages.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

ReportPage ReadPageJson(std::string_view text, std::vector<std::string>& errors) {
  ReportPage page;
  const json root = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    errors.push_back("not a JSON object");
    return page;
  }
  if (const auto title = root.find("title"); title != root.end() && !ReadText(*title, page.title)) {
    errors.push_back("title: not a string");
  }
  if (const auto summary = root.find("summary"); summary != root.end()) {
    for (size_t i = 0; summary->is_array() && i < summary->size(); ++i) {
      const json& item = (*summary)[i];
      std::string key, value;
      if (!item.is_array() || item.size() != 2 || !ReadText(item[0], key) ||
          !ReadText(item[1], value)) {
        errors.push_back("summary[" + std::to_string(i) + "]: expected [key, value]");
        continue;
      }
      page.summary.emplace_back(std::move(key), std::move(value));
    }
    if (!summary->is_array()) errors.push_back("summary: not an array");
  }
  if (const auto timeline = root.find("timeline"); timeline != root.end()) {
    ReadTimeline(*timeline, page.timeline, errors);
  }
  if (const auto tables = root.find("tables"); tables != root.end() && tables->is_array()) {
    for (size_t i = 0; i < tables->size(); ++i) {
      ReportTable table;
      ReadTable((*tables)[i], "tables[" + std::to_string(i) + "]", table, errors);
      page.tables.push_back(std::move(table));
    }
  }
  if (const auto graphs = root.find("flamegraphs"); graphs != root.end() && graphs->is_array()) {
    for (size_t i = 0; i < graphs->size(); ++i) {
      FlameInput input;
      ReadFlameGraph((*graphs)[i], "flamegraphs[" + std::to_string(i) + "]", input, errors);
      page.flame_graphs.push_back(std::move(input));
    }
  }
  return page;
}

}  // namespace stackwalk::profile
