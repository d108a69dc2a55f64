#include "leakcheck/dump/dump_decode.h"

#include <algorithm>
#include <cstring>

#include "leakcheck/dump/dump_bytes.h"
#include "leakcheck/sampler.h"

namespace stackwalk::leakcheck::dump {
namespace {

constexpr uint8_t kLastVerdict = 4;  // Verdict::kIgnored (scan/verdict.h)

const char* SectionName(uint32_t id) {
  switch (id) {
    case kEnd: return "end";
    case kProcess: return "process";
    case kSummary: return "summary";
    case kRendering: return "rendering";
    case kModules: return "modules";
    case kStacks: return "stacks";
    case kBlocks: return "blocks";
    case kLeakEdges: return "leak edges";
    case kThreads: return "threads";
    case kSampling: return "sampling";
    case kStackStats: return "stack statistics";
    case kThreadTotals: return "thread totals";
    case kTimeline: return "timeline";
    default: return "unknown";
  }
}

AddressRange64 Range(ByteSource& in) {
  AddressRange64 r;
  r.lo = in.U64();
  r.hi = in.U64();
  return r;
}

// Each section's payload into `c`. Items are appended only when read whole: a cut section gives
// the items before the cut.
void ReadProcess(ByteSource& in, DumpContents& c) {
  DumpProcess& p = c.process;
  p.pid = in.I32();
  p.number = in.U32();
  p.at_exit = in.U8() != 0;
  p.scanned = in.U8() != 0;
  p.machine = in.U16();
  p.unix_time_ns = in.U64();
  p.program = in.String();
  p.occasion = in.String();
  // 1.3 appended the snapshot flag; an older dump's section ends before it.
  if (!in.failed() && in.remaining() > 0) p.snapshot = in.U8() != 0;
}

void ReadSummary(ByteSource& in, DumpContents& c) {
  DumpSummary& s = c.summary;
  s.peak_bytes = in.U64();
  s.live_allocations = in.U64();
  s.distinct_stacks = in.U32();
  s.table_bytes = in.U64();
  s.stack_bytes = in.U64();
  s.method = in.String();
  s.fallback_reason = in.String();
  s.stopped_threads = in.U64();
  s.pause_ns = in.U64();
  s.check_ns = in.U64();
  const uint32_t n = in.U32();
  if (!in.CanHold(n, 8)) return;
  for (uint32_t i = 0; i < n; ++i) {
    UnstoppedEntry u;
    u.tid = in.I32();
    u.why = in.String();
    if (in.failed()) return;
    s.unstopped.push_back(std::move(u));
  }
  // 1.4 appended the untracked allocations; an older dump's section ends before them (none).
  if (in.remaining() > 0) {
    s.untracked.refused = in.U64();
    s.untracked.no_memory = in.U64();
    s.untracked.bytes = in.U64();
  }
}

void ReadRendering(ByteSource& in, DumpContents& c) {
  DumpRendering& r = c.rendering;
  r.json = in.U8() != 0;
  r.show_reachable = in.U8() != 0;
  r.libraries = in.String();
  r.ignore_libraries = in.String();
  r.suppressions = in.String();
}

void ReadModules(ByteSource& in, DumpContents& c) {
  const uint32_t n = in.U32();
  if (!in.CanHold(n, 4 + 1 + 8 + 16 + 8 + 1)) return;
  for (uint32_t i = 0; i < n; ++i) {
    DumpModule m;
    m.path = in.String();
    m.build_id.resize(in.U8());
    if (!in.Bytes(m.build_id.data(), m.build_id.size())) return;
    m.load_bias = in.U64();
    m.extent = Range(in);
    m.closed_at = in.U64();
    const uint8_t ranges = in.U8();
    for (uint8_t r = 0; r < ranges && !in.failed(); ++r) m.exec.push_back(Range(in));
    if (in.failed()) return;
    c.modules.push_back(std::move(m));
  }
}

// `live_only`: a stack of no live block is read past (DecodeScope::kLeakReport).
void ReadStacks(ByteSource& in, DumpContents& c, bool live_only) {
  const uint32_t n = in.U32();
  if (!in.CanHold(n, 4 + 8 + 4)) return;
  if (!live_only) c.stacks.reserve(c.stacks.size() + n);  // bounded by the bytes left (CanHold)
  for (uint32_t i = 0; i < n; ++i) {
    DumpStack s;
    s.id = in.U32();
    s.earliest = in.U64();
    const uint32_t frames = in.U32();
    if (!in.CanHold(frames, 12)) return;
    if (live_only && s.earliest == UINT64_MAX) {
      if (!in.Skip(uint64_t{frames} * 12)) return;
      continue;
    }
    s.frames.resize(frames);
    for (DumpFrame& f : s.frames) {
      f.module = in.U32();
      f.offset = in.U64();
    }
    if (in.failed()) return;
    c.stacks.push_back(std::move(s));
  }
}

constexpr uint64_t kBlockBytes = 8 + 8 + 8 + 4 + 4 + 1;

void ReadBlocks(ByteSource& in, DumpContents& c) {
  const uint64_t n = in.U64();
  // A cut section keeps the blocks before the cut: reserve only what the bytes can hold.
  const uint64_t room = in.remaining() / kBlockBytes;
  c.blocks.reserve(n < room ? n : room);
  for (uint64_t i = 0; i < n; ++i) {
    DumpBlock b;
    b.address = in.U64();
    b.size = in.U64();
    b.sequence = in.U64();
    b.stack_id = in.U32();
    b.thread = in.I32();
    b.verdict = in.U8();
    if (in.failed()) return;
    c.blocks.push_back(b);
  }
}

void ReadEdges(ByteSource& in, DumpContents& c) {
  const uint64_t n = in.U64();
  if (!in.CanHold(n, 8)) return;
  c.edges.resize(n);
  for (DumpEdge& e : c.edges) {
    e.from = in.U32();
    e.to = in.U32();
  }
  c.has_edges = true;
}

void ReadThreads(ByteSource& in, DumpContents& c) {
  const uint32_t n = in.U32();
  if (!in.CanHold(n, 4 + 4 + 8 + 4)) return;
  for (uint32_t i = 0; i < n; ++i) {
    DumpThread t;
    t.serial = in.U32();
    t.tid = in.I32();
    t.peak_bytes = in.U64();
    t.name = in.String();
    if (in.failed()) return;
    c.threads.push_back(std::move(t));
  }
}

void ReadStackStats(ByteSource& in, DumpContents& c) {
  const uint32_t n = in.U32();
  c.has_stack_stats = true;
  if (!in.CanHold(n, 4 + 8 * 8)) return;
  c.stack_stats.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    DumpStackStats s;
    s.stack_id = in.U32();
    for (uint64_t* v : {&s.allocations, &s.allocated_bytes, &s.live_bytes, &s.live_blocks,
                        &s.temporary, &s.temporary_bytes, &s.peak_bytes, &s.peak_blocks}) {
      *v = in.U64();
    }
    if (in.failed()) return;
    c.stack_stats.push_back(s);
  }
}

void ReadThreadTotals(ByteSource& in, DumpContents& c) {
  const uint32_t n = in.U32();
  c.has_thread_totals = true;
  if (!in.CanHold(n, 4 + 4 + 1 + 8 + 8 + 4)) return;
  for (uint32_t i = 0; i < n; ++i) {
    DumpThreadTotal t;
    t.serial = in.U32();
    t.tid = in.I32();
    t.exited = in.U8() != 0;
    t.live_bytes = in.U64();
    t.peak_bytes = in.U64();
    t.name = in.String();
    if (in.failed()) return;
    c.thread_totals.push_back(std::move(t));
  }
}

void ReadTimeline(ByteSource& in, DumpContents& c) {
  c.has_timeline = true;
  c.timeline_interval_ns = in.U64();
  const uint32_t n = in.U32();
  if (!in.CanHold(n, 8 + 8 + 1 + 1)) return;
  for (uint32_t i = 0; i < n; ++i) {
    DumpTimelinePoint p;
    p.time_ns = in.U64();
    p.live_bytes = in.U64();
    p.at_peak = in.U8() != 0;
    const uint8_t threads = in.U8();
    for (uint8_t t = 0; t < threads && !in.failed(); ++t) {
      DumpThreadBytes b;
      b.serial = in.U32();
      b.live_bytes = in.U64();
      p.threads.push_back(b);
    }
    if (in.failed()) return;
    c.timeline.push_back(std::move(p));
  }
}

// What refers to something else must refer to something there: a bad item is dropped (or, for
// a frame, made a frame in no known object), and the first one found is the error.
std::string CheckReferences(DumpContents& c) {
  std::string error;
  for (DumpStack& s : c.stacks) {
    for (DumpFrame& f : s.frames) {
      if (f.module != kUnknownModule && f.module >= c.modules.size()) {
        if (error.empty()) {
          error = "stack " + std::to_string(s.id) + " names module " + std::to_string(f.module) +
                  " of " + std::to_string(c.modules.size());
        }
        f.module = kUnknownModule;
      }
    }
  }
  size_t kept = 0;
  for (const DumpBlock& b : c.blocks) {
    if (b.verdict > kLastVerdict) {
      if (error.empty()) error = "a block has verdict " + std::to_string(b.verdict);
      continue;
    }
    c.blocks[kept++] = b;
  }
  const bool dropped_blocks = kept != c.blocks.size();
  c.blocks.resize(kept);
  if (dropped_blocks) {
    c.edges.clear();  // their indices no longer hold
    c.has_edges = false;
  }
  kept = 0;
  for (const DumpEdge& e : c.edges) {
    if (e.from >= c.blocks.size() || e.to >= c.blocks.size()) {
      if (error.empty()) error = "a leak edge names block " + std::to_string(e.from) + " or " +
                                 std::to_string(e.to) + " of " + std::to_string(c.blocks.size());
      continue;
    }
    c.edges[kept++] = e;
  }
  c.edges.resize(kept);
  std::vector<uint32_t> ids;
  for (const DumpStack& s : c.stacks) ids.push_back(s.id);
  std::sort(ids.begin(), ids.end());
  kept = 0;
  for (const DumpStackStats& s : c.stack_stats) {
    if (!std::binary_search(ids.begin(), ids.end(), s.stack_id)) {
      if (error.empty()) error = "stack statistics name stack " + std::to_string(s.stack_id) + ", which is not in the dump";
      continue;
    }
    c.stack_stats[kept++] = s;
  }
  c.stack_stats.resize(kept);
  return error;
}

// The sections of one dump at data[at, size) into out->dumps.back(), once its header is read.
// Returns the offset of the next dump, or 0 after an error (out->error set).
uint64_t DecodeSections(const uint8_t* data, size_t size, uint64_t at, uint32_t header_bytes,
                        uint64_t dump_bytes, DecodeScope scope, DecodedDumps* out);

// One dump at data[at, size): appended to out->dumps once its header is read, its references
// checked whatever else went wrong (the stages index by them). Returns the offset of the next
// dump, or 0 after an error (out->error set).
uint64_t DecodeOne(const uint8_t* data, size_t size, uint64_t at, DecodeScope scope,
                   DecodedDumps* out) {
  const uint64_t left = size - at;
  const std::string where = "the dump at byte " + std::to_string(at);
  if (left < sizeof(kMagic) || std::memcmp(data + at, kMagic, sizeof(kMagic)) != 0) {
    out->error = at == 0 ? "not a leak dump (it does not start with SWLKDUMP)"
                         : "not a leak dump at byte " + std::to_string(at) +
                               " (after the dump before it ended)";
    return 0;
  }
  if (left < kHeaderBytes) {
    out->error = "truncated at byte " + std::to_string(size) + " (in the header of " + where + ")";
    return 0;
  }
  ByteSource header(data + at + 8, kHeaderBytes - 8, at + 8);
  const uint16_t major = header.U16();
  const uint16_t minor = header.U16();
  const uint32_t header_bytes = header.U32();
  const uint64_t dump_bytes = header.U64();
  if (major > kMajorVersion || major == 0) {
    out->error = where + " has version " + std::to_string(major) + "." + std::to_string(minor) +
                 (major == 0 ? ", which no writer makes"
                             : ", newer than this reader's " + std::to_string(kMajorVersion) +
                                   "." + std::to_string(kMinorVersion));
    return 0;
  }
  if (header_bytes < kHeaderBytes || dump_bytes < uint64_t{header_bytes} + kSectionHeaderBytes) {
    out->error = where + " has a corrupt header (header " + std::to_string(header_bytes) +
                 " bytes, dump " + std::to_string(dump_bytes) + " bytes)";
    return 0;
  }
  out->dumps.emplace_back();
  DumpContents& c = out->dumps.back();
  c.major = major;
  c.minor = minor;
  uint64_t next = DecodeSections(data, size, at, header_bytes, dump_bytes, scope, out);
  if (const std::string bad = CheckReferences(c); !bad.empty() && out->error.empty()) {
    out->error = where + ": " + bad;
    next = 0;
  }
  return next;
}

uint64_t DecodeSections(const uint8_t* data, size_t size, uint64_t at, uint32_t header_bytes,
                        uint64_t dump_bytes, DecodeScope scope, DecodedDumps* out) {
  const bool leak_report = scope == DecodeScope::kLeakReport;
  DumpContents& c = out->dumps.back();
  const uint64_t left = size - at;
  const std::string where = "the dump at byte " + std::to_string(at);
  const bool truncated = dump_bytes > left;
  const uint64_t end = truncated ? size : at + dump_bytes;
  auto fail = [&](const std::string& why) {
    if (out->error.empty()) out->error = why;
    return uint64_t{0};
  };
  auto cut = [&]() {
    return fail("truncated at byte " + std::to_string(size) + " (" + where + " says it has " +
                std::to_string(dump_bytes) + " bytes)");
  };
  if (header_bytes > left) return cut();
  uint32_t seen = 0;  // the known sections read, as bits
  for (uint64_t pos = at + header_bytes;;) {
    if (pos > end || end - pos < kSectionHeaderBytes) {  // a header longer than a cut dump
      return truncated ? cut() : fail(where + " ends at byte " + std::to_string(end) +
                                      " without its end section");
    }
    ByteSource section_header(data + pos, kSectionHeaderBytes, pos);
    const uint32_t id = section_header.U32();
    section_header.U32();  // flags: none defined yet
    const uint64_t length = section_header.U64();
    const uint64_t payload = pos + kSectionHeaderBytes;
    const bool past_end = length > end - payload;
    if (past_end && !truncated) {
      return fail("section " + std::to_string(id) + " (" + SectionName(id) + ") at byte " +
                  std::to_string(pos) + " runs past " + where + "'s end (its " +
                  std::to_string(length) + " bytes from byte " + std::to_string(payload) +
                  "; the dump ends at byte " + std::to_string(end) + ")");
    }
    if (id == kEnd) {
      if (seen == 0) return fail(where + " has no sections");
      if ((seen & (1u << kProcess)) == 0 || (seen & (1u << kBlocks)) == 0 ||
          (seen & (1u << kStacks)) == 0 || (seen & (1u << kModules)) == 0) {
        return fail(where + " lacks a process, modules, stacks or blocks section");
      }
      // A dump that says it is longer than the file is cut, even with its end section read: and
      // its length, unchecked, could lead the next dump back to an earlier one.
      if (truncated) return cut();
      return at + dump_bytes;
    }
    // A cut section is read as far as it goes (the best partial report).
    ByteSource in(data + payload, past_end ? end - payload : length, payload);
    if (id <= kLastSection) {
      if (seen & (1u << id)) {
        return fail("section " + std::string(SectionName(id)) + " appears twice in " + where);
      }
      seen |= 1u << id;
    }
    switch (id) {
      case kProcess: ReadProcess(in, c); break;
      case kSummary: ReadSummary(in, c); break;
      case kRendering: ReadRendering(in, c); break;
      case kModules: ReadModules(in, c); break;
      case kStacks: ReadStacks(in, c, leak_report); break;
      case kBlocks: ReadBlocks(in, c); break;
      case kLeakEdges: ReadEdges(in, c); break;
      case kThreads: ReadThreads(in, c); break;
      case kSampling: {
        // Kept only if valid: the partial dump returned with the error must still re-encode.
        const uint64_t mean = in.U64();
        if (mean > kMaxSampleBytes) {  // its estimates would not fit in 64 bits
          return fail("section " + std::to_string(id) + " (sampling) at byte " +
                      std::to_string(pos) + " of " + where + " gives a sampling mean of " +
                      std::to_string(mean) + " bytes, more than the largest, " +
                      std::to_string(kMaxSampleBytes));
        }
        c.sample_bytes = mean;
        break;
      }
      case kStackStats:
        if (!leak_report) ReadStackStats(in, c);
        break;
      case kThreadTotals: ReadThreadTotals(in, c); break;
      case kTimeline: ReadTimeline(in, c); break;
      default: break;  // a later writer's section: skipped
    }
    if (past_end) return cut();
    if (in.failed()) {
      return fail("section " + std::string(SectionName(id)) + " at byte " + std::to_string(pos) +
                  " of " + where + " is corrupt: its fields run past its end (byte " +
                  std::to_string(payload + length) + ")");
    }
    pos = payload + length;
  }
}

}  // namespace

DecodedDumps DecodeDumps(const uint8_t* data, size_t size, DecodeScope scope) {
  DecodedDumps out;
  if (size == 0) {
    out.error = "empty file: not a leak dump";
    return out;
  }
  for (uint64_t at = 0; at < size;) {
    const uint64_t next = DecodeOne(data, size, at, scope, &out);
    if (next == 0) break;
    if (next <= at) {  // cannot happen for a dump read whole; never loop on one that could
      if (out.error.empty()) out.error = "the dump at byte " + std::to_string(at) + " has a corrupt length";
      break;
    }
    at = next;
  }
  return out;
}

}  // namespace stackwalk::leakcheck::dump
