// stackwalk-flamegraph: folded stacks (flamegraph.pl's input, from stackwalk-report's folded
// format, perf script | inferno-collapse-perf, or any other tool) as one self-contained,
// interactive SVG flame graph; with --html, a page description (leakcheck/profile/page_json.h)
// as the HTML report.
//
// Exit status: 0 when everything was read; 1 when some input could not be read (each bad line
// named on stderr with its number; what could be read is still drawn); 2 for a usage error.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/folded_reader.h"
#include "leakcheck/profile/html_report.h"
#include "leakcheck/profile/page_json.h"

namespace {

using namespace stackwalk::profile;

constexpr const char kUsage[] =
    "usage: stackwalk-flamegraph [OPTIONS] [FOLDED]     folded stacks -> SVG flame graph\n"
    "       stackwalk-flamegraph --html PAGE.json         page description -> HTML report\n"
    "  FOLDED             'frame;frame;... VALUE' lines, outermost frame first (default: stdin)\n"
    "  --title TEXT       the graph's title (default: the input's name)\n"
    "  --unit bytes|count what the values count (default: bytes)\n"
    "  --width PX         the drawing's width (default 1200)\n"
    "  --min-width PX     narrower frames are not drawn, they count in their caller (default 0.1)\n"
    "  --max-frames N     at most N frames drawn, the narrowest left out first (default 50000)\n"
    "  -o FILE            write there instead of stdout\n";

bool ReadInput(const std::string& path, std::string& out) {
  if (path == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    out = text.str();
    return !std::cin.bad();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::ostringstream text;
  text << file.rdbuf();
  out = text.str();
  return !file.bad();
}

bool ParseNumber(const char* text, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text, &end);
  return errno == 0 && end != text && *end == '\0' && out > 0 && out < 1e7;
}

}  // namespace

int main(int argc, char** argv) {
  std::string title, input = "-", output, html;
  ValueUnit unit = ValueUnit::kBytes;
  FlameSvgOptions options;
  bool have_input = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stackwalk-flamegraph: %s needs a value\n%s", argv[i], kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    double number = 0;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--title") {
      title = value();
    } else if (arg == "--unit") {
      const std::string_view name = value();
      if (name != "bytes" && name != "count") {
        std::fprintf(stderr, "stackwalk-flamegraph: --unit is bytes or count, not '%s'\n",
                     std::string(name).c_str());
        return 2;
      }
      unit = name == "bytes" ? ValueUnit::kBytes : ValueUnit::kCount;
    } else if (arg == "--width" || arg == "--min-width" || arg == "--max-frames") {
      const char* text = value();
      if (!ParseNumber(text, number) || (arg == "--width" && number < 100)) {
        std::fprintf(stderr, "stackwalk-flamegraph: bad %s '%s'\n", std::string(arg).c_str(), text);
        return 2;
      }
      if (arg == "--width") options.layout.width_px = number;
      if (arg == "--min-width") options.layout.min_frame_px = number;
      if (arg == "--max-frames") options.layout.max_frames = static_cast<size_t>(number);
    } else if (arg == "-o") {
      output = value();
    } else if (arg == "--html") {
      html = value();
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "stackwalk-flamegraph: unknown option %s\n%s", argv[i], kUsage);
      return 2;
    } else if (!have_input) {
      input = argv[i];
      have_input = true;
    } else {
      std::fprintf(stderr, "stackwalk-flamegraph: one input only\n%s", kUsage);
      return 2;
    }
  }
  if (!html.empty() && have_input) {
    std::fprintf(stderr, "stackwalk-flamegraph: --html takes its input as its value\n%s", kUsage);
    return 2;
  }

  const std::string& path = html.empty() ? input : html;
  const std::string name = path == "-" ? "<stdin>" : path;
  std::string text;
  if (!ReadInput(path, text)) {
    std::fprintf(stderr, "stackwalk-flamegraph: cannot read %s: %s\n", name.c_str(),
                 std::strerror(errno));
    return 1;
  }

  std::string rendered;
  bool complete = true;
  if (!html.empty()) {
    std::vector<std::string> errors;
    const ReportPage page = ReadPageJson(text, errors);
    for (const std::string& error : errors) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), error.c_str());
    }
    complete = errors.empty();
    ReportPageOptions page_options;
    page_options.width_px = options.layout.width_px;
    page_options.flame_layout = options.layout;
    rendered = RenderReportPage(page, page_options);
  } else {
    FlameTree tree;
    const FoldedResult result = ReadFolded(text, tree);
    tree.Finish();
    std::fputs(FormatFoldedErrors(result, name).c_str(), stderr);
    complete = result.bad_lines == 0;
    rendered = RenderFlameSvg(tree, title.empty() ? name : title, unit, options);
  }

  if (output.empty()) {
    if (std::fwrite(rendered.data(), 1, rendered.size(), stdout) != rendered.size() ||
        std::fflush(stdout) != 0) {
      std::fprintf(stderr, "stackwalk-flamegraph: cannot write: %s\n", std::strerror(errno));
      return 1;
    }
  } else {
    std::ofstream file(output, std::ios::binary | std::ios::trunc);
    file.write(rendered.data(), static_cast<std::streamsize>(rendered.size()));
    file.close();
    if (!file) {
      std::fprintf(stderr, "stackwalk-flamegraph: cannot write %s\n", output.c_str());
      return 1;
    }
  }
  return complete ? 0 : 1;
}
