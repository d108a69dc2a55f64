#include "leakcheck/dump/dump_diff.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "format/json_string.h"
#include "leakcheck/dump/profile_render.h"
#include "leakcheck/dump/profile_view.h"

namespace stackwalk::leakcheck::dump {
namespace {

using internal::JsonString;

// A stack's identity across dumps: each frame's module (build-id, else path) and link-time
// offset, or the PC of a frame in no known object.
std::string StackKey(const DumpContents& dump, const DumpStack& stack) {
  std::string key;
  char offset[24];
  for (const DumpFrame& f : stack.frames) {
    if (f.module < dump.modules.size()) {
      const DumpModule& m = dump.modules[f.module];
      key += m.build_id.empty() ? "path:" + m.path : "id:" + HexBuildId(m.build_id);
    } else {
      key += "pc";
    }
    std::snprintf(offset, sizeof(offset), "+%" PRIx64 "\n", f.offset);
    key += offset;
  }
  return key;
}

struct Side {
  uint64_t bytes = 0, blocks = 0, allocations = 0, allocated_bytes = 0;
};
struct Matched {
  Side a, b;
  std::vector<std::string> frames;
};

// Adds each stack's statistics of `dump` to its key's side (several ids may share frames).
void Gather(const DumpContents& dump, DumpNamer* namer, bool is_b,
            std::map<std::string, Matched>* out) {
  std::map<uint32_t, const DumpStack*> stacks;
  for (const DumpStack& s : dump.stacks) stacks.emplace(s.id, &s);
  for (const DumpStackStats& st : dump.stack_stats) {
    const auto found = stacks.find(st.stack_id);
    if (found == stacks.end()) continue;  // the reader named it dropped
    Matched& m = (*out)[StackKey(dump, *found->second)];
    Side& side = is_b ? m.b : m.a;
    side.bytes += st.live_bytes;
    side.blocks += st.live_blocks;
    side.allocations += st.allocations;
    side.allocated_bytes += st.allocated_bytes;
    // Named once, from B where it is there (the later objects), else from A.
    if (m.frames.empty() || is_b) {
      m.frames.clear();
      for (const SymbolizedFrame& f : namer->Name(*found->second)) {
        m.frames.push_back(ProfileFrameName(f));
      }
    }
  }
}

std::string Signed(int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); }

std::string SideText(const DiffSide& s) {
  return s.occasion + " (dump " + std::to_string(s.index) + " of " + std::to_string(s.count) +
         " in " + s.file + ", pid " + std::to_string(s.pid) + ")";
}

std::string SideJson(const DiffSide& s) {
  return "{\"file\":" + JsonString(s.file) + ",\"dump\":" + std::to_string(s.index) +
         ",\"dumps\":" + std::to_string(s.count) + ",\"occasion\":" + JsonString(s.occasion) +
         ",\"pid\":" + std::to_string(s.pid) + ",\"program\":" + JsonString(s.program) + "}";
}

size_t Shown(size_t n, size_t top) { return top == 0 || top > n ? n : top; }

}  // namespace

bool DiffDumps(const DumpContents& a, DiffSide from, DumpNamer* name_a, const DumpContents& b,
               DiffSide to, DumpNamer* name_b, DumpDiff* out, std::string* error) {
  for (const auto& [dump, side] : {std::pair{&a, &from}, std::pair{&b, &to}}) {
    side->occasion = dump->process.occasion;
    side->pid = dump->process.pid;
    side->program = dump->process.program;
    if (!dump->has_stack_stats) {
      *error = side->file + ": dump " + std::to_string(side->index) + " (" + side->occasion +
               ") has no stack statistics (written before dump format 1.2): no growth to compare";
      return false;
    }
  }
  out->from = from;
  out->to = to;
  out->same_process = a.process.pid == b.process.pid && a.process.program == b.process.program &&
                      a.process.unix_time_ns <= b.process.unix_time_ns;
  out->sample_bytes = std::max(a.sample_bytes, b.sample_bytes);
  out->from_untracked = a.summary.untracked;
  out->to_untracked = b.summary.untracked;
  std::map<std::string, Matched> matched;
  Gather(a, name_a, false, &matched);
  Gather(b, name_b, true, &matched);
  for (auto& [key, m] : matched) {
    DiffStack s;
    s.frames = std::move(m.frames);
    s.from_bytes = m.a.bytes;
    s.from_blocks = m.a.blocks;
    s.to_bytes = m.b.bytes;
    s.to_blocks = m.b.blocks;
    s.growth_bytes = static_cast<int64_t>(m.b.bytes - m.a.bytes);
    s.growth_blocks = static_cast<int64_t>(m.b.blocks - m.a.blocks);
    s.allocations_between = m.b.allocations > m.a.allocations ? m.b.allocations - m.a.allocations : 0;
    s.allocated_bytes_between =
        m.b.allocated_bytes > m.a.allocated_bytes ? m.b.allocated_bytes - m.a.allocated_bytes : 0;
    out->growth_bytes += s.growth_bytes;
    out->growth_blocks += s.growth_blocks;
    if (s.growth_bytes > 0) out->positive_growth_bytes += static_cast<uint64_t>(s.growth_bytes);
    out->allocations_between += s.allocations_between;
    out->stacks.push_back(std::move(s));
  }
  std::sort(out->stacks.begin(), out->stacks.end(), [](const DiffStack& x, const DiffStack& y) {
    if (x.growth_bytes != y.growth_bytes) return x.growth_bytes > y.growth_bytes;
    if (x.growth_blocks != y.growth_blocks) return x.growth_blocks > y.growth_blocks;
    return x.frames < y.frames;
  });
  std::vector<std::string> missing = name_a->missing();
  for (const std::string& m : name_b->missing()) {
    if (std::find(missing.begin(), missing.end(), m) == missing.end()) missing.push_back(m);
  }
  if (!missing.empty()) {
    out->naming_error = "no file for " + std::to_string(missing.size()) + " object(s): ";
    for (size_t i = 0; i < missing.size(); ++i) out->naming_error += (i ? "; " : "") + missing[i];
  }
  return true;
}

std::string RenderDiffText(const DumpDiff& diff, size_t top) {
  std::string out;
  if (!diff.naming_error.empty()) out += "*** frames are not named: " + diff.naming_error + "\n";
  if (diff.sample_bytes != 0) {
    out += "*** sampled (mean " + std::to_string(diff.sample_bytes) +
           " bytes): bytes are estimates; blocks and allocations are counts of recorded blocks\n";
  }
  if (!diff.same_process) {
    out += "*** not two dumps of one run: allocations between are B's run total minus A's\n";
  }
  if (diff.from_untracked.allocations() > 0 || diff.to_untracked.allocations() > 0) {
    out += "*** allocations that could not be tracked, in no figure of this diff: " +
           std::to_string(diff.from_untracked.allocations()) + " (" +
           std::to_string(diff.from_untracked.bytes) + " bytes) by A, " +
           std::to_string(diff.to_untracked.allocations()) + " (" +
           std::to_string(diff.to_untracked.bytes) + " bytes) by B\n";
  }
  out += "growth from " + SideText(diff.from) + "\n         to " + SideText(diff.to) + ": " +
         Signed(diff.growth_bytes) + " byte(s) in " + Signed(diff.growth_blocks) +
         " block(s) over " + std::to_string(diff.stacks.size()) + " stack(s); " +
         std::to_string(diff.allocations_between) + " allocation(s) made between\n";
  // Only the stacks that changed: a stack that held as much at B as at A is no suspect, and
  // listing it would put zero lines above the shrinking ones.
  std::vector<const DiffStack*> changed;
  for (const DiffStack& s : diff.stacks) {
    if (s.growth_bytes != 0 || s.growth_blocks != 0) changed.push_back(&s);
  }
  const size_t unchanged = diff.stacks.size() - changed.size();
  if (changed.empty()) out += "\nno stack changed its live bytes or blocks\n";
  const size_t shown = Shown(changed.size(), top);
  for (size_t i = 0; i < shown; ++i) {
    const DiffStack& s = *changed[i];
    out += "\n#" + std::to_string(i + 1) + " " + Signed(s.growth_bytes) + " byte(s) " +
           Signed(s.growth_blocks) + " block(s)  (live " + std::to_string(s.from_bytes) + " -> " +
           std::to_string(s.to_bytes) + " bytes, " + std::to_string(s.from_blocks) + " -> " +
           std::to_string(s.to_blocks) + " blocks; " + std::to_string(s.allocations_between) +
           " allocation(s) between)\n";
    for (size_t f = 0; f < s.frames.size(); ++f) {
      out += "    #" + std::to_string(f) + " " + s.frames[f] + "\n";
    }
  }
  if (shown < changed.size()) {
    out += "\n... " + std::to_string(changed.size() - shown) + " more stack(s) changed (--top)\n";
  }
  if (unchanged != 0) {
    out += "\n" + std::to_string(unchanged) + " stack(s) unchanged, not listed (--format json lists them)\n";
  }
  return out;
}

std::string RenderDiffJson(const DumpDiff& diff, size_t top) {
  std::string out = "{\"from\":" + SideJson(diff.from) + ",\"to\":" + SideJson(diff.to) +
                    ",\"same_process\":" + (diff.same_process ? "true" : "false") +
                    ",\"growth_bytes\":" + std::to_string(diff.growth_bytes) +
                    ",\"growth_blocks\":" + std::to_string(diff.growth_blocks) +
                    ",\"positive_growth_bytes\":" + std::to_string(diff.positive_growth_bytes) +
                    ",\"allocations_between\":" + std::to_string(diff.allocations_between);
  if (!diff.naming_error.empty()) out += ",\"naming_error\":" + JsonString(diff.naming_error);
  if (diff.sample_bytes != 0) out += ",\"sample_bytes\":" + std::to_string(diff.sample_bytes);
  if (diff.from_untracked.allocations() > 0 || diff.to_untracked.allocations() > 0) {
    auto side = [](const UntrackedCounts& u) {
      return "{\"allocations\":" + std::to_string(u.allocations()) +
             ",\"bytes\":" + std::to_string(u.bytes) + "}";
    };
    out += ",\"untracked\":{\"from\":" + side(diff.from_untracked) +
           ",\"to\":" + side(diff.to_untracked) + "}";
  }
  out += ",\"stacks\":[";
  for (size_t i = 0; i < Shown(diff.stacks.size(), top); ++i) {
    const DiffStack& s = diff.stacks[i];
    out += std::string(i ? "," : "") + "{\"frames\":[";
    for (size_t f = 0; f < s.frames.size(); ++f) out += (f ? "," : "") + JsonString(s.frames[f]);
    out += "],\"from_bytes\":" + std::to_string(s.from_bytes) +
           ",\"from_blocks\":" + std::to_string(s.from_blocks) +
           ",\"to_bytes\":" + std::to_string(s.to_bytes) +
           ",\"to_blocks\":" + std::to_string(s.to_blocks) +
           ",\"growth_bytes\":" + std::to_string(s.growth_bytes) +
           ",\"growth_blocks\":" + std::to_string(s.growth_blocks) +
           ",\"allocations_between\":" + std::to_string(s.allocations_between) +
           ",\"allocated_bytes_between\":" + std::to_string(s.allocated_bytes_between) + "}";
  }
  return out + "]}\n";
}

std::string RenderDiffFolded(const DumpDiff& diff) {
  // The stacks that grew, as a view of their growth in bytes: the views' folded form.
  ProfileView growth;
  growth.kind = ViewKind::kLive;
  for (const DiffStack& s : diff.stacks) {
    if (s.growth_bytes <= 0) continue;
    growth.stacks.push_back(
        {s.frames, static_cast<uint64_t>(s.growth_bytes),
         s.growth_blocks > 0 ? static_cast<uint64_t>(s.growth_blocks) : 0});
  }
  return RenderViewFolded(growth);
}

}  // namespace stackwalk::leakcheck::dump
