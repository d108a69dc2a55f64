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

void Range(ByteSink& out, const AddressRange64& r) {
  out.U64(r.lo);
  out.U64(r.hi);
}

}  // namespace

std::string EncodeDump(const DumpContents& c) {
  ByteSink out;
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
    out.U32(static_cast<uint32_t>(s.unstopped.size()));
    for (const DumpUnstopped& u : s.unstopped) {
      out.I32(u.tid);
      out.String(u.why);
    }
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
    out.U32(static_cast<uint32_t>(c.modules.size()));
    for (const DumpModule& m : c.modules) {
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
    }
  });
  Section(out, kStacks, [&] {
    out.U32(static_cast<uint32_t>(c.stacks.size()));
    for (const DumpStack& s : c.stacks) {
      out.U32(s.id);
      out.U64(s.earliest);
      out.U32(static_cast<uint32_t>(s.frames.size()));
      for (const DumpFrame& f : s.frames) {
        out.U32(f.module);
        out.U64(f.offset);
      }
    }
  });
  Section(out, kBlocks, [&] {
    out.U64(c.blocks.size());
    for (const DumpBlock& b : c.blocks) {
      out.U64(b.address);
      out.U64(b.size);
      out.U64(b.sequence);
      out.U32(b.stack_id);
      out.I32(b.thread);
      out.U8(b.verdict);
    }
  });
  if (c.has_edges) {
    Section(out, kLeakEdges, [&] {
      out.U64(c.edges.size());
      for (const DumpEdge& e : c.edges) {
        out.U32(e.from);
        out.U32(e.to);
      }
    });
  }
  Section(out, kThreads, [&] {
    out.U32(static_cast<uint32_t>(c.threads.size()));
    for (const DumpThread& t : c.threads) {
      out.U32(t.serial);
      out.I32(t.tid);
      out.U64(t.peak_bytes);
      out.String(t.name);
    }
  });
  if (c.sample_bytes != 0) Section(out, kSampling, [&] { out.U64(c.sample_bytes); });
  Section(out, kEnd, [] {});
  out.PatchU64(total_at, out.size());
  return std::move(out.bytes());
}

}  // namespace stackwalk::leakcheck::dump
