#include "leakcheck/dump/record_read.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>

#include "leakcheck/allocation_slot.h"
#include "leakcheck/record_format.h"
#include "leakcheck/scan/verdict.h"

namespace stackwalk::leakcheck::dump {
namespace {

namespace rec = stackwalk::leakcheck::record;

// The region's bytes, read by copy (a fuzzer's input is not aligned), every read bounds-checked.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t size() const { return size_; }
  bool Fits(uint64_t offset, uint64_t n) const { return offset <= size_ && n <= size_ - offset; }
  template <class T>
  bool Read(uint64_t offset, T* out) const {
    if (!Fits(offset, sizeof(T))) return false;
    std::memcpy(out, data_ + offset, sizeof(T));
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

// A live row checked against the region: its bytes lie after the directory and inside the region.
struct Piece {
  uint32_t kind;
  uint32_t index;
  uint64_t offset;
  uint64_t address;
  uint64_t bytes;
};

// The program's pointers into its stack nodes, followed into the region.
class PieceMap {
 public:
  explicit PieceMap(std::vector<Piece> nodes) : nodes_(std::move(nodes)) {
    std::sort(nodes_.begin(), nodes_.end(),
              [](const Piece& a, const Piece& b) { return a.address < b.address; });
  }
  // The region's offset of [address, address + n) if one piece holds all of it.
  bool Find(uint64_t address, uint64_t n, uint64_t* offset) const {
    auto after = std::upper_bound(nodes_.begin(), nodes_.end(), address,
                                  [](uint64_t a, const Piece& p) { return a < p.address; });
    if (after == nodes_.begin()) return false;
    const Piece& p = *(after - 1);
    const uint64_t into = address - p.address;
    if (into >= p.bytes || n > p.bytes - into) return false;
    *offset = p.offset + into;
    return true;
  }

 private:
  std::vector<Piece> nodes_;
};

// The preloaded library, whose frames (the hooks') begin every stack it captured.
bool IsCheckerLibrary(const std::string& path) {
  constexpr char kName[] = "libstackwalk_leakcheck.so";
  const size_t slash = path.rfind('/');
  return path.compare(slash == std::string::npos ? 0 : slash + 1, std::string::npos, kName) == 0;
}

std::string Bounded(const char* text, size_t capacity) {
  return std::string(text, strnlen(text, capacity));
}

// The current module list: the newest complete one (a list the program died writing has count 0).
std::vector<DumpModule> ReadModules(const Bytes& bytes, const std::vector<Piece>& lists,
                                    RecordReading* out) {
  std::vector<const Piece*> newest_first;
  for (const Piece& p : lists) newest_first.push_back(&p);
  std::sort(newest_first.begin(), newest_first.end(),
            [](const Piece* a, const Piece* b) { return a->index > b->index; });
  for (const Piece* p : newest_first) {
    uint64_t count = 0;
    if (!bytes.Read(p->offset, &count) || count == 0) continue;
    const uint64_t room = (p->bytes - sizeof(rec::ModuleList)) / sizeof(rec::Module);
    if (p->bytes < sizeof(rec::ModuleList) || count > room) {
      out->problems.push_back("a module list is corrupt (" + std::to_string(count) +
                              " modules in room for " + std::to_string(room) + ")");
      continue;
    }
    std::vector<DumpModule> modules;
    for (uint64_t i = 0; i < count; ++i) {
      rec::Module m;
      bytes.Read(p->offset + sizeof(rec::ModuleList) + i * sizeof(rec::Module), &m);
      DumpModule d;
      d.path = Bounded(m.path, sizeof(m.path));
      d.build_id.assign(m.build_id, m.build_id + std::min<uint32_t>(m.build_id_size, 32));
      d.load_bias = m.load_bias;
      d.extent = {m.lo, m.hi};
      for (uint32_t e = 0; e < std::min<uint32_t>(m.exec_count, 4); ++e) {
        d.exec.push_back({m.exec_lo[e], m.exec_hi[e]});
      }
      modules.push_back(std::move(d));
    }
    return modules;
  }
  out->problems.push_back("no module list: frames are given as addresses");
  return {};
}

// id -> the stack's PCs, from the id chunks through the program's pointers to its node, then
// from its leaf frame through the parents' pointers.
std::map<uint32_t, std::vector<uint64_t>> ReadStacks(const Bytes& bytes,
                                                     const std::vector<Piece>& chunks,
                                                     const PieceMap& nodes, const PieceMap& frames,
                                                     RecordReading* out) {
  std::map<uint32_t, std::vector<uint64_t>> stacks;
  uint64_t bad = 0;
  for (const Piece& chunk : chunks) {
    if (chunk.index >= rec::kStackIdChunks ||
        chunk.bytes < uint64_t{rec::kStackIdChunk} * sizeof(uintptr_t)) {
      ++bad;
      continue;
    }
    for (uint32_t j = 0; j < rec::kStackIdChunk; ++j) {
      uintptr_t pointer = 0;
      bytes.Read(chunk.offset + uint64_t{j} * sizeof(uintptr_t), &pointer);
      if (pointer == 0) continue;
      const uint32_t id = chunk.index * rec::kStackIdChunk + j;
      uint64_t at = 0;
      rec::StackNode node;
      if (!nodes.Find(pointer, sizeof(node), &at) || !bytes.Read(at, &node) || node.id != id ||
          node.n < 0 || node.n > rec::kMaxStackFrames) {
        ++bad;
        continue;
      }
      // n frames along the parents (a loop of corrupt pointers ends at n).
      std::vector<uint64_t> pcs;
      uintptr_t frame = node.leaf;
      rec::FrameNode f;
      while (static_cast<int32_t>(pcs.size()) < node.n && frames.Find(frame, sizeof(f), &at) &&
             bytes.Read(at, &f)) {
        pcs.push_back(f.pc);
        frame = f.parent;
      }
      if (static_cast<int32_t>(pcs.size()) != node.n) {
        ++bad;
        continue;
      }
      stacks.emplace(id, std::move(pcs));
    }
  }
  if (bad > 0) out->problems.push_back(std::to_string(bad) + " stack record(s) unreadable");
  return stacks;
}

// The live blocks of every shard's slots; a block in two (a shard the program died growing: the
// old slots and the new, partly filled) is taken once.
std::map<uint64_t, DumpBlock> ReadBlocks(const Bytes& bytes, const std::vector<Piece>& slots) {
  std::map<uint64_t, DumpBlock> blocks;
  for (const Piece& p : slots) {
    for (uint64_t k = 0; k < p.bytes / sizeof(rec::AllocationSlot); ++k) {
      rec::AllocationSlot slot;
      bytes.Read(p.offset + k * sizeof(slot), &slot);
      if (SlotEmpty(slot)) continue;
      const Allocation a = UnpackAllocation(slot);
      DumpBlock b;
      b.address = a.address;
      b.size = a.size;
      b.sequence = a.sequence;
      b.stack_id = a.stack_id;
      b.thread = a.thread;
      b.verdict = static_cast<uint8_t>(IsIgnored(a) ? Verdict::kIgnored : Verdict::kLive);
      auto [it, added] = blocks.emplace(b.address, b);
      if (!added && SequenceNumber(a) > (it->second.sequence & ~kSequenceFlags)) it->second = b;
    }
  }
  return blocks;
}

// The threads the blocks name, from the registry's chunks.
std::vector<DumpThread> ReadThreads(const Bytes& bytes, const std::vector<Piece>& chunks,
                                    const std::vector<DumpBlock>& blocks) {
  std::map<uint32_t, const Piece*> by_chunk;
  for (const Piece& p : chunks) by_chunk.emplace(p.index, &p);
  std::vector<uint32_t> serials;
  for (const DumpBlock& b : blocks) serials.push_back(static_cast<uint32_t>(b.thread));
  std::sort(serials.begin(), serials.end());
  serials.erase(std::unique(serials.begin(), serials.end()), serials.end());
  std::vector<DumpThread> threads;
  for (uint32_t serial : serials) {
    const auto chunk = by_chunk.find(serial / rec::kThreadChunk);
    if (serial == 0 || chunk == by_chunk.end()) continue;
    const uint64_t at = uint64_t{serial % rec::kThreadChunk} * sizeof(rec::ThreadEntry);
    rec::ThreadEntry t;
    if (at + sizeof(t) > chunk->second->bytes || !bytes.Read(chunk->second->offset + at, &t) ||
        t.tid == 0) {
      continue;
    }
    threads.push_back({serial, t.tid, t.peak_bytes, Bounded(t.name, sizeof(t.name))});
  }
  return threads;
}

}  // namespace

RecordReading ReadRecord(const uint8_t* region, size_t size, const std::string& occasion) {
  RecordReading out;
  const Bytes bytes(region, size);
  rec::Header header;
  // The fixed part (the directory is read row by row).
  constexpr size_t kFixed = offsetof(rec::Header, extents);
  if (size < kFixed) return out;
  std::memcpy(&header, region, kFixed);
  if (std::memcmp(header.magic, rec::kMagic, sizeof(rec::kMagic)) != 0) return out;
  out.begun = true;
  out.exit_reported = header.exit_reported == rec::kExitReported;
  out.executed = header.exit_reported == rec::kExecuted;
  if (header.version != rec::kVersion || header.pointer_bytes != sizeof(void*)) {
    out.problems.push_back("a record of version " + std::to_string(header.version) + " with " +
                           std::to_string(header.pointer_bytes) +
                           "-byte pointers (this launcher reads version " +
                           std::to_string(rec::kVersion) + ", " + std::to_string(sizeof(void*)) +
                           "): the program ran with another build's checker; its blocks are not "
                           "read");
    return out;
  }
  DumpContents& d = out.dump;
  d.process.pid = header.pid;
  d.process.machine = header.machine;
  d.process.program = Bounded(header.program, sizeof(header.program));
  d.process.occasion = occasion;
  d.process.at_exit = false;
  d.process.scanned = false;
  d.summary.method = "none";
  d.summary.untracked = {header.untracked_refused, header.untracked_no_memory,
                         header.untracked_bytes};

  std::vector<Piece> slots, node_pieces, frame_pieces, id_chunks, module_lists, thread_chunks;
  uint64_t bad_rows = 0;
  const uint64_t rows = std::min<uint64_t>({header.extent_high, header.extent_capacity,
                                            rec::kExtentCapacity});
  for (uint64_t i = 0; i < rows; ++i) {
    rec::Extent row;
    if (!bytes.Read(kFixed + i * sizeof(rec::Extent), &row)) {
      ++bad_rows;
      break;
    }
    if (row.state != rec::kLive) continue;
    if (row.offset < header.header_bytes || row.bytes == 0 || !bytes.Fits(row.offset, row.bytes) ||
        row.address + row.bytes < row.address) {
      ++bad_rows;
      continue;
    }
    const Piece p = {row.kind, row.index, row.offset, row.address, row.bytes};
    switch (row.kind) {
      case rec::kAllocationSlots: slots.push_back(p); break;
      case rec::kStackNodes: node_pieces.push_back(p); break;
      case rec::kStackFrames: frame_pieces.push_back(p); break;
      case rec::kStackIds: id_chunks.push_back(p); break;
      case rec::kModules: module_lists.push_back(p); break;
      case rec::kThreads: thread_chunks.push_back(p); break;
      default: break;
    }
  }
  if (bad_rows > 0) {
    out.problems.push_back(std::to_string(bad_rows) + " directory row(s) out of the region's " +
                           std::to_string(size) + " bytes");
  }
  if (header.lost_extents > 0) {
    out.problems.push_back(std::to_string(header.lost_extents) +
                           " table piece(s) kept out of the region (no directory row, or it "
                           "could not grow): their blocks are not listed");
  }
  for (const Piece& p : slots) d.summary.table_bytes += p.bytes;
  for (const Piece& p : node_pieces) d.summary.stack_bytes += p.bytes;
  for (const Piece& p : frame_pieces) d.summary.stack_bytes += p.bytes;
  for (const Piece& p : id_chunks) d.summary.stack_bytes += p.bytes;

  const std::vector<DumpModule> modules = ReadModules(bytes, module_lists, &out);
  const std::map<uint32_t, std::vector<uint64_t>> stacks =
      ReadStacks(bytes, id_chunks, PieceMap(std::move(node_pieces)),
                 PieceMap(std::move(frame_pieces)), &out);
  const std::map<uint64_t, DumpBlock> blocks = ReadBlocks(bytes, slots);

  // The stacks the blocks name, each with its earliest block; a block whose stack is not in the
  // record keeps none.
  std::map<uint32_t, uint64_t> earliest;
  uint64_t stackless = 0, live_bytes = 0;
  for (const auto& [address, b] : blocks) {
    DumpBlock block = b;
    if (block.stack_id != 0 && stacks.count(block.stack_id) == 0) {
      ++stackless;
      block.stack_id = 0;
    }
    if (block.stack_id != 0) {
      uint64_t& first = earliest.emplace(block.stack_id, UINT64_MAX).first->second;
      first = std::min(first, block.sequence & ~kSequenceFlags);
    }
    d.summary.live_allocations += 1;
    live_bytes += block.size;
    d.blocks.push_back(block);
  }
  // The process's peak as its hooks kept it; never below what it held at its death (a block
  // recorded as the peak was being raised).
  d.summary.peak_bytes = std::max(header.peak_bytes, live_bytes);
  if (stackless > 0) {
    out.problems.push_back(std::to_string(stackless) + " block(s) name a stack not in the record");
  }
  // Frames as (module, link-time offset): the module whose extent holds the call (a byte back).
  std::map<uint32_t, uint32_t> module_index;  // index in `modules` -> in the dump's
  for (const auto& [id, first] : earliest) {
    DumpStack s;
    s.id = id;
    s.earliest = first;
    bool inside_checker = true;  // the capture starts in the hooks: their frames are not shown
    for (uint64_t pc : stacks.at(id)) {
      DumpFrame f;
      f.offset = pc;
      for (uint32_t m = 0; m < modules.size(); ++m) {
        if (pc - 1 >= modules[m].extent.lo && pc - 1 < modules[m].extent.hi) {
          auto [it, added] = module_index.emplace(m, static_cast<uint32_t>(d.modules.size()));
          if (added) d.modules.push_back(modules[m]);
          f.module = it->second;
          f.offset = pc - modules[m].load_bias;
          break;
        }
      }
      inside_checker = inside_checker && f.module != kUnknownModule &&
                       IsCheckerLibrary(d.modules[f.module].path);
      if (!inside_checker) s.frames.push_back(f);
    }
    d.stacks.push_back(std::move(s));
  }
  d.summary.distinct_stacks = static_cast<uint32_t>(stacks.size());
  d.threads = ReadThreads(bytes, thread_chunks, d.blocks);
  return out;
}

}  // namespace stackwalk::leakcheck::dump
