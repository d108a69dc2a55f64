#include "leakcheck/dump/dump_encode.h"

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "leakcheck/dump/dump_bytes.h"

namespace stackwalk::leakcheck::dump {
namespace {

// Counts what would be written: the first of the encoder's two passes.
class CountingSink {
 public:
  void U8(uint8_t) { size_ += 1; }
  void U16(uint16_t) { size_ += 2; }
  void U32(uint32_t) { size_ += 4; }
  void U64(uint64_t) { size_ += 8; }
  void I32(int32_t) { size_ += 4; }
  void Bytes(const void*, size_t n) { size_ += n; }
  void String(const std::string& s) { size_ += 4 + s.size(); }
  void Skip(size_t n) { size_ += n; }  // what is counted without being made (a stack's frames)
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// Bytes in a bounded buffer, handed to `flush` as it fills: a dump written without ever being
// whole in memory (clang's exit dump is ~20 MB). An integer that fits is stored by one copy of
// its bytes (little-endian, as the format is, where the machine is): clang's 1.3 million frames
// at exit each wrote two by a string append and a byte loop.
class ChunkSink {
 public:
  explicit ChunkSink(const std::function<void(const char*, size_t)>& flush)
      : flush_(flush), buffer_(new char[kChunk]) {}
  void U8(uint8_t v) { Fixed<1>(v); }
  void U16(uint16_t v) { Fixed<2>(v); }
  void U32(uint32_t v) { Fixed<4>(v); }
  void U64(uint64_t v) { Fixed<8>(v); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void Bytes(const void* data, size_t n) { Put(data, n); }
  void String(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Put(s.data(), s.size());
  }
  size_t size() const { return flushed_ + used_; }
  // Room for `n` bytes that the caller writes itself, then hands over by Commit(n); null if the
  // buffer has less left (the caller writes through the others then). A stack's frames go in
  // so: stores through a char pointer made the compiler reload the buffer's state after each.
  char* Room(size_t n) { return kChunk - used_ >= n ? buffer_.get() + used_ : nullptr; }
  void Commit(size_t n) { used_ += n; }
  void Flush() {
    if (used_ != 0) flush_(buffer_.get(), used_);
    flushed_ += used_;
    used_ = 0;
  }

 private:
  static constexpr size_t kChunk = kDumpPieceBytes;
  template <size_t kBytes>
  void Fixed(uint64_t v) {
    unsigned char bytes[8];
    if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
      std::memcpy(bytes, &v, 8);
    } else {
      for (size_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));
    }
    if (kChunk - used_ >= kBytes) {
      std::memcpy(buffer_.get() + used_, bytes, kBytes);
      used_ += kBytes;
    } else {
      Put(bytes, kBytes);
    }
  }
  void Put(const void* data, size_t n) {
    const char* from = static_cast<const char*>(data);
    while (n > 0) {
      if (used_ == kChunk) Flush();
      const size_t take = n < kChunk - used_ ? n : kChunk - used_;
      std::memcpy(buffer_.get() + used_, from, take);
      used_ += take;
      from += take;
      n -= take;
    }
  }
  const std::function<void(const char*, size_t)>& flush_;
  std::unique_ptr<char[]> buffer_;
  size_t used_ = 0;
  size_t flushed_ = 0;
};

// The lengths a dump's header and sections declare ahead of their bytes, measured by a first
// pass over the same contents (CountingSink), so that the second writes straight through: a
// pipe cannot be gone back into to patch a length.
struct Lengths {
  uint64_t total = 0;
  std::vector<uint64_t> sections;
  size_t next = 0;  // the section the writing pass is at
};

// Writes a section: its header, then what `payload` writes. The counting pass measures its
// length; the writing pass declares the measured one.
template <class Sink, class Fn>
void Section(Sink& out, Lengths& lengths, bool counting, SectionId id, Fn&& payload) {
  out.U32(id);
  out.U32(0);  // flags
  out.U64(counting ? 0 : lengths.sections[lengths.next++]);
  const size_t start = out.size();
  payload();
  if (counting) lengths.sections.push_back(out.size() - start);
}

// A counted list: its count (u32, or u64 where the format says so), then each item as `item`
// writes it.
template <class Sink, class T, class Fn>
void List(Sink& out, const std::vector<T>& items, Fn&& item) {
  out.U32(static_cast<uint32_t>(items.size()));
  for (const T& t : items) item(t);
}
template <class Sink, class T, class Fn>
void List64(Sink& out, const std::vector<T>& items, Fn&& item) {
  out.U64(items.size());
  for (const T& t : items) item(t);
}

template <class Sink>
void Range(Sink& out, const AddressRange64& r) {
  out.U64(r.lo);
  out.U64(r.hi);
}

// Module index and offset.
constexpr size_t kFrameBytes = 4 + 8;
// A stack's statistics: its id and eight figures.
constexpr size_t kStackStatsBytes = 4 + 8 * 8;

// The stacks section's payload. The counting pass takes each stack's frame count from its head
// and leaves its frames unmade (the program's are resolved from the stack table as written).
template <class Sink>
void Stacks(Sink& out, DumpStackSource& stacks) {
  out.U32(static_cast<uint32_t>(stacks.size()));
  std::vector<DumpFrame> scratch;
  for (size_t i = 0; i < stacks.size(); ++i) {
    const DumpStackSource::Head head = stacks.HeadOf(i);
    out.U32(head.id);
    out.U64(head.earliest);
    out.U32(head.frames);
    if constexpr (std::is_same_v<Sink, CountingSink>) {
      out.Skip(kFrameBytes * head.frames);
    } else {
      const DumpFrame* frames = stacks.Frames(i, &scratch);
      if constexpr (std::is_same_v<Sink, ChunkSink> &&
                    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {  // the format's byte order
        const size_t bytes = kFrameBytes * head.frames;
        if (char* to = out.Room(bytes)) {
          for (uint32_t f = 0; f < head.frames; ++f, to += kFrameBytes) {
            std::memcpy(to, &frames[f].module, 4);
            std::memcpy(to + 4, &frames[f].offset, 8);
          }
          out.Commit(bytes);
          continue;
        }
      }
      for (uint32_t f = 0; f < head.frames; ++f) {
        out.U32(frames[f].module);
        out.U64(frames[f].offset);
      }
    }
  }
}

// The whole dump into `out`, in one of the two passes.
template <class Sink>
void Encode(const DumpContents& c, DumpStackSource& stacks, const DumpStatsSource& stats,
            Sink& out, Lengths& lengths, bool counting) {
  out.Bytes(kMagic, sizeof(kMagic));
  out.U16(kMajorVersion);
  out.U16(kMinorVersion);
  out.U32(kHeaderBytes);
  out.U64(counting ? 0 : lengths.total);

  Section(out, lengths, counting, kProcess, [&] {
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
  Section(out, lengths, counting, kSummary, [&] {
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
  Section(out, lengths, counting, kRendering, [&] {
    const DumpRendering& r = c.rendering;
    out.U8(r.json ? 1 : 0);
    out.U8(r.show_reachable ? 1 : 0);
    out.String(r.libraries);
    out.String(r.ignore_libraries);
    out.String(r.suppressions);
  });
  Section(out, lengths, counting, kModules, [&] {
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
  Section(out, lengths, counting, kStacks, [&] { Stacks(out, stacks); });
  Section(out, lengths, counting, kBlocks, [&] {
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
    Section(out, lengths, counting, kLeakEdges, [&] {
      List64(out, c.edges, [&](const DumpEdge& e) {
        out.U32(e.from);
        out.U32(e.to);
      });
    });
  }
  Section(out, lengths, counting, kThreads, [&] {
    List(out, c.threads, [&](const DumpThread& t) {
      out.U32(t.serial);
      out.I32(t.tid);
      out.U64(t.peak_bytes);
      out.String(t.name);
    });
  });
  if (c.sample_bytes != 0) Section(out, lengths, counting, kSampling, [&] { out.U64(c.sample_bytes); });
  if (c.has_stack_stats) {
    Section(out, lengths, counting, kStackStats, [&] {
      const size_t n = stats.size();
      out.U32(static_cast<uint32_t>(n));
      for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<Sink, CountingSink>) {
          out.Skip(kStackStatsBytes);  // fixed-size: the figures need not be read to measure
          continue;
        }
        const DumpStackStats s = stats.At(i);
        out.U32(s.stack_id);
        for (uint64_t v : {s.allocations, s.allocated_bytes, s.live_bytes, s.live_blocks,
                           s.temporary, s.temporary_bytes, s.peak_bytes, s.peak_blocks}) {
          out.U64(v);
        }
      }
    });
  }
  if (c.has_thread_totals) {
    Section(out, lengths, counting, kThreadTotals, [&] {
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
    Section(out, lengths, counting, kTimeline, [&] {
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
  Section(out, lengths, counting, kEnd, [] {});
  if (counting) lengths.total = out.size();
}

}  // namespace

std::string EncodeDump(const DumpContents& c, DumpStackSource& stacks,
                       const DumpStatsSource& stats) {
  Lengths lengths;
  CountingSink count;
  Encode(c, stacks, stats, count, lengths, /*counting=*/true);
  ByteSink out;
  out.Reserve(lengths.total);  // the old and a doubled copy are never held at once
  Encode(c, stacks, stats, out, lengths, /*counting=*/false);
  return std::move(out.bytes());
}

uint64_t EncodeDump(const DumpContents& c, DumpStackSource& stacks, const DumpStatsSource& stats,
                    const std::function<void(const char*, size_t)>& write) {
  Lengths lengths;
  CountingSink count;
  Encode(c, stacks, stats, count, lengths, /*counting=*/true);
  ChunkSink out(write);
  Encode(c, stacks, stats, out, lengths, /*counting=*/false);
  out.Flush();
  return out.size();
}

std::string EncodeDump(const DumpContents& c, DumpStackSource& stacks) {
  return EncodeDump(c, stacks, ListedStats(c.stack_stats));
}

uint64_t EncodeDump(const DumpContents& c, DumpStackSource& stacks,
                    const std::function<void(const char*, size_t)>& write) {
  return EncodeDump(c, stacks, ListedStats(c.stack_stats), write);
}

std::string EncodeDump(const DumpContents& c) {
  ListedStacks stacks(c.stacks);
  return EncodeDump(c, stacks);
}

uint64_t EncodeDump(const DumpContents& c, const std::function<void(const char*, size_t)>& write) {
  ListedStacks stacks(c.stacks);
  return EncodeDump(c, stacks, write);
}

}  // namespace stackwalk::leakcheck::dump
