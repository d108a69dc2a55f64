#include "leakcheck/dump/dump_encode.h"

#include "leakcheck/dump/dump_bytes.h"

namespace stackwalk::leakcheck::dump {
namespace {

// Writes a section: its header, then what `payload` writes, then its length patched in.
template <class Fn>
void Section(ByteSink& out, SectionId id, Fn&& payload) {
  out.U32(id);
  out.U32(0);  // flags
  const size_t length_at = out.size();
  out.U64(0);
  const size_t start = out.size();
  payload();
  out.PatchU64(length_at, out.size() - start);
}

// A counted list: its count (u32, or u64 where the format says so), then each item as `item`
// writes it.
template <class T, class Fn>
void List(ByteSink& out, const std::vector<T>& items, Fn&& item) {
  out.U32(static_cast<uint32_t>(items.size()));
  for (const T& t : items) item(t);
}
template <class T, class Fn>
void List64(ByteSink& out, const std::vector<T>& items, Fn&& item) {
  out.U64(items.size());
  for (const T& t : items) item(t);
}

void Range(ByteSink& out, const AddressRange64& r) {
  out.U64(r.lo);
  out.U64(r.hi);
}

// The dump's size from its long lists (the fixed sizes below), and room for the rest: reserved
// at once, the bytes of clang's exit dump (20 MB) are not copied as the string doubles, which held
// the old and the new copy at once.
size_t ExpectedBytes(const DumpContents& c) {
  size_t n = 64 * 1024;
  for (const DumpStack& s : c.stacks) n += 16 + 12 * s.frames.size();
  n += 37 * c.blocks.size() + 8 * c.edges.size() + 68 * c.stack_stats.size() +
       64 * (c.threads.size() + c.thread_totals.size());
  for (const DumpTimelinePoint& p : c.timeline) n += 18 + 12 * p.threads.size();
  return n;
}

}  // namespace

std::string EncodeDump(const DumpContents& c) {
  ByteSink out;
  out.Reserve(ExpectedBytes(c));
  out.Bytes(kMagic, sizeof(kMagic));
  out.U16(kMajorVersion);
  out.U16(kMinorVersion);
  out.U32(kHeaderBytes);
  const size_t total_at = out.size();
  out.U64(0);

  Section(out, kProcess, [&] {
    const DumpProcess& p = c.process;
    out.I32(p.pid);
    out.U32(p.number);
    out.U8(p.at_exit ? 1 : 0);
    out.U8(p.scanned ? 1 : 0);
    out.U16(p.machine);
    out.U64(p.unix_time_ns);
    out.String(p.program);
    out.String(p.occasion);
    out.U8(p.snapshot ? 1 : 0);  // 1.3
  });
  Section(out, kSummary, [&] {
    const DumpSummary& s = c.summary;
    out.U64(s.peak_bytes);
    out.U64(s.live_allocations);
    out.U32(s.distinct_stacks);
    out.U64(s.table_bytes);
    out.U64(s.stack_bytes);
    out.String(s.method);
    out.String(s.fallback_reason);
    out.U64(s.stopped_threads);
    out.U64(s.pause_ns);
    out.U64(s.check_ns);
    List(out, s.unstopped, [&](const UnstoppedEntry& u) {
      out.I32(u.tid);
      out.String(u.why);
    });
    out.U64(s.untracked.refused);  // 1.4
    out.U64(s.untracked.no_memory);
    out.U64(s.untracked.bytes);
  });
  Section(out, kRendering, [&] {
    const DumpRendering& r = c.rendering;
    out.U8(r.json ? 1 : 0);
    out.U8(r.show_reachable ? 1 : 0);
    out.String(r.libraries);
    out.String(r.ignore_libraries);
    out.String(r.suppressions);
  });
  Section(out, kModules, [&] {
    List(out, c.modules, [&](const DumpModule& m) {
      out.String(m.path);
      const size_t id_bytes = m.build_id.size() < 0xFF ? m.build_id.size() : 0xFF;
      out.U8(static_cast<uint8_t>(id_bytes));
      out.Bytes(m.build_id.data(), id_bytes);
      out.U64(m.load_bias);
      Range(out, m.extent);
      out.U64(m.closed_at);
      const size_t ranges = m.exec.size() < 0xFF ? m.exec.size() : 0xFF;  // a u8 count
      out.U8(static_cast<uint8_t>(ranges));
      for (size_t i = 0; i < ranges; ++i) Range(out, m.exec[i]);
    });
  });
  Section(out, kStacks, [&] {
    List(out, c.stacks, [&](const DumpStack& s) {
      out.U32(s.id);
      out.U64(s.earliest);
      List(out, s.frames, [&](const DumpFrame& f) {
        out.U32(f.module);
        out.U64(f.offset);
      });
    });
  });
  Section(out, kBlocks, [&] {
    List64(out, c.blocks, [&](const DumpBlock& b) {
      out.U64(b.address);
      out.U64(b.size);
      out.U64(b.sequence);
      out.U32(b.stack_id);
      out.I32(b.thread);
      out.U8(b.verdict);
    });
  });
  if (c.has_edges) {
    Section(out, kLeakEdges, [&] {
      List64(out, c.edges, [&](const DumpEdge& e) {
        out.U32(e.from);
        out.U32(e.to);
      });
    });
  }
  Section(out, kThreads, [&] {
    List(out, c.threads, [&](const DumpThread& t) {
      out.U32(t.serial);
      out.I32(t.tid);
      out.U64(t.peak_bytes);
      out.String(t.name);
    });
  });
  if (c.sample_bytes != 0) Section(out, kSampling, [&] { out.U64(c.sample_bytes); });
  if (c.has_stack_stats) {
    Section(out, kStackStats, [&] {
      List(out, c.stack_stats, [&](const DumpStackStats& s) {
        out.U32(s.stack_id);
        for (uint64_t v : {s.allocations, s.allocated_bytes, s.live_bytes, s.live_blocks,
                           s.temporary, s.temporary_bytes, s.peak_bytes, s.peak_blocks}) {
          out.U64(v);
        }
      });
    });
  }
  if (c.has_thread_totals) {
    Section(out, kThreadTotals, [&] {
      List(out, c.thread_totals, [&](const DumpThreadTotal& t) {
        out.U32(t.serial);
        out.I32(t.tid);
        out.U8(t.exited ? 1 : 0);
        out.U64(t.live_bytes);
        out.U64(t.peak_bytes);
        out.String(t.name);
      });
    });
  }
  if (c.has_timeline) {
    Section(out, kTimeline, [&] {
      out.U64(c.timeline_interval_ns);
      List(out, c.timeline, [&](const DumpTimelinePoint& p) {
        out.U64(p.time_ns);
        out.U64(p.live_bytes);
        out.U8(p.at_peak ? 1 : 0);
        const size_t n = p.threads.size() < 0xFF ? p.threads.size() : 0xFF;  // a u8 count
        out.U8(static_cast<uint8_t>(n));
        for (size_t i = 0; i < n; ++i) {
          out.U32(p.threads[i].serial);
          out.U64(p.threads[i].live_bytes);
        }
      });
    });
  }
  Section(out, kEnd, [] {});
  out.PatchU64(total_at, out.size());
  return std::move(out.bytes());
}

}  // namespace stackwalk::leakcheck::dump
