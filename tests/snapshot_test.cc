// The crash snapshot's writer and reader (issue 20): a snapshot of this thread written by the
// crash handler's writer from a real ucontext, read back field by field and walked over its
// stack bytes alone; then the same snapshot cut at every byte and randomly corrupted, read and
// walked: never a crash, never a silent success. (The crash itself and the comparison with the
// handler's report: snapshot_dump_test.py.)
#include <elf.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/module_map.h"
#include "core/snapshot_format.h"
#include "crash/snapshot_writer.h"
#include "gtest/gtest.h"
#include "remote/remote_walk.h"
#include "remote/snapshot_memory.h"
#include "remote/snapshot_reader.h"
#include "remote/target_modules.h"

namespace stackwalk::internal {
namespace {

// The bytes WriteCrashSnapshot writes for `uc` with `stack_bytes`, through a memfd.
std::vector<unsigned char> SnapshotOf(ucontext_t* uc, size_t stack_bytes, SnapshotWritten* w) {
  int fd = memfd_create("snapshot_test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  siginfo_t info{};
  info.si_signo = SIGSEGV;
  info.si_code = SEGV_MAPERR;
  *w = WriteCrashSnapshot(fd, SIGSEGV, &info, uc, stack_bytes);
  std::vector<unsigned char> bytes(static_cast<size_t>(lseek(fd, 0, SEEK_END)));
  EXPECT_EQ(pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return bytes;
}

TargetWalk WalkSnapshot(const Snapshot& snap, const TargetModules& modules) {
  SnapshotMemory memory(snap.stack_address, snap.stack);
  TargetWalk walk;
  std::string error;
  WalkSnapshotThread(snap.machine, snap.word_size, snap.registers, snap.register_mask, memory,
                     modules, 64, &walk, &error);
  return walk;
}

__attribute__((noinline)) std::vector<unsigned char> CaptureHere(size_t stack_bytes,
                                                                 ucontext_t* uc,
                                                                 SnapshotWritten* w) {
  getcontext(uc);
  auto bytes = SnapshotOf(uc, stack_bytes, w);
  __asm__ volatile("" ::: "memory");
  return bytes;
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override { ModuleMap::Global().RefreshIfChanged(); }
};

TEST_F(SnapshotTest, WrittenFromAContextReadsBackAndWalks) {
  ucontext_t uc;
  SnapshotWritten w;
  std::vector<unsigned char> bytes = CaptureHere(64 * 1024, &uc, &w);
  ASSERT_EQ(w.error, 0);
  EXPECT_EQ(w.bytes, bytes.size());
  Snapshot snap = ReadSnapshot(bytes.data(), bytes.size());
  ASSERT_TRUE(snap.complete) << snap.error;
  EXPECT_EQ(snap.error, "");
  EXPECT_EQ(snap.version, kSnapshotVersion);
  EXPECT_EQ(snap.word_size, sizeof(void*));
  EXPECT_EQ(snap.pid, getpid());
  EXPECT_EQ(snap.signal, SIGSEGV);
  EXPECT_EQ(snap.code, SEGV_MAPERR);
  NativeRegs regs;
  RegsFromUcontext(&uc, &regs);
  ASSERT_EQ(snap.registers.size(), static_cast<size_t>(NativeArch::kNumRegs));
  EXPECT_EQ(snap.register_mask, regs.valid_mask());
  EXPECT_EQ(snap.registers[NativeArch::kPc], regs.pc());
  EXPECT_EQ(snap.stack_address, regs.sp());
  EXPECT_EQ(snap.stack.size(), w.stack_bytes);
  EXPECT_GT(snap.stack.size(), 1024u);
  EXPECT_LE(snap.stack.size(), 64u * 1024);
  // The main executable by its real path (glibc names it "").
  char exe[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  int mains = 0;
  for (const SnapshotModule& m : snap.modules) {
    if (m.is_main) {
      ++mains;
      EXPECT_EQ(m.path, exe);
      EXPECT_FALSE(m.exec.empty());
    }
  }
  EXPECT_EQ(mains, 1);
  EXPECT_EQ(static_cast<int>(snap.modules.size()), w.modules);
  // Walked from its bytes alone: out of CaptureHere, through the test body, into gtest.
  auto modules = TargetModules::FromSnapshot(snap.modules, snap.machine, "", "");
  TargetWalk walk = WalkSnapshot(snap, *modules);
  ASSERT_GE(walk.frames.size(), 4u) << EndName(walk.end);
  EXPECT_EQ(walk.frames[0].pc, regs.pc());
  for (size_t i = 1; i < walk.frames.size(); ++i) {
    EXPECT_NE(modules->Find(walk.frames[i].pc), nullptr) << "frame " << i;
  }
}

// The objects' tables are read into memory, never mapped: a file truncated while the tool holds
// its tables (a copy still being written, a sysroot being updated) cannot fault the walk with
// SIGBUS; one truncated before it is read gives fewer frames, not a crash.
TEST_F(SnapshotTest, AnObjectFileTruncatedUnderTheWalkCannotFaultIt) {
  ucontext_t uc;
  SnapshotWritten w;
  std::vector<unsigned char> bytes = CaptureHere(64 * 1024, &uc, &w);
  ASSERT_EQ(w.error, 0);
  Snapshot snap = ReadSnapshot(bytes.data(), bytes.size());
  ASSERT_TRUE(snap.complete) << snap.error;
  std::string exe;
  for (const SnapshotModule& m : snap.modules) {
    if (m.is_main) exe = m.path;
  }
  ASSERT_FALSE(exe.empty());
  // The executable copied under a sysroot of the test's own, the other objects linked there.
  char root_template[] = "/tmp/snapshot_test.XXXXXX";
  ASSERT_NE(mkdtemp(root_template), nullptr);
  const std::filesystem::path root(root_template);
  for (const SnapshotModule& m : snap.modules) {
    if (m.path.empty() || m.path[0] != '/' || !std::filesystem::is_regular_file(m.path)) continue;
    const std::filesystem::path at = root / m.path.substr(1);
    std::filesystem::create_directories(at.parent_path());
    if (m.path == exe) {
      std::filesystem::copy_file(exe, at);
    } else if (!std::filesystem::exists(at)) {
      std::filesystem::create_symlink(m.path, at);
    }
  }
  const std::filesystem::path copy = root / exe.substr(1);

  auto modules = TargetModules::FromSnapshot(snap.modules, snap.machine, root.string(), "");
  const TargetWalk whole = WalkSnapshot(snap, *modules);
  ASSERT_GE(whole.frames.size(), 4u) << EndName(whole.end);
  ASSERT_EQ(std::filesystem::file_size(copy) > 8192, true);
  std::filesystem::resize_file(copy, 4096);  // its tables' pages are past the end now
  const TargetWalk again = WalkSnapshot(snap, *modules);
  ASSERT_EQ(again.frames.size(), whole.frames.size());
  for (size_t i = 0; i < whole.frames.size(); ++i) EXPECT_EQ(again.frames[i].pc, whole.frames[i].pc);

  auto truncated = TargetModules::FromSnapshot(snap.modules, snap.machine, root.string(), "");
  const TargetModule* main_module = truncated->Find(snap.registers[NativeArch::kPc]);
  ASSERT_NE(main_module, nullptr);
  EXPECT_FALSE(main_module->has_eh_frame) << "its .eh_frame is past the truncation";
  EXPECT_LE(WalkSnapshot(snap, *truncated).frames.size(), whole.frames.size());
  std::filesystem::remove_all(root);
}

TEST_F(SnapshotTest, EveryTruncationIsAnErrorNeverACrash) {
  ucontext_t uc;
  SnapshotWritten w;
  std::vector<unsigned char> bytes = CaptureHere(1024, &uc, &w);
  ASSERT_EQ(w.error, 0);
  Snapshot full = ReadSnapshot(bytes.data(), bytes.size());
  ASSERT_TRUE(full.complete) << full.error;
  auto modules = TargetModules::FromSnapshot(full.modules, full.machine, "", "");
  const size_t full_frames = WalkSnapshot(full, *modules).frames.size();
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A copy of exactly n bytes, so that ASan sees any read past them.
    std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    Snapshot snap = ReadSnapshot(cut.data(), cut.size());
    ASSERT_FALSE(snap.complete) << n;
    ASSERT_NE(snap.error, "") << n;
    EXPECT_LE(snap.stack.size(), full.stack.size());
    if (snap.has_registers && snap.has_stack) {
      EXPECT_LE(WalkSnapshot(snap, *modules).frames.size(), full_frames) << n;
    }
  }
}

TEST_F(SnapshotTest, RandomCorruptionIsReadAndWalkedSafely) {
  ucontext_t uc;
  SnapshotWritten w;
  std::vector<unsigned char> bytes = CaptureHere(2048, &uc, &w);
  ASSERT_EQ(w.error, 0);
  Snapshot full = ReadSnapshot(bytes.data(), bytes.size());
  auto modules = TargetModules::FromSnapshot(full.modules, full.machine, "", "");
  std::mt19937 random(20);
  int errors = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<unsigned char> bad = bytes;
    const int flips = 1 + static_cast<int>(random() % 8);
    for (int i = 0; i < flips; ++i) bad[random() % bad.size()] = static_cast<unsigned char>(random());
    Snapshot snap = ReadSnapshot(bad.data(), bad.size());
    if (!snap.error.empty()) ++errors;
    // Either it parsed whole or it says why not.
    EXPECT_EQ(snap.complete, snap.error.empty()) << round;
    if (snap.has_registers && snap.has_stack) {
      // Corrupt lists of objects too, looked for under a root that has none of them.
      auto listed = TargetModules::FromSnapshot(snap.modules, snap.machine,
                                                "/nonexistent-snapshot-root", "");
      EXPECT_LE(WalkSnapshot(snap, *modules).frames.size(), 64u);
      EXPECT_LE(WalkSnapshot(snap, *listed).frames.size(), 64u);
    }
  }
  EXPECT_GT(errors, 0);  // the header and section framing are checked
}

TEST(SnapshotReaderTest, ClearErrors) {
  EXPECT_NE(ReadSnapshot(nullptr, 0).error.find("truncated"), std::string::npos);
  unsigned char junk[64] = {'E', 'L', 'F'};
  EXPECT_NE(ReadSnapshot(junk, sizeof(junk)).error.find("not a stackwalk crash snapshot"),
            std::string::npos);
  SnapshotFileHeader h{};
  std::memcpy(h.magic, kSnapshotMagic, sizeof(h.magic));
  h.version = 2;
  h.byte_order = kSnapshotByteOrder;
  h.machine = EM_X86_64;
  h.word_size = 8;
  Snapshot s = ReadSnapshot(reinterpret_cast<unsigned char*>(&h), sizeof(h));
  EXPECT_NE(s.error.find("format version 2"), std::string::npos) << s.error;
  h.version = kSnapshotVersion;
  s = ReadSnapshot(reinterpret_cast<unsigned char*>(&h), sizeof(h));
  EXPECT_NE(s.error.find("no end section"), std::string::npos) << s.error;
  EXPECT_EQ(MachineName(EM_AARCH64), "aarch64");
}

}  // namespace
}  // namespace stackwalk::internal
