// The record region (leakcheck/record_region.h, leakcheck/dump/record_read.h; issue 17): the real
// tables, recording into a memfd as the launcher hands one to the program, read back from the
// region's bytes alone: the blocks, their stacks as frames of this test's own module, the
// threads; the process's peak; an exec's mark; a forked child's writes stay out of its parent's
// region, and the parent's globals name nothing the fork copied; and a region cut at any byte
// or corrupted is read without a crash, saying what it could not read.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "leakcheck/allocation_table.h"
#include "leakcheck/dump/record_read.h"
#include "leakcheck/record_format.h"
#include "leakcheck/record_region.h"
#include "leakcheck/stack_table.h"
#include "leakcheck/thread_registry.h"
#include "writable_words.h"

namespace stackwalk::leakcheck {
namespace {

// The region, as the launcher hands it over: before anything maps a table (a global constructor).
int g_region = -1;
struct HandOver {
  HandOver() {
    g_region = memfd_create("record_test", 0);
    if (g_region < 0 || dup2(g_region, record::kDescriptor) != record::kDescriptor) return;
    setenv(record::kDescriptorVariable, std::to_string(record::kDescriptor).c_str(), 1);
    setenv("STACKWALK_LEAKCHECK_PID", std::to_string(getpid()).c_str(), 1);
  }
} g_hand_over;

std::vector<uint8_t> RegionBytes() {
  struct stat st;
  if (fstat(record::kDescriptor, &st) != 0) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pread(record::kDescriptor, bytes.data() + done, bytes.size() - done,
                            static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return bytes;
}

dump::RecordReading Read(const std::vector<uint8_t>& bytes) {
  return dump::ReadRecord(bytes.data(), bytes.size(), "killed by SIGKILL");
}

__attribute__((noinline)) void AllocatingSite() { asm volatile(""); }

// The tables of one program, alive for the test binary's life (the region outlives each test).
struct Tables {
  AllocationTable allocations;
  StackTable stacks;
  ThreadRegistry threads;
};
Tables& TheTables() {
  static Tables* tables = [] {
    RecordModules();  // as the preload does at start
    return new Tables();
  }();
  return *tables;
}

// A stack of this binary's own code: its frames must come back as (this module, offset).
uint32_t InternSiteStack(int depth) {
  void* pcs[8];
  for (int i = 0; i < depth; ++i) {
    pcs[i] = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(&AllocatingSite) + 1 + i);
  }
  return TheTables().stacks.Intern(pcs, depth);
}

const dump::DumpBlock* FindBlock(const dump::DumpContents& d, uint64_t address) {
  for (const dump::DumpBlock& b : d.blocks) {
    if (b.address == address) return &b;
  }
  return nullptr;
}

TEST(RecordRegion, TheTablesAreReadBackFromTheRegionAlone) {
  ASSERT_TRUE(RecordRegionAttached());
  Tables& t = TheTables();
  const uint32_t serial = t.threads.RegisterCurrent(static_cast<int32_t>(gettid()));
  ASSERT_NE(serial, 0u);
  t.threads.LiveBytesOf(serial)->Add(12345);
  const uint32_t stack = InternSiteStack(3);
  ASSERT_NE(stack, StackTable::kNoStack);
  // Enough blocks that every shard grows several times: a read sees only the current slots' blocks.
  constexpr uint64_t kBase = 0x7000000000, kBlocks = 30000;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    ASSERT_TRUE(t.allocations.Insert(kBase + i * 64, 100 + i % 7, stack,
                                     static_cast<int32_t>(serial), i));
  }
  for (uint64_t i = 0; i < kBlocks; i += 2) ASSERT_TRUE(t.allocations.Remove(kBase + i * 64));

  const dump::RecordReading reading = Read(RegionBytes());
  ASSERT_TRUE(reading.begun);
  EXPECT_TRUE(reading.problems.empty()) << reading.problems.front();
  const dump::DumpContents& d = reading.dump;
  EXPECT_EQ(d.process.pid, getpid());
  EXPECT_EQ(d.process.occasion, "killed by SIGKILL");
  EXPECT_FALSE(d.process.scanned);
  uint64_t ours = 0;
  for (const dump::DumpBlock& b : d.blocks) {
    if (b.address < kBase || b.address >= kBase + kBlocks * 64) continue;
    ++ours;
    const uint64_t i = (b.address - kBase) / 64;
    EXPECT_EQ(i % 2, 1u);
    EXPECT_EQ(b.size, 100 + i % 7);
    EXPECT_EQ(b.stack_id, stack);
    EXPECT_EQ(b.sequence, i);  // the packed slot's fields, each back whole
    EXPECT_EQ(b.thread, static_cast<int32_t>(serial));
    EXPECT_EQ(b.verdict, 0);  // kLive: unclassified
  }
  EXPECT_EQ(ours, kBlocks / 2);
  // The stack: three frames in this binary, at their link-time offsets.
  const dump::DumpStack* found = nullptr;
  for (const dump::DumpStack& s : d.stacks) found = s.id == stack ? &s : found;
  ASSERT_NE(found, nullptr);
  ASSERT_EQ(found->frames.size(), 3u);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  ASSERT_GT(n, 0);
  const std::string exe(self, static_cast<size_t>(n));
  for (size_t i = 0; i < 3; ++i) {
    const dump::DumpFrame& f = found->frames[i];
    ASSERT_LT(f.module, d.modules.size());
    EXPECT_EQ(d.modules[f.module].path, exe);
    EXPECT_EQ(f.offset + d.modules[f.module].load_bias,
              reinterpret_cast<uintptr_t>(&AllocatingSite) + 1 + i);
  }
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].serial, serial);
  EXPECT_EQ(d.threads[0].tid, gettid());
  EXPECT_EQ(d.threads[0].peak_bytes, 12345u);
  for (uint64_t i = 1; i < kBlocks; i += 2) t.allocations.Remove(kBase + i * 64);
}

uint64_t LiveIn(AllocationTable& table, uint64_t lo, uint64_t hi) {
  uint64_t n = 0;
  table.ForEach(UINT64_MAX, [&](const Allocation& a) { n += a.address >= lo && a.address < hi; });
  return n;
}

// What the preload's fork handlers do (session.cc), every table locked around fork(); the child
// waits for a byte on `go` before its handler runs (the parent's threads run on meanwhile).
pid_t ForkAsThePreloadDoes(Tables& t, int go) {
  t.stacks.LockAll();
  t.allocations.LockAll();
  RecordBeforeFork();
  const pid_t child = fork();
  if (child == 0) {
    char byte;
    if (read(go, &byte, 1) != 1) _exit(3);
    RecordLeaveAfterFork();
  } else {
    RecordAfterForkParent();
  }
  t.allocations.UnlockAll();
  t.stacks.UnlockAll();
  return child;
}

TEST(RecordRegion, AForkedChildsRecordsStayOutOfItsParentsRegionAndTheParentsOutOfTheChilds) {
  Tables& t = TheTables();
  const uint32_t stack = InternSiteStack(2);
  // kLater in kParent's 64 MiB: the same shards (allocation_table.h), which do not grow for it.
  constexpr uint64_t kParent = 0x7100000000, kChild = 0x7200000000, kLater = 0x7100100000;
  constexpr uint64_t kLaterBlocks = 40;
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(t.allocations.Insert(kParent + i * 64, 8, stack, 0, i));
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = ForkAsThePreloadDoes(t, go[0]);
  if (child == 0) {
    // Its fork handler ran once its parent had written on into the region: none of that is its.
    const bool left = !RecordRegionAttached();
    bool ok = LiveIn(t.allocations, kLater, kLater + kLaterBlocks * 64) == 0 &&
              LiveIn(t.allocations, kParent, kParent + 100 * 64) == 100;
    // The child frees its parent's blocks, makes its own (growing every shard) and new stacks.
    for (uint64_t i = 0; i < 100; ++i) ok = ok && t.allocations.Remove(kParent + i * 64);
    for (uint64_t i = 0; i < 40000; ++i) {
      ok = ok && t.allocations.Insert(kChild + i * 64, 9, InternSiteStack(1 + i % 7), 0, i);
    }
    _exit(!ok ? 1 : !left ? 2 : 0);
  }
  // The parent writes on meanwhile, into the pieces the child has too.
  for (uint64_t i = 0; i < kLaterBlocks; ++i) {
    ASSERT_TRUE(t.allocations.Insert(kLater + i * 64, 3, stack, 0, i));
  }
  ASSERT_EQ(write(go[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(go[0]);
  close(go[1]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child saw its parent's later blocks or lost its "
                                       "own; 2: it did not let go of the region";
  const dump::RecordReading reading = Read(RegionBytes());
  EXPECT_TRUE(reading.problems.empty()) << reading.problems.front();
  uint64_t parents = 0, later = 0;
  for (const dump::DumpBlock& b : reading.dump.blocks) {
    EXPECT_FALSE(b.address >= kChild && b.address < kChild + 40000 * 64) << std::hex << b.address;
    parents += b.address >= kParent && b.address < kParent + 100 * 64 ? 1 : 0;
    later += b.address >= kLater && b.address < kLater + kLaterBlocks * 64 ? 1 : 0;
  }
  EXPECT_EQ(parents, 100u);
  EXPECT_EQ(later, kLaterBlocks);
  for (uint64_t i = 0; i < 100; ++i) t.allocations.Remove(kParent + i * 64);
  for (uint64_t i = 0; i < kLaterBlocks; ++i) t.allocations.Remove(kLater + i * 64);
}

// A child made without the fork handlers (glibc's _Fork, a raw clone) shares its parent's pieces:
// mapping a piece, or reporting its exit, must leave its parent's region as it was.
TEST(RecordRegion, AChildForkedWithoutTheHandlersLeavesItsParentsRegionAlone) {
  TheTables();
  struct stat before;
  ASSERT_EQ(fstat(record::kDescriptor, &before), 0);
  const pid_t child = fork();  // no RecordBeforeFork / RecordLeaveAfterFork
  if (child == 0) {
    void* piece = RecordMap(1 << 20, record::kAllocationSlots, 12345);
    RecordExitReported();
    _exit(piece == nullptr ? 1 : RecordRegionAttached() ? 2 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no piece; 2: the child kept the region";
  struct stat after;
  ASSERT_EQ(fstat(record::kDescriptor, &after), 0);
  EXPECT_EQ(after.st_size, before.st_size) << "the child grew its parent's region";
  const std::vector<uint8_t> bytes = RegionBytes();
  ASSERT_GE(bytes.size(), sizeof(record::Header));
  EXPECT_EQ(reinterpret_cast<const record::Header*>(bytes.data())->exit_reported, 0u);
}

// Address ranges the process has mapped (of /proc/self/maps).
std::vector<std::pair<uintptr_t, uintptr_t>> MappedRanges() {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) ranges.emplace_back(lo, hi);
  }
  return ranges;
}

// The parts of `after`'s ranges that none of `before`'s covers.
std::vector<std::pair<uintptr_t, uintptr_t>> NewRanges(
    const std::vector<std::pair<uintptr_t, uintptr_t>>& before,
    const std::vector<std::pair<uintptr_t, uintptr_t>>& after) {
  std::vector<std::pair<uintptr_t, uintptr_t>> parts = after;
  for (const auto& [lo, hi] : before) {
    std::vector<std::pair<uintptr_t, uintptr_t>> left;
    for (const auto& part : parts) {
      if (part.first < lo) left.emplace_back(part.first, std::min(part.second, lo));
      if (part.second > hi) left.emplace_back(std::max(part.first, hi), part.second);
    }
    parts = left;
  }
  return parts;
}

// The fork copies (RecordBeforeFork) are listed in the checker's globals, a root: once the parent
// has unmapped them (the child moved them), and once a piece they name is retired, an address left
// there points into whatever large block is mapped there next, and keeps it reachable.
TEST(RecordRegion, AfterAForkNeitherProcesssGlobalsNameTheCopiesOrThePieces) {
  Tables& t = TheTables();
  InternSiteStack(2);
  const auto* globals_code = reinterpret_cast<const void*>(&RecordAfterForkParent);
  // The live pieces, each named in the globals as many times as the tables name it.
  std::vector<uintptr_t> pieces;
  const std::vector<uint8_t> region = RegionBytes();
  ASSERT_GE(region.size(), sizeof(record::Header));
  const auto* header = reinterpret_cast<const record::Header*>(region.data());
  for (uint64_t i = 0; i < header->extent_high && i < record::kExtentCapacity; ++i) {
    if (header->extents[i].state == record::kLive) pieces.push_back(header->extents[i].address);
  }
  ASSERT_FALSE(pieces.empty());
  std::vector<size_t> named;
  for (uintptr_t piece : pieces) {
    named.push_back(testing::WritableWordsEqualTo(globals_code, piece));
  }

  const auto before = MappedRanges();
  t.stacks.LockAll();
  t.allocations.LockAll();
  RecordBeforeFork();
  const auto copies = NewRanges(before, MappedRanges());
  const pid_t child = fork();
  if (child == 0) {
    RecordLeaveAfterFork();  // the copies put in place of the pieces: their ranges left empty
    size_t found = 0;
    for (const auto& [lo, hi] : copies) found += testing::WritableWordsWithin(globals_code, lo, hi);
    _exit(found == 0 ? 0 : 1);
  }
  RecordAfterForkParent();
  t.allocations.UnlockAll();
  t.stacks.UnlockAll();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(copies.empty()) << "no copy was mapped";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's globals name a copy";
  for (const auto& [lo, hi] : copies) {
    EXPECT_EQ(testing::WritableWordsWithin(globals_code, lo, hi), 0u)
        << std::hex << "a copy at " << lo << "-" << hi << ", unmapped";
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_EQ(testing::WritableWordsEqualTo(globals_code, pieces[i]), named[i])
        << std::hex << "the piece at " << pieces[i];
  }
}

// The process's peak, raised by every thread at its new peaks, is the header's highest (never
// lowered), and a killed program's report gives it.
TEST(RecordRegion, TheHeaderKeepsTheHighestPeakAnyThreadRaisedItTo) {
  TheTables();
  std::vector<std::thread> threads;
  for (uint64_t t = 1; t <= 4; ++t) {
    threads.emplace_back([t] {
      for (uint64_t i = 0; i < 1000; ++i) RecordPeak(100000000 + t * 1000 + i);
    });
  }
  for (std::thread& t : threads) t.join();
  RecordPeak(5);
  EXPECT_EQ(Read(RegionBytes()).dump.summary.peak_bytes, 100004999u);
}

// An exec marks the record superseded, and one that failed takes the mark back; a process that
// shares the region without owning it (a vfork child; here a child forked without the handlers)
// marks nothing.
TEST(RecordRegion, AnExecMarksTheRecordOnlyInItsOwnProcessAndAFailedOneTakesItBack) {
  TheTables();
  const pid_t child = fork();  // no handlers: it shares its parent's region, as a vfork child
  if (child == 0) _exit(RecordExecBegins() ? 1 : 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child marked its parent's record";
  EXPECT_FALSE(Read(RegionBytes()).executed);
  ASSERT_TRUE(RecordExecBegins());
  const dump::RecordReading marked = Read(RegionBytes());
  EXPECT_TRUE(marked.executed);
  EXPECT_FALSE(marked.exit_reported);
  RecordExecFailed();
  EXPECT_FALSE(Read(RegionBytes()).executed);
}

// dlclose on several threads at once: each update retires the lists before it, and exactly one
// list is left live (two updates at once could both retire, and unmap, the same older list).
TEST(RecordRegion, ModuleListUpdatesOnManyThreadsLeaveExactlyOneList) {
  TheTables();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 100; ++i) RecordModules();
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<uint8_t> bytes = RegionBytes();
  ASSERT_GE(bytes.size(), sizeof(record::Header));
  const auto* header = reinterpret_cast<const record::Header*>(bytes.data());
  int live_lists = 0;
  for (uint64_t i = 0; i < header->extent_high && i < record::kExtentCapacity; ++i) {
    const record::Extent& row = header->extents[i];
    live_lists += row.state == record::kLive && row.kind == record::kModules ? 1 : 0;
  }
  EXPECT_EQ(live_lists, 1);
}

// In a process of its own (a death test re-runs this binary: a region of its own, at 498).
class RecordRegionAlone : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

int OwnFileAtTheRegionsDescriptor() {
  void* first = RecordMap(4096, record::kAllocationSlots, 1);
  if (first == nullptr) return 1;
  char path[] = "/tmp/record_test_own_XXXXXX";
  const int own = mkstemp(path);
  if (own < 0) return 2;
  unlink(path);
  std::string data(10000, 'u');
  if (write(own, data.data(), data.size()) != static_cast<ssize_t>(data.size())) return 3;
  if (dup2(own, record::kDescriptor) != record::kDescriptor) return 4;
  RecordUnmap(first, 4096);                                        // would punch a hole
  void* second = RecordMap(1 << 20, record::kAllocationSlots, 2);  // would truncate
  if (second == nullptr) return 5;
  std::memset(second, 1, 1 << 20);
  struct stat st;
  std::string back(data.size(), '\0');
  if (fstat(record::kDescriptor, &st) != 0 || st.st_size != 10000) return 6;
  if (pread(record::kDescriptor, back.data(), back.size(), 0) != 10000 || back != data) {
    return 7;
  }
  return 0;
}

// The program closes descriptor 498 and opens a file of its own there: the checker must never
// truncate it or punch holes in it; its tables go on in its own memory.
TEST_F(RecordRegionAlone, AFileOfTheProgramsOwnAtTheRegionsDescriptorIsNeverTouched) {
  EXPECT_EXIT(_exit(OwnFileAtTheRegionsDescriptor()), ::testing::ExitedWithCode(0), "");
}

int FileSizeLimitBelowTheRegion() {
  if (RecordMap(4096, record::kAllocationSlots, 1) == nullptr) return 1;
  struct stat st;
  if (fstat(record::kDescriptor, &st) != 0) return 2;
  struct rlimit limit = {static_cast<rlim_t>(st.st_size) + 65536, RLIM_INFINITY};
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 3;
  void* big = RecordMap(1 << 20, record::kAllocationSlots, 2);
  if (big == nullptr) return 4;
  std::memset(big, 1, 1 << 20);
  const dump::RecordReading reading = Read(RegionBytes());
  bool said = false;
  for (const std::string& p : reading.problems) said |= p.find("kept out") != std::string::npos;
  return said ? 0 : 5;
}

// Under `ulimit -f` smaller than the region would grow, ftruncate would raise SIGXFSZ (killing the
// program): the pieces past the limit are the process's own memory, and the record says so.
TEST_F(RecordRegionAlone, AFileSizeLimitBelowTheRegionNeitherKillsTheProgramNorHidesTheLoss) {
  EXPECT_EXIT(_exit(FileSizeLimitBelowTheRegion()), ::testing::ExitedWithCode(0), "");
}

TEST(RecordRegion, ARegionCutAnywhereOrCorruptedIsReadWithoutACrash) {
  Tables& t = TheTables();
  const uint32_t stack = InternSiteStack(4);
  for (uint64_t i = 0; i < 500; ++i) t.allocations.Insert(0x7300000000 + i * 64, 5, stack, 0, i);
  const std::vector<uint8_t> whole = RegionBytes();
  ASSERT_GT(whole.size(), record::kHeaderBytes);
  // Cut: at every byte of the header and the directory's first rows, then at 300 places.
  const size_t step = whole.size() / 300 + 1;
  for (size_t cut = 0; cut < whole.size(); cut += cut < 2048 ? 1 : step) {
    const dump::RecordReading reading = dump::ReadRecord(whole.data(), cut, "killed by SIGKILL");
    if (cut >= offsetof(record::Header, extents)) EXPECT_TRUE(reading.begun) << cut;
    if (cut < whole.size() / 2 && reading.begun) EXPECT_FALSE(reading.problems.empty()) << cut;
  }
  // Corrupt: random bytes written over the header and directory, and over the tables (each
  // round on the whole region, its bytes put back after).
  std::mt19937_64 random(17);
  std::vector<uint8_t> bad = whole;
  for (int round = 0; round < 1000; ++round) {
    const size_t span = round % 2 == 0 ? record::kHeaderBytes : bad.size();
    std::vector<size_t> changed;
    for (int k = 0; k < 1 + round % 16; ++k) {
      const size_t at = random() % span;
      const size_t width = 1 + random() % 8;
      for (size_t b = at; b < at + width && b < bad.size(); ++b) {
        bad[b] = static_cast<uint8_t>(random());
        changed.push_back(b);
      }
    }
    const dump::RecordReading reading = Read(bad);
    for (const dump::DumpStack& s : reading.dump.stacks) {
      EXPECT_LE(s.frames.size(), static_cast<size_t>(record::kMaxStackFrames));
      for (const dump::DumpFrame& f : s.frames) {
        EXPECT_TRUE(f.module == dump::kUnknownModule || f.module < reading.dump.modules.size());
      }
    }
    for (size_t b : changed) bad[b] = whole[b];
  }
  // A directory row pointing past the region's end is said, not followed.
  std::vector<uint8_t> wild = whole;
  record::Extent row;
  std::memcpy(&row, wild.data() + offsetof(record::Header, extents), sizeof(row));
  ASSERT_EQ(row.state, record::kLive);
  row.offset = wild.size();
  std::memcpy(wild.data() + offsetof(record::Header, extents), &row, sizeof(row));
  const dump::RecordReading reading = Read(wild);
  ASSERT_FALSE(reading.problems.empty());
  EXPECT_NE(reading.problems.front().find("out of the region"), std::string::npos)
      << reading.problems.front();
  // Not a region at all.
  const std::vector<uint8_t> zeros(8192, 0);
  EXPECT_FALSE(Read(zeros).begun);
  for (uint64_t i = 0; i < 500; ++i) t.allocations.Remove(0x7300000000 + i * 64);
}

// The fuzzer's seed (tests/fuzz/corpus/record/), a region written by hand from record_format.h:
// its two blocks, their stacks through the id chunk and the nodes, the module and the thread.
std::vector<uint8_t> SeedBytes() {
  std::vector<uint8_t> bytes(1 << 20);
  std::FILE* f = std::fopen(RECORD_SEED, "rb");
  if (f == nullptr) return {};
  bytes.resize(std::fread(bytes.data(), 1, bytes.size(), f));
  std::fclose(f);
  return bytes;
}

TEST(RecordRegion, TheFuzzSeedReadsAsTheRegionItDescribes) {
  const std::vector<uint8_t> bytes = SeedBytes();
  ASSERT_FALSE(bytes.empty());
  const dump::RecordReading reading = Read(bytes);
  ASSERT_TRUE(reading.begun);
  EXPECT_TRUE(reading.problems.empty()) << reading.problems.front();
  const dump::DumpContents& d = reading.dump;
  EXPECT_EQ(d.process.pid, 4242);
  EXPECT_EQ(d.process.program, "/bin/program");
  EXPECT_EQ(d.summary.peak_bytes, 500u);  // the header's peak, above the 300 bytes live
  // The header's untracked allocations (record format 4).
  EXPECT_EQ(d.summary.untracked.refused, 2u);
  EXPECT_EQ(d.summary.untracked.no_memory, 1u);
  EXPECT_EQ(d.summary.untracked.bytes, 4100u);
  ASSERT_EQ(d.blocks.size(), 2u);
  EXPECT_EQ(d.blocks[0].size + d.blocks[1].size, 300u);
  ASSERT_EQ(d.stacks.size(), 2u);
  ASSERT_EQ(d.stacks[0].frames.size(), 2u);
  ASSERT_EQ(d.modules.size(), 1u);
  EXPECT_EQ(d.modules[0].path, "/bin/program");
  EXPECT_EQ(d.stacks[0].frames[1].offset, 0x401101u);
  EXPECT_EQ(d.stacks[1].frames[0].module, dump::kUnknownModule);  // outside every module
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].name, "main");
  EXPECT_EQ(d.threads[0].peak_bytes, 300u);
}

// A region of record format version 2 (32-byte slots, before issue 18) is refused with a line
// saying so, never read as packed slots.
TEST(RecordRegion, ARegionOfTheOldFormatIsRefusedAndSaysWhy) {
  std::vector<uint8_t> bytes = SeedBytes();
  ASSERT_FALSE(bytes.empty());
  const uint32_t old_version = 2;
  std::memcpy(bytes.data() + offsetof(record::Header, version), &old_version, sizeof(old_version));
  const dump::RecordReading reading = Read(bytes);
  EXPECT_TRUE(reading.begun);
  EXPECT_TRUE(reading.dump.blocks.empty());
  ASSERT_EQ(reading.problems.size(), 1u);
  EXPECT_NE(reading.problems[0].find("a record of version 2"), std::string::npos)
      << reading.problems[0];
  EXPECT_NE(reading.problems[0].find("reads version " + std::to_string(record::kVersion)),
            std::string::npos)
      << reading.problems[0];
}

}  // namespace
}  // namespace stackwalk::leakcheck
