// The script and style every flame graph carries inline (flame_svg.cc): hover details, click to
// zoom, search. Kept apart so the renderer reads as drawing code.
#ifndef STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_SCRIPT_H_
#define STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_SCRIPT_H_

#include <string_view>

namespace stackwalk::profile {

// CSS for the classes flame_svg.cc writes (fg-*); scoped to svg.fg-root.
extern const std::string_view kFlameSvgStyle;

// The script: finds its own <svg class="fg-root"> (document.currentScript, so that several
// graphs can share one HTML page), reads the frames' data-x / data-v / data-d and <title>, and
// attaches svg.stackwalkFlame = {search(term), zoom(g), reset()}. A standalone SVG also takes
// Ctrl-F / F3 and a "#search=TERM" fragment. Names are read from the DOM, never written into
// the script, so the script has nothing to escape. Contains no "]]>" (it sits in a CDATA section).
extern const std::string_view kFlameSvgScript;

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_FLAME_SVG_SCRIPT_H_
