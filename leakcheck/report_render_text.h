// The text renderer of a leak report (report_model.h): the "==stackwalk-leakcheck==" header
// lines, one block per entry with its frames, and the SUMMARY line. Reads the model only.
#ifndef STACKWALK_LEAKCHECK_REPORT_RENDER_TEXT_H_
#define STACKWALK_LEAKCHECK_REPORT_RENDER_TEXT_H_

#include <functional>
#include <string>
#include <vector>

#include "leakcheck/report_model.h"

namespace stackwalk::leakcheck {

// Formats a stack's named frames, one line each, '\n'-terminated (FrameNamer::Format).
using FrameFormatter = std::function<std::string(const std::vector<SymbolizedFrame>&)>;

std::string RenderText(const LeakReport& report, const FrameFormatter& format_frames);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_RENDER_TEXT_H_
