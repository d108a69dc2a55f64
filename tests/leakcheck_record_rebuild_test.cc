// A program killed while a live-table shard is rebuilt (leakcheck/allocation_table.h, Resize):
// for a while both the old slots and the new, partly filled, are listed in the record region
// (leakcheck/record_format.h). A process of its own records into a memfd as the launcher hands
// one over and dies by SIGKILL at a chosen instant of a rebuild (AllocationTable's rebuild
// probe); the region is then read as the launcher reads it (leakcheck/dump/record_read.h), and
// every block the process had recorded is listed exactly once, none lost, none twice.
// This binary itself never records (no region is handed to it): only the writers it forks do.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "leakcheck/allocation_slot.h"
#include "leakcheck/allocation_table.h"
#include "leakcheck/dump/record_read.h"
#include "leakcheck/record_format.h"
#include "leakcheck/record_region.h"

namespace stackwalk::leakcheck {
namespace {

using Step = AllocationTable::RebuildStep;

// Where in a rebuild the writer dies: at `step`; for kCopied, after the first block copied, half
// of them or all (the old slots still listed: every block in both tables).
enum class Copied { kNone, kFirst, kHalf, kAll };
struct Stop {
  Step step;
  Copied copied;
  const char* name;
};
void PrintTo(const Stop& stop, std::ostream* out) { *out << stop.name; }

// A rebuild of a shard holding at least this many blocks: one well into the run, not a first.
constexpr uint64_t kOldLive = 1000;
constexpr uint64_t kBase = sizeof(uintptr_t) == 8 ? 0x7000000000 : 0x70000000;  // arm32 too

uint64_t BlockAddress(uint64_t i) { return kBase + i * 64; }
uint64_t BlockSize(uint64_t i) { return 100 + i % 7; }

// The writer's state, for the probe (a process of its own: globals are its alone).
Stop g_stop;
int g_tell = -1;                    // where the writer says how many blocks it had recorded
volatile uint64_t g_recorded = 0;  // Inserts returned so far

void DieHere() {
  const uint64_t recorded = g_recorded;
  if (write(g_tell, &recorded, sizeof(recorded)) != sizeof(recorded)) _exit(4);
  raise(SIGKILL);
}

void Probe(Step step, uint64_t copied, uint64_t live) {
  if (live < kOldLive || step != g_stop.step) return;
  if (step != Step::kCopied) return DieHere();
  const uint64_t at = g_stop.copied == Copied::kFirst ? 1
                      : g_stop.copied == Copied::kHalf ? live / 2
                                                       : live;
  if (copied == at) DieHere();
}

// In the forked writer: takes up `region` as the checked program takes up the launcher's
// (descriptor 498, named by the environment with this process's pid), then records blocks until
// the probe ends it.
[[noreturn]] void Write(int region, const Stop& stop, int tell) {
  if (dup2(region, record::kDescriptor) != record::kDescriptor) _exit(2);
  setenv(record::kDescriptorVariable, std::to_string(record::kDescriptor).c_str(), 1);
  setenv("STACKWALK_LEAKCHECK_PID", std::to_string(getpid()).c_str(), 1);
  RecordModules();  // as the preload does at start: the region is complete but for the tables
  g_stop = stop;
  g_tell = tell;
  AllocationTable::SetRebuildProbe(Probe);
  static AllocationTable table;
  for (uint64_t i = 0; i < (uint64_t{1} << 20); ++i) {
    if (!table.Insert(BlockAddress(i), BlockSize(i), 0, 0, i)) _exit(3);
    g_recorded = i + 1;
  }
  _exit(5);  // never stopped
}

std::vector<uint8_t> ReadAll(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n =
        pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return bytes;
}

// The blocks in the live-table slots the region lists, every copy counted: more than the blocks
// recorded if the writer died with a block in two tables.
uint64_t ListedCopies(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < record::kHeaderBytes) return 0;
  const auto* header = reinterpret_cast<const record::Header*>(bytes.data());
  uint64_t copies = 0;
  for (uint64_t i = 0; i < header->extent_high && i < record::kExtentCapacity; ++i) {
    const record::Extent& row = header->extents[i];
    if (row.state != record::kLive || row.kind != record::kAllocationSlots ||
        row.offset + row.bytes > bytes.size()) {
      continue;
    }
    const auto* slots = reinterpret_cast<const record::AllocationSlot*>(bytes.data() + row.offset);
    for (uint64_t k = 0; k < row.bytes / sizeof(record::AllocationSlot); ++k) {
      copies += SlotEmpty(slots[k]) ? 0 : 1;
    }
  }
  return copies;
}

class KilledMidRebuild : public ::testing::TestWithParam<Stop> {};

TEST_P(KilledMidRebuild, TheLauncherReadsEveryRecordedBlockExactlyOnce) {
  const Stop stop = GetParam();
  const int region = memfd_create("record_rebuild_test", 0);
  ASSERT_GE(region, 0);
  int tell[2];
  ASSERT_EQ(pipe(tell), 0);
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    close(tell[0]);
    Write(region, stop, tell[1]);
  }
  close(tell[1]);
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer was not killed in a rebuild (status " << status << ")";
  uint64_t recorded = 0;
  ASSERT_EQ(read(tell[0], &recorded, sizeof(recorded)), static_cast<ssize_t>(sizeof(recorded)));
  close(tell[0]);
  ASSERT_GT(recorded, kOldLive);

  const std::vector<uint8_t> bytes = ReadAll(region);
  close(region);
  // The instant asked for: with blocks copied and the old slots still listed, some are in both.
  const uint64_t copies = ListedCopies(bytes);
  if (stop.step == Step::kCopied) {
    EXPECT_GT(copies, recorded) << "no block was in two tables at the kill";
  } else {
    EXPECT_EQ(copies, recorded);
  }
  const dump::RecordReading reading =
      dump::ReadRecord(bytes.data(), bytes.size(), "killed by SIGKILL");
  ASSERT_TRUE(reading.begun);
  EXPECT_TRUE(reading.problems.empty()) << reading.problems.front();
  std::map<uint64_t, int> listed;
  for (const dump::DumpBlock& b : reading.dump.blocks) {
    ++listed[b.address];
    const uint64_t i = (b.address - kBase) / 64;
    ASSERT_TRUE(b.address >= kBase && (b.address - kBase) % 64 == 0 && i < recorded)
        << "a block never recorded: " << std::hex << b.address;
    EXPECT_EQ(b.size, BlockSize(i));
    EXPECT_EQ(b.sequence, i);
  }
  uint64_t lost = 0, twice = 0;
  for (uint64_t i = 0; i < recorded; ++i) {
    const auto it = listed.find(BlockAddress(i));
    const int times = it == listed.end() ? 0 : it->second;
    lost += times == 0 ? 1 : 0;
    twice += times > 1 ? 1 : 0;
  }
  EXPECT_EQ(lost, 0u) << "of " << recorded << " blocks recorded";
  EXPECT_EQ(twice, 0u) << "of " << recorded << " blocks recorded";
  EXPECT_EQ(reading.dump.summary.live_allocations, recorded);
}

INSTANTIATE_TEST_SUITE_P(
    RecordRegion, KilledMidRebuild,
    ::testing::Values(Stop{Step::kListed, Copied::kNone, "NewSlotsListedEmpty"},
                      Stop{Step::kCopied, Copied::kFirst, "FirstBlockCopied"},
                      Stop{Step::kCopied, Copied::kHalf, "HalfTheBlocksCopied"},
                      Stop{Step::kCopied, Copied::kAll, "EveryBlockCopiedOldStillListed"},
                      Stop{Step::kRetired, Copied::kNone, "OldSlotsRetired"}),
    [](const ::testing::TestParamInfo<Stop>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace stackwalk::leakcheck
