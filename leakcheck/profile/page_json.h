// The HTML report's input as JSON, for stackwalk-flamegraph --html and any tool that writes it:
//
//   {"title": "...",
//    "summary": [["key", "value"], ...],
//    "timeline": {"threads": ["main", "worker"],
//                 "points": [[seconds, total_bytes, [main_bytes, worker_bytes]], ...]},
//    "tables": [{"title": "...", "columns": ["...", ...], "rows": [["...", ...], ...]}],
//    "flamegraphs": [{"title": "...", "unit": "bytes" | "count", "folded": "a;b 10\n..."}]}
//
// Every member is optional. Summary values and table cells may be strings or numbers.
#ifndef STACKWALK_LEAKCHECK_PROFILE_PAGE_JSON_H_
#define STACKWALK_LEAKCHECK_PROFILE_PAGE_JSON_H_

#include <string>
#include <string_view>
#include <vector>

#include "leakcheck/profile/html_report.h"

namespace stackwalk::profile {

// ReadPageJson(): the page described by `json`. A member of the wrong type, or a bad folded
// line, is named in `errors` ("flamegraphs[1].folded:3: ...", "timeline.points[4]: ...") and
// left out; text that is not JSON at all gives an error and an empty page.
ReportPage ReadPageJson(std::string_view json, std::vector<std::string>& errors);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_PAGE_JSON_H_
