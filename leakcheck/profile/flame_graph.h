// A flame graph's data: stacks of named frames with a value, merged into a tree of callers and
// callees, and the tree laid out for drawing (the frames wide enough to draw, each with its left
// edge in value units). Independent of where the stacks come from: a leak dump's views, or the
// folded lines of any profiler (folded_reader.h).
//
// Stacks list their frames OUTERMOST FIRST (frames[0] is the thread's entry or main, the last
// frame is where the memory was allocated), as folded lines do; a graph draws the outermost
// frame at the bottom.
#ifndef STACKWALK_LEAKCHECK_PROFILE_FLAME_GRAPH_H_
#define STACKWALK_LEAKCHECK_PROFILE_FLAME_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stackwalk::profile {

// What a stack's value counts: bytes (live, peak, allocated) or events (allocations, samples).
enum class ValueUnit { kBytes, kCount };

// One stack, outermost frame first, and its value.
struct FlameStack {
  std::vector<std::string> frames;
  uint64_t value = 0;
};

// A flame graph's input: what it is called, what its values count, and its stacks (the same stack
// may appear more than once: the values add).
struct FlameInput {
  std::string title;
  ValueUnit unit = ValueUnit::kBytes;
  std::vector<FlameStack> stacks;
};

// A frame of the merged tree: one per distinct path from the root.
struct FlameNode {
  uint32_t name = 0;    // FlameTree::Name()
  uint32_t parent = 0;  // the root is its own parent
  uint32_t depth = 0;   // the root is 0, the outermost frames 1
  uint64_t total = 0;   // its stacks' values, its callees' included
  std::vector<uint32_t> children;  // sorted by name once Finish()ed
};

// FlameTree: the stacks merged by common prefix under one root ("all"). Add() each stack, then
// Finish() once; the nodes are then in a deterministic order whatever order the stacks came in.
// Values saturate at 2^64-1 (saturated() says so) rather than wrap.
class FlameTree {
 public:
  FlameTree();

  void Add(std::span<const std::string> frames, uint64_t value);
  void Add(std::span<const std::string_view> frames, uint64_t value);
  void Finish();

  static FlameTree Build(const FlameInput& input);

  const std::vector<FlameNode>& nodes() const { return nodes_; }
  const FlameNode& root() const { return nodes_[0]; }
  std::string_view Name(const FlameNode& node) const { return names_[node.name]; }
  bool saturated() const { return saturated_; }

 private:
  template <typename Frame>
  void AddFrames(std::span<const Frame> frames, uint64_t value);
  uint32_t Intern(std::string_view name);
  uint32_t Child(uint32_t parent, std::string_view name);

  std::vector<FlameNode> nodes_;
  std::deque<std::string> names_;  // a deque: the index's string_views stay valid as it grows
  std::unordered_map<std::string_view, uint32_t> name_index_;
  // Mixes both halves of a (parent << 32 | name) key: std::hash<uint64_t> is the identity, and
  // on 32-bit targets keeps only the low half (the name), which put every frame of a name in one
  // bucket (a 200,000-frame stack of three names took minutes under qemu-arm).
  struct ChildKeyHash {
    size_t operator()(uint64_t key) const {
      key ^= key >> 33;  // MurmurHash3's 64-bit finalizer
      key *= 0xff51afd7ed558ccdull;
      key ^= key >> 33;
      key *= 0xc4ceb9fe1a85ec53ull;
      key ^= key >> 33;
      return static_cast<size_t>(key);
    }
  };
  std::unordered_map<uint64_t, uint32_t, ChildKeyHash> child_index_;  // (parent << 32 | name) -> node
  bool saturated_ = false;
};

// How a tree is laid out: the drawing's width, the narrowest frame drawn, and a cap on the
// frames drawn (which keeps a million distinct stacks from making a drawing of gigabytes).
struct FlameLayoutOptions {
  double width_px = 1200;
  double min_frame_px = 0.1;
  size_t max_frames = 50000;
};

// A drawn frame: its node and its left edge, in value units from the root's left edge.
struct FlameRect {
  uint32_t node = 0;
  uint64_t offset = 0;
};

// FlameLayout: the frames to draw, parents before their children, siblings left to right.
// A frame narrower than min_frame_px, or beyond max_frames (the narrowest go first; of equal
// ones, the deepest), is not drawn: its value stays in its caller's width. hidden_frames counts
// them, hidden_value is what the outermost of them hold together.
struct FlameLayout {
  std::vector<FlameRect> rects;
  uint32_t max_depth = 0;
  uint64_t min_drawn_value = 0;  // the narrowest frame drawn holds this
  size_t hidden_frames = 0;
  uint64_t hidden_value = 0;
};

FlameLayout LayOut(const FlameTree& tree, const FlameLayoutOptions& options);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_FLAME_GRAPH_H_
