// The JSON renderer of a leak report (report_model.h): one object, {"occasion", "pid", "program",
// "summary": {...}, "threads": [...], "leaks": [{..., "frames": [...]}]}, on one line. Reads the
// model only.
#ifndef STACKWALK_LEAKCHECK_REPORT_RENDER_JSON_H_
#define STACKWALK_LEAKCHECK_REPORT_RENDER_JSON_H_

#include <string>

#include "leakcheck/report_model.h"

namespace stackwalk::leakcheck {

// The report as one JSON object and a newline. Bytes that are not UTF-8 (a thread name, a path)
// become U+FFFD.
std::string RenderJson(const LeakReport& report);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_RENDER_JSON_H_
