#include "leakcheck/profile/flame_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stackwalk::profile {
namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b, bool* saturated) {
  if (a > std::numeric_limits<uint64_t>::max() - b) {
    *saturated = true;
    return std::numeric_limits<uint64_t>::max();
  }
  return a + b;
}

}  // namespace

FlameTree::FlameTree() {
  nodes_.push_back(FlameNode{Intern("all"), 0, 0, 0, {}});
}

uint32_t FlameTree::Intern(std::string_view name) {
  const auto found = name_index_.find(name);
  if (found != name_index_.end()) return found->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  name_index_.emplace(names_.back(), id);
  return id;
}

uint32_t FlameTree::Child(uint32_t parent, std::string_view name) {
  const uint32_t name_id = Intern(name);
  const uint64_t key = (static_cast<uint64_t>(parent) << 32) | name_id;
  const auto found = child_index_.find(key);
  if (found != child_index_.end()) return found->second;
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back(FlameNode{name_id, parent, nodes_[parent].depth + 1, 0, {}});
  nodes_[parent].children.push_back(id);
  child_index_.emplace(key, id);
  return id;
}

template <typename Frame>
void FlameTree::AddFrames(std::span<const Frame> frames, uint64_t value) {
  uint32_t node = 0;
  nodes_[0].total = SaturatingAdd(nodes_[0].total, value, &saturated_);
  for (const Frame& frame : frames) {
    node = Child(node, frame);
    nodes_[node].total = SaturatingAdd(nodes_[node].total, value, &saturated_);
  }
}

void FlameTree::Add(std::span<const std::string> frames, uint64_t value) {
  AddFrames(frames, value);
}

void FlameTree::Add(std::span<const std::string_view> frames, uint64_t value) {
  AddFrames(frames, value);
}

void FlameTree::Finish() {
  for (FlameNode& node : nodes_) {
    std::sort(node.children.begin(), node.children.end(), [&](uint32_t a, uint32_t b) {
      return names_[nodes_[a].name] < names_[nodes_[b].name];
    });
  }
  // The lookup tables are only for adding; a finished tree is read only.
  child_index_.clear();
}

FlameTree FlameTree::Build(const FlameInput& input) {
  FlameTree tree;
  for (const FlameStack& stack : input.stacks) tree.Add(stack.frames, stack.value);
  tree.Finish();
  return tree;
}

FlameLayout LayOut(const FlameTree& tree, const FlameLayoutOptions& options) {
  FlameLayout layout;
  const std::vector<FlameNode>& nodes = tree.nodes();
  const uint64_t total = tree.root().total;
  if (total == 0) return layout;

  // The narrowest frame drawn: min_frame_px of the width, in value units (at least 1)...
  const double fraction = options.width_px > 0 ? options.min_frame_px / options.width_px : 0;
  const double by_width = std::ceil(static_cast<double>(total) * fraction);
  uint64_t threshold = by_width >= 1 ? static_cast<uint64_t>(std::min(
                                           by_width, static_cast<double>(total)))
                                     : 1;
  // ... and of those at most max_frames, the widest first, then the outermost, then the first
  // made: a callee is never wider than its caller and always deeper, so it never comes before
  // it, and the frames kept form a tree under the root.
  std::vector<uint32_t> wide;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].total >= threshold) wide.push_back(i);
  }
  const size_t max_frames = std::max<size_t>(options.max_frames, 1);
  if (wide.size() > max_frames) {
    std::nth_element(wide.begin(), wide.begin() + static_cast<std::ptrdiff_t>(max_frames - 1),
                     wide.end(), [&](uint32_t a, uint32_t b) {
                       if (nodes[a].total != nodes[b].total) return nodes[a].total > nodes[b].total;
                       if (nodes[a].depth != nodes[b].depth) return nodes[a].depth < nodes[b].depth;
                       return a < b;
                     });
    wide.resize(max_frames);
  }
  std::vector<bool> drawn(nodes.size(), false);
  uint64_t narrowest = total;
  for (const uint32_t i : wide) {
    drawn[i] = true;
    narrowest = std::min(narrowest, nodes[i].total);
  }
  drawn[0] = true;
  layout.min_drawn_value = narrowest;

  // Depth first, children left to right, with an explicit stack (stacks may be thousands deep).
  struct Pending {
    uint32_t node;
    uint64_t offset;
  };
  std::vector<Pending> pending{{0, 0}};
  while (!pending.empty()) {
    const Pending at = pending.back();
    pending.pop_back();
    const FlameNode& node = nodes[at.node];
    layout.rects.push_back(FlameRect{at.node, at.offset});
    layout.max_depth = std::max(layout.max_depth, node.depth);
    uint64_t offset = at.offset;
    const size_t first = pending.size();
    for (const uint32_t child : node.children) {
      const uint64_t width = nodes[child].total;
      if (drawn[child]) {
        pending.push_back(Pending{child, offset});
      } else {
        layout.hidden_value += width;
        // The hidden frame and everything it calls.
        std::vector<uint32_t> below{child};
        while (!below.empty()) {
          const uint32_t hidden = below.back();
          below.pop_back();
          ++layout.hidden_frames;
          below.insert(below.end(), nodes[hidden].children.begin(),
                       nodes[hidden].children.end());
        }
      }
      offset += width;
    }
    std::reverse(pending.begin() + static_cast<std::ptrdiff_t>(first), pending.end());
  }
  return layout;
}

}  // namespace stackwalk::profile
