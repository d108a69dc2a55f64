// The folded-stack reader and the flame graph drawn from what it read (stackwalk-flamegraph's
// input); input starting with '{' goes to the HTML report's JSON reader and the page instead.
// Checks what must hold for any input: the tree's totals cover their callees', the drawing's
// frame count stays within its cap, and the output is well-formed UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/folded_reader.h"
#include "leakcheck/profile/markup_escape.h"
#if STACKWALK_FUZZ_PAGE
#include "leakcheck/profile/html_report.h"
#include "leakcheck/profile/page_json.h"
#endif

namespace {

using namespace stackwalk::profile;

void CheckUtf8(const std::string& text) {
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    if (ValidUtf8(line) != line) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  FlameLayoutOptions layout;
  layout.width_px = 600;
  layout.max_frames = 200;
#if STACKWALK_FUZZ_PAGE
  if (!text.empty() && text[0] == '{') {
    std::vector<std::string> errors;
    const ReportPage page = ReadPageJson(text, errors);
    ReportPageOptions options;
    options.width_px = 600;
    options.flame_layout = layout;
    CheckUtf8(RenderReportPage(page, options));
    return 0;
  }
#endif
  FlameTree tree;
  const FoldedResult result = ReadFolded(text, tree);
  tree.Finish();
  if (result.errors.size() > kMaxFoldedErrors || result.errors.size() > result.bad_lines) std::abort();
  if (!tree.saturated()) {
    for (const FlameNode& node : tree.nodes()) {
      uint64_t callees = 0;
      for (const uint32_t child : node.children) callees += tree.nodes()[child].total;
      if (callees > node.total) std::abort();
    }
  }
  FlameSvgOptions options;
  options.layout = layout;
  const FlameLayout drawn = LayOut(tree, layout);
  if (drawn.rects.size() > layout.max_frames + 1) std::abort();  // the root is always drawn
  CheckUtf8(RenderFlameSvg(tree, "fuzz", ValueUnit::kBytes, options));
  return 0;
}
