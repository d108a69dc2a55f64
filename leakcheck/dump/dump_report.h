// ReportFromDump: a leak dump (dump_contents.h) made into the report the program would have
// written, by the same stages (report_model.h): name (dump_name.h), suppress, group, filter,
// label; then rendered as text or JSON. What stackwalk-report (tools/stackwalk_report.cc) runs,
// later or on another machine. Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_REPORT_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_name.h"
#include "leakcheck/report_model.h"

namespace stackwalk::leakcheck::dump {

// What to render; an option left unset takes the program's own (DumpRendering).
struct RenderRequest {
  std::optional<bool> json;
  std::optional<bool> show_reachable;
  std::optional<std::string> suppressions;  // comma-separated files
  std::optional<std::string> libraries;
  std::optional<std::string> ignore_libraries;
};

// The model of `dump`'s report, its frames named by `namer` (made for this dump).
LeakReport ReportFromDump(const DumpContents& dump, const RenderRequest& request,
                          DumpNamer* namer);

// The report as text or JSON, as the program renders it; `leaked_allocations`, when given, gets
// the leaks it counts after suppression (what the program's --exitcode decides on).
std::string RenderDumpReport(const DumpContents& dump, const RenderRequest& request,
                             const NamingPlaces& places, uint64_t* leaked_allocations = nullptr);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_REPORT_H_
