// A flame graph as one self-contained SVG: frames as rectangles as wide as their value, the
// outermost at the bottom, labels clipped to their width, colours from a hash of the name (the
// same function has the same colour in every graph), and inline script and style for hover
// details, click to zoom and search (flame_svg_script.h). Nothing is fetched from the network.
// The same tree and options give the same bytes.
#ifndef STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_H_
#define STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_H_

#include <string>
#include <string_view>

#include "leakcheck/profile/flame_graph.h"

namespace stackwalk::profile {

struct FlameSvgOptions {
  FlameLayoutOptions layout;
  // A file of its own (an XML declaration, Ctrl-F and "#search=" handled), or an element to
  // place inside an HTML page (html_report.h).
  bool standalone = true;
};

// RenderFlameSvg(): the finished `tree` drawn. Every name is written through MarkupEscape();
// a tree whose values saturated, and frames too narrow to draw, are said so in the drawing.
std::string RenderFlameSvg(const FlameTree& tree, std::string_view title, ValueUnit unit,
                           const FlameSvgOptions& options);

// FrameColour(): "#rrggbb" for a frame's name (warm colours, as flamegraph.pl's "hot").
std::string FrameColour(std::string_view name);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_H_
