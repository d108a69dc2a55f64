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
#include "exidx/exidx_table.h"
#include "gtest/gtest.h"
#include "remote/object_bytes.h"
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

// A crafted ELF64 object of 5 MiB: 65535 PT_NOTE headers at 1 MiB, each note `note_size` bytes
// at its own offset below them (8 bytes apart: no note inside another's range or the headers'),
// written to a temporary file whose path is returned.
constexpr uint64_t kNotesHeaders = uint64_t{1} << 20;
std::string CraftedNotesObject(uint64_t note_size) {
  constexpr uint64_t kFileSize = uint64_t{5} << 20;
  constexpr uint16_t kNotes = 65535;
  std::vector<unsigned char> bytes(kFileSize);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = kNotesHeaders;
  eh.e_ehsize = sizeof(eh);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = kNotes;
  std::memcpy(bytes.data(), &eh, sizeof(eh));
  for (uint64_t i = 0; i < kNotes; ++i) {
    Elf64_Phdr ph{};
    ph.p_type = PT_NOTE;
    ph.p_offset = i * 8;
    ph.p_filesz = note_size;
    EXPECT_LE(ph.p_offset + ph.p_filesz, kFileSize);
    std::memcpy(bytes.data() + kNotesHeaders + i * sizeof(ph), &ph, sizeof(ph));
  }
  char path[] = "/tmp/snapshot_test_notes.XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

std::unique_ptr<TargetModules> ListCrafted(const std::string& path) {
  SnapshotModule listed;
  listed.path = path;
  listed.extent = {0x10000, 0x20000};
  return TargetModules::FromSnapshot({listed}, EM_X86_64, "", "");
}

TEST(ObjectBudgetTest, HugeNotesAreSkippedNotReadAgainAndAgain) {
  // 65535 notes of 2 MiB each: 128 GiB of reads before notes past 64 KiB were skipped.
  const std::string path = CraftedNotesObject(uint64_t{2} << 20);
  auto modules = ListCrafted(path);
  ASSERT_EQ(modules->modules().size(), 1u);
  const TargetModule& m = modules->modules()[0];
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.file, path);
  EXPECT_EQ(m.build_id, "");
  // The ELF header and the program headers (3.7 MB), nothing of the notes.
  EXPECT_EQ(modules->bytes_held(), sizeof(Elf64_Ehdr) + uint64_t{65535} * sizeof(Elf64_Phdr));
  unlink(path.c_str());
}

TEST(ObjectBudgetTest, ManySmallNotesStopAtTheBudgetWithAClearError) {
  // 65535 notes of 64 KiB at distinct offsets: 4 GiB of reads, refused past the budget.
  const std::string path = CraftedNotesObject(uint64_t{64} << 10);
  std::string error;
  std::unique_ptr<ObjectBytes> file = ObjectBytes::Open(path, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(file->budget(), 2 * file->size() + (uint64_t{1} << 20));
  uint64_t i = 0;
  while (file->Read(i * 8, uint64_t{64} << 10) != nullptr) ++i;
  EXPECT_TRUE(file->over_budget());
  EXPECT_LT(i, 65535u);
  EXPECT_LE(file->bytes_held(), file->budget());
  EXPECT_GT(file->bytes_held(), file->budget() - (uint64_t{64} << 10));
  // A range read before is still served past the budget.
  EXPECT_NE(file->Read(8, 16), nullptr);

  auto modules = ListCrafted(path);
  ASSERT_EQ(modules->modules().size(), 1u);
  const TargetModule& m = modules->modules()[0];
  EXPECT_NE(m.error.find("refused past that"), std::string::npos) << m.error;
  EXPECT_EQ(m.file, "");
  EXPECT_EQ(modules->bytes_held(), 0u);  // the refused file is not kept
  unlink(path.c_str());
}

// An arm32 object whose bias wraps: loaded at 0xffff0000 + link-time 0x20000 = 0x10000 in the
// target's 32-bit arithmetic. Its index (two functions, EXIDX_CANTUNWIND) found by the target's
// PCs, with the target's function starts; stored zero-extended, the sums were 0x1'0001'xxxx.
TEST(Arm32BiasTest, ABiasThatWrapsGivesTheTargets32BitAddresses) {
  std::vector<unsigned char> bytes(0x1000);
  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_ARM;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(eh);
  eh.e_ehsize = sizeof(eh);
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = 2;
  std::memcpy(bytes.data(), &eh, sizeof(eh));
  Elf32_Phdr load{}, exidx{};
  load.p_type = PT_LOAD;
  load.p_vaddr = 0x20000;
  load.p_filesz = load.p_memsz = 0x1000;
  load.p_flags = PF_R | PF_X;
  exidx.p_type = PT_ARM_EXIDX;
  exidx.p_offset = 0x100;
  exidx.p_vaddr = 0x20100;
  exidx.p_filesz = exidx.p_memsz = 16;
  std::memcpy(bytes.data() + sizeof(eh), &load, sizeof(load));
  std::memcpy(bytes.data() + sizeof(eh) + sizeof(load), &exidx, sizeof(exidx));
  // prel31 offsets from each entry to its function: 0x20400 and 0x20800.
  const uint32_t index[4] = {0x20400 - 0x20100, 1, 0x20800 - 0x20108, 1};
  std::memcpy(bytes.data() + 0x100, index, sizeof(index));
  char path[] = "/tmp/snapshot_test_arm32.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);

  SnapshotModule listed;
  listed.path = path;
  listed.load_bias = 0xffff0000;  // the target's dlpi_addr, zero-extended
  listed.extent = {0x10000, 0x11000};
  listed.exec = {listed.extent};
  auto modules = TargetModules::FromSnapshot({listed}, EM_ARM, "", "");
  unlink(path);
  ASSERT_EQ(modules->modules().size(), 1u);
  const TargetModule& m = modules->modules()[0];
  ASSERT_EQ(m.error, "");
  ASSERT_TRUE(m.has_exidx);
  EXPECT_EQ(m.LinkTimeAddress(0x10804), 0x20804u);
  ExidxSection section;
  ASSERT_TRUE(modules->FindExidx(0x10804, &section));
  uint64_t entry = 0, start = 0;
  ASSERT_EQ(FindExidxEntry(section, 0x10804, &entry, &start), ExidxError::kOk);
  EXPECT_EQ(start, 0x10800u);
  ASSERT_EQ(FindExidxEntry(section, 0x107fe, &entry, &start), ExidxError::kOk);
  EXPECT_EQ(start, 0x10400u);
  EXPECT_EQ(FindExidxEntry(section, 0x103fe, &entry, &start), ExidxError::kNoEntry);
  uint64_t personality;
  EhabiOpcodes ops;
  EXPECT_EQ(DecodeExidxEntry(section, entry, &personality, &ops), ExidxError::kCantUnwind);
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
