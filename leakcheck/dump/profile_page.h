// The profile views (profile_view.h) drawn by the profile renderers (leakcheck/profile/):
//   svg   a stack view's interactive flame graph; its values are the view's own
//         (ProfileView::value(): bytes for byte views, counts for allocations and temporary), so
//         the graph's total is the view's total and its stacks the folded output's
//   html  the dump's whole profile as one self-contained page: a summary, live bytes over time
//         (the timeline view: the total and each thread sampled), the top stacks of the peak,
//         allocations, temporary and live views and the threads table, and flame graphs of the
//         peak, allocations, temporary and live views
// Not signal-safe.
#ifndef STACKWALK_LEAKCHECK_DUMP_PROFILE_PAGE_H_
#define STACKWALK_LEAKCHECK_DUMP_PROFILE_PAGE_H_

#include <cstddef>
#include <string>

#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_name.h"
#include "leakcheck/dump/profile_view.h"
#include "leakcheck/profile/flame_graph.h"

namespace stackwalk::leakcheck::dump {

// Whether the view has stacks to draw as a flame graph (not threads, not the timeline).
bool ViewHasStacks(ViewKind kind);

// A stack view as a flame graph's input: frames outermost first, each stack's value the view's.
profile::FlameInput ViewFlameInput(const ProfileView& view);

// A stack view's flame graph as a standalone SVG.
std::string RenderViewSvg(const ProfileView& view);

// The HTML page of `dump`'s profile, its frames named by `namer` (made for this dump); `first`
// (a stack view) leads the tables and graphs; `top` rows per table. `missing` gets why a view
// is empty or partial ("" when every view is whole).
std::string RenderProfilePage(const DumpContents& dump, DumpNamer* namer, ViewKind first,
                              size_t top, std::string* missing);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_PROFILE_PAGE_H_
