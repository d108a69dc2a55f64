// The profile views (profile_view.h) as text, JSON or folded stacks. Not signal-safe.
//   text    a top-N table: each stack's value, its share of the view's total, the other figure,
//           and its frames
//   json    {"view": V, "total_bytes": N, "total_allocations": N, "stacks": [{"frames": [...],
//           "bytes": N, "allocations": N}, ...]} largest first, frames innermost first; the
//           threads view has "threads": [{"serial", "tid", "name", "exited", "live_bytes",
//           "peak_bytes"}] instead of stacks; the timeline view "interval_ns" and "timeline":
//           [{"time_ns", "live_bytes", "at_peak", "threads": [{"serial", "name", "live_bytes"}]}]
//   folded  "outermost;...;innermost VALUE" per stack, for flamegraph.pl, inferno and speedscope:
//           bytes for byte views, counts for allocations and temporary; every stack, so the
//           values sum to the view's total. The threads view: "name[serial] LIVE_BYTES". The
//           timeline has no stacks: none (stackwalk-report refuses the pair).
#ifndef STACKWALK_LEAKCHECK_DUMP_PROFILE_RENDER_H_
#define STACKWALK_LEAKCHECK_DUMP_PROFILE_RENDER_H_

#include <cstddef>
#include <string>

#include "leakcheck/dump/profile_view.h"

namespace stackwalk::leakcheck::dump {

// `top`: the stacks (or threads) shown; 0 for all.
std::string RenderViewText(const ProfileView& view, size_t top);
std::string RenderViewJson(const ProfileView& view, size_t top);
std::string RenderViewFolded(const ProfileView& view);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_PROFILE_RENDER_H_
