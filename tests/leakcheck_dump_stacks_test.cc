// A dump's stacks written from the stack table (dump_table_stacks.h) against the same stacks as
// per-stack frame vectors, as CollectDump made them before: the same bytes, decoded back to the
// same stacks (a dead one, one of the checker's frames only, a frame in no object, an id the table
// lacks), each frame's offset the link-time address its object's link map gives.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_bytes.h"
#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_encode.h"
#include "leakcheck/dump/dump_modules.h"
#include "leakcheck/dump/dump_table_stacks.h"
#include "leakcheck/report_collect.h"
#include "leakcheck/stack_stats.h"
#include "leakcheck/stack_table.h"

namespace stackwalk::leakcheck::dump {
namespace {

// A return address a byte into `symbol` (a frame's object is the one holding the byte before).
void* ReturnAddressIn(const char* symbol) {
  void* start = dlsym(RTLD_DEFAULT, symbol);
  return start != nullptr ? static_cast<char*>(start) + 1 : nullptr;
}

// The load bias of the object holding `pc`, as its link map has it.
uint64_t LoadBias(void* pc) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(pc, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) {
    return UINT64_MAX;
  }
  return map->l_addr;
}

// The payload of section `id` of one dump's bytes ("" if it has none).
std::string SectionPayload(const std::string& dump, uint32_t id) {
  const auto read = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n && at + i < dump.size(); ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(dump[at + i])) << (8 * i);
    }
    return v;
  };
  for (size_t at = kHeaderBytes; at + kSectionHeaderBytes <= dump.size();) {
    const uint64_t bytes = read(at + 8, 8);
    if (read(at, 4) == id) return dump.substr(at + kSectionHeaderBytes, bytes);
    if (read(at, 4) == kEnd) break;
    at += kSectionHeaderBytes + bytes;
  }
  return "";
}

// The stacks section as docs/dump-format.md lays it out, field by field.
std::string StacksPayload(const std::vector<DumpStack>& stacks) {
  ByteSink out;
  out.U32(static_cast<uint32_t>(stacks.size()));
  for (const DumpStack& s : stacks) {
    out.U32(s.id);
    out.U64(s.earliest);
    out.U32(static_cast<uint32_t>(s.frames.size()));
    for (const DumpFrame& f : s.frames) {
      out.U32(f.module);
      out.U64(f.offset);
    }
  }
  return out.bytes();
}

struct Added {
  uint32_t id;
  uint64_t earliest;
  uint64_t dated_by;
};

// The stacks as CollectDump listed them before TableStacks: a vector of frames each.
std::vector<DumpStack> AsVectors(const StackTable& table, const std::vector<Added>& added,
                                 std::vector<DumpModule>* modules) {
  ModuleIndexer indexer(nullptr);
  std::vector<DumpStack> out;
  for (const Added& a : added) {
    void* pcs[StackTable::kMaxFrames];
    const int n = table.Frames(a.id, pcs);
    DumpStack s;
    s.id = a.id;
    s.earliest = a.earliest;
    for (uintptr_t pc : ProgramFrames(pcs, n)) s.frames.push_back(indexer.Resolve(pc, a.dated_by));
    out.push_back(std::move(s));
  }
  *modules = indexer.TakeModules();
  return out;
}

TEST(LeakDumpStacks, FromTheTableTheyAreTheBytesOfTheirFrameVectors) {
  // The checker is linked into this test: a PC of its code stands for a hook's (left out when it
  // leads a stack); the C and C++ libraries' for the program's.
  void* const own = reinterpret_cast<void*>(&CollectStacks);
  void* const libc = ReturnAddressIn("abort");
  void* const libstdcxx = ReturnAddressIn("_ZSt9terminatev");
  void* const nowhere = reinterpret_cast<void*>(0x11);  // in no object
  ASSERT_NE(libc, nullptr);
  ASSERT_NE(libstdcxx, nullptr);
  auto table = std::make_unique<StackTable>();
  void* live[] = {own, libc, libstdcxx, own, nowhere};
  void* dead[] = {libstdcxx, libc};
  void* only_own[] = {own, own};
  const uint32_t a = table->Intern(live, 5);
  const uint32_t b = table->Intern(dead, 2);
  const uint32_t c = table->Intern(only_own, 2);
  const std::vector<Added> added = {
      {a, 5, 5}, {c, 7, 7}, {b, UINT64_MAX, 100}, {c + 1000, 9, 9}};  // the last: unknown id

  const std::atomic<ClosedModules*> no_dlclose{nullptr};
  TableStacks stacks(*table, no_dlclose);
  for (const Added& s : added) stacks.Add(s.id, s.earliest, s.dated_by);
  DumpContents from_table;
  from_table.modules = stacks.TakeModules();
  DumpContents as_vectors;
  as_vectors.stacks = AsVectors(*table, added, &as_vectors.modules);

  const std::string old_bytes = EncodeDump(as_vectors);
  EXPECT_EQ(EncodeDump(from_table, stacks), old_bytes);
  std::string streamed;
  EncodeDump(from_table, stacks, [&](const char* data, size_t n) { streamed.append(data, n); });
  EXPECT_EQ(streamed, old_bytes);
  EXPECT_EQ(SectionPayload(streamed, kStacks), StacksPayload(as_vectors.stacks));

  const DecodedDumps decoded =
      DecodeDumps(reinterpret_cast<const uint8_t*>(streamed.data()), streamed.size());
  ASSERT_EQ(decoded.error, "");
  ASSERT_EQ(decoded.dumps.size(), 1u);
  const DumpContents& d = decoded.dumps[0];
  ASSERT_EQ(d.modules.size(), 3u);  // the C and C++ libraries, this test (not where it leads)
  ASSERT_EQ(d.stacks.size(), 4u);
  const auto frame_of = [&](void* pc) {
    for (uint32_t m = 0; m < d.modules.size(); ++m) {
      const uint64_t bias = d.modules[m].load_bias;
      if (bias == LoadBias(pc)) return DumpFrame{m, reinterpret_cast<uint64_t>(pc) - bias};
    }
    return DumpFrame{kUnknownModule, reinterpret_cast<uint64_t>(pc)};
  };
  const auto expect_frames = [](const DumpStack& s, const std::vector<DumpFrame>& want) {
    ASSERT_EQ(s.frames.size(), want.size()) << "stack " << s.id;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(s.frames[i].module, want[i].module) << "stack " << s.id << " frame " << i;
      EXPECT_EQ(s.frames[i].offset, want[i].offset) << "stack " << s.id << " frame " << i;
    }
  };
  EXPECT_EQ(d.stacks[0].id, a);
  EXPECT_EQ(d.stacks[0].earliest, 5u);
  expect_frames(d.stacks[0], {frame_of(libc), frame_of(libstdcxx), frame_of(own),
                              {kUnknownModule, 0x11}});
  for (int f = 0; f < 3; ++f) EXPECT_NE(d.stacks[0].frames[f].module, kUnknownModule);
  EXPECT_EQ(d.stacks[1].id, c);
  expect_frames(d.stacks[1], {});  // the checker's frames only
  EXPECT_EQ(d.stacks[2].id, b);
  EXPECT_EQ(d.stacks[2].earliest, UINT64_MAX);  // dead: listed for the profile's statistics
  expect_frames(d.stacks[2], {frame_of(libstdcxx), frame_of(libc)});
  EXPECT_EQ(d.stacks[3].id, c + 1000);
  expect_frames(d.stacks[3], {});
}

TEST(LeakDumpStacks, AnObjectNotListedWhenTheModulesWereTakenIsWrittenAsItsPc) {
  // A dlopen or dlclose between listing the modules and writing the stacks: the frame stays
  // readable and its module index within the list.
  void* const libc = ReturnAddressIn("abort");
  void* const libstdcxx = ReturnAddressIn("_ZSt9terminatev");
  ASSERT_NE(libc, nullptr);
  ASSERT_NE(libstdcxx, nullptr);
  ModuleIndexer indexer(nullptr);
  const DumpFrame listed = indexer.Resolve(reinterpret_cast<uintptr_t>(libc), 1);
  const std::vector<DumpModule> modules = indexer.TakeModules();
  ASSERT_EQ(modules.size(), 1u);
  EXPECT_EQ(listed.module, 0u);
  const DumpFrame again = indexer.Resolve(reinterpret_cast<uintptr_t>(libc), 1);
  EXPECT_EQ(again.module, 0u);
  EXPECT_EQ(again.offset, listed.offset);
  const DumpFrame unlisted = indexer.Resolve(reinterpret_cast<uintptr_t>(libstdcxx), 1);
  EXPECT_EQ(unlisted.module, kUnknownModule);
  EXPECT_EQ(unlisted.offset, reinterpret_cast<uintptr_t>(libstdcxx));
}

// The statistics section read from the stack table as it is written: the bytes of the same
// figures listed in DumpContents, a stack's copies summed; and figures that change between the
// encoder's two passes change the section's bytes, never its size.
TEST(LeakDumpStacks, StatisticsFromTheTableAreTheBytesOfTheirList) {
  auto table = std::make_unique<StackTable>();
  void* one[] = {reinterpret_cast<void*>(0x1000)};
  void* two[] = {reinterpret_cast<void*>(0x2000), reinterpret_cast<void*>(0x3000)};
  const uint32_t a = table->Intern(one, 1);
  const uint32_t b = table->Intern(two, 2);
  ASSERT_NE(a, StackTable::kNoStack);
  ASSERT_NE(b, StackTable::kNoStack);
  const uint32_t owned = table->ClaimStatsCopy(1);
  ASSERT_NE(owned, 0u);
  StackStats* a_shared = table->SharedStats(a);
  StackStats* a_owned = table->OwnedStats(a, owned);
  StackStats* b_shared = table->SharedStats(b);
  ASSERT_TRUE(a_shared != nullptr && a_owned != nullptr && b_shared != nullptr);
  a_shared->Allocated(100, /*epoch=*/0);
  a_owned->Allocated<StatsWriter::kOwned>(28, 0);
  b_shared->Allocated(7, 0);
  b_shared->Freed(7, 0, /*is_temporary=*/true);

  TableStackStats from_table(*table, /*final_epoch=*/1);
  from_table.Add(a);
  from_table.Add(b);
  from_table.Add(b + 1000);  // an id the table does not know: figures of zero
  DumpContents listed;
  listed.has_stack_stats = true;
  // Nothing changed since the last peak (epoch 1): the peak figures are the live ones.
  listed.stack_stats = {{a, 2, 128, 128, 2, 0, 0, 128, 2},
                        {b, 1, 7, 0, 0, 1, 7, 0, 0},
                        {b + 1000, 0, 0, 0, 0, 0, 0, 0, 0}};
  DumpContents without = listed;
  without.stack_stats.clear();  // not read when a source is given
  const std::string want = EncodeDump(listed);
  ListedStacks no_stacks(without.stacks);
  EXPECT_EQ(EncodeDump(without, no_stacks, from_table), want);
  std::string streamed;
  EncodeDump(without, no_stacks, from_table,
             [&](const char* data, size_t n) { streamed.append(data, n); });
  EXPECT_EQ(streamed, want);
  const std::string payload = SectionPayload(want, kStackStats);
  EXPECT_EQ(payload.size(), 4 + 3 * (4 + 8 * 8u));

  // A source whose figures change between the measuring pass and the writing one.
  class Changing final : public DumpStatsSource {
   public:
    size_t size() const override { return 1; }
    DumpStackStats At(size_t) const override {
      DumpStackStats s;
      s.stack_id = 5;
      s.allocations = ++reads_;
      return s;
    }
    mutable uint64_t reads_ = 0;
  } changing;
  DumpContents one_stack = without;
  one_stack.stacks = {{5, UINT64_MAX, {}}};
  ListedStacks stack_five(one_stack.stacks);
  const std::string changed = EncodeDump(one_stack, stack_five, changing);
  const DecodedDumps decoded =
      DecodeDumps(reinterpret_cast<const uint8_t*>(changed.data()), changed.size());
  ASSERT_EQ(decoded.error, "");
  ASSERT_EQ(decoded.dumps.size(), 1u);
  ASSERT_EQ(decoded.dumps[0].stack_stats.size(), 1u);
  EXPECT_EQ(decoded.dumps[0].stack_stats[0].stack_id, 5u);
  EXPECT_GE(decoded.dumps[0].stack_stats[0].allocations, 1u);
}

}  // namespace
}  // namespace stackwalk::leakcheck::dump
