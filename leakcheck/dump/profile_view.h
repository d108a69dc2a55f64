// ProfileView: one memory-profile view of a leak dump (docs/leakcheck.md, "Profile views") as
// plain data a renderer reads: stacks with named frames and a value, largest first; for the
// threads view, a table of threads. Renderers: profile_render.h (text, JSON, folded); a flame
// graph or HTML page takes the same list of {frames, bytes, allocations}. Not signal-safe.
//
//   leaks        the leak report's entries shown (direct and indirect; live when no scan ran)
//   peak         the bytes each stack held when the process's live bytes last peaked
//   allocations  allocations made per stack over the run, and their bytes
//   temporary    allocations freed by their thread before it allocated again
//   live         the blocks live at the dump, per stack
//   threads      every thread's live bytes at the dump and their peak
//   timeline     the process's live bytes over time, and its busiest threads' (no stacks)
#ifndef STACKWALK_LEAKCHECK_DUMP_PROFILE_VIEW_H_
#define STACKWALK_LEAKCHECK_DUMP_PROFILE_VIEW_H_

#include <cstdint>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_contents.h"
#include "leakcheck/dump/dump_name.h"
#include "leakcheck/report_model.h"
#include "leakcheck/untracked.h"

namespace stackwalk::leakcheck::dump {

enum class ViewKind { kLeaks, kPeak, kAllocations, kTemporary, kLive, kThreads, kTimeline };

// The view named `name` ("peak", ...); false if there is none.
bool ParseViewKind(const std::string& name, ViewKind* kind);
const char* ViewName(ViewKind kind);

struct ProfileStack {
  std::vector<std::string> frames;  // function names (inlined calls included), innermost first
  uint64_t bytes = 0;
  uint64_t allocations = 0;
};

struct ProfileThread {
  uint32_t serial = 0;
  int32_t tid = 0;
  std::string name;  // "?" when unknown
  bool exited = false;
  uint64_t live_bytes = 0;
  uint64_t peak_bytes = 0;
};

struct ProfileTimelineThread {
  uint32_t serial = 0;
  std::string name;  // "?" when unknown
  uint64_t live_bytes = 0;
};
struct ProfileTimelinePoint {
  uint64_t time_ns = 0;  // since the first point
  uint64_t live_bytes = 0;
  bool at_peak = false;
  std::vector<ProfileTimelineThread> threads;  // the busiest, largest first
};

struct ProfileView {
  ViewKind kind = ViewKind::kPeak;
  // The view's value is the allocation count (allocations, temporary), else bytes: the order,
  // and the folded output's value.
  bool by_count = false;
  std::vector<ProfileStack> stacks;  // value > 0 only, largest first
  uint64_t total_bytes = 0;          // over every stack of the view
  uint64_t total_allocations = 0;
  uint64_t process_peak_bytes = 0;   // the process's recorded live bytes at their peak
  // The run's sampling mean (0: every allocation recorded). Sampled, bytes are the recorded
  // blocks' estimates but allocation counts are of the recorded blocks only, not estimates.
  uint64_t sample_bytes = 0;
  // Allocations the program made that the checker could not record (untracked.h): in no view.
  UntrackedCounts untracked;
  std::vector<ProfileThread> threads;  // the threads view: largest peak first
  std::vector<ProfileTimelinePoint> timeline;  // the timeline view, in time order
  uint64_t timeline_interval_ns = 0;
  std::string missing;       // why the view is empty or partial ("" when whole)
  std::string naming_error;  // the modules whose frames could not be named
  uint64_t value(const ProfileStack& s) const { return by_count ? s.allocations : s.bytes; }
  uint64_t total() const { return by_count ? total_allocations : total_bytes; }
};

// The view `kind` (not kLeaks) of `dump`, its frames named by `namer` (made for this dump).
ProfileView BuildProfileView(const DumpContents& dump, ViewKind kind, DumpNamer* namer);
// The leaks view: the entries a leak report shows that are leaks (direct, indirect; or live
// blocks when no scan ran).
ProfileView LeaksView(const LeakReport& report);

// A frame as a profile names it: its function, else "object+0xOFFSET", else "0xPC".
std::string ProfileFrameName(const SymbolizedFrame& frame);

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_PROFILE_VIEW_H_
