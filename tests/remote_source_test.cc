// The remote source (src/remote) against a forked child, whose address space is a copy of this
// process's: RemoteMemory reads the child's bytes (not ours, which change after the fork) and
// refuses every address outside its mappings, through process_vm_readv and through /proc/PID/mem;
// TargetModules finds each object at the load bias the loader gave it here and its tables give
// the same FDE ranges as the in-process locator's for the same PCs.
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "core/module_map.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/eh_frame_hdr.h"
#include "ehframe/native_locator.h"
#include "gtest/gtest.h"
#include "remote/remote_memory.h"
#include "remote/target_modules.h"

namespace stackwalk::internal {
namespace {

constexpr size_t kPage = 4096;

// A child that sleeps until killed; its address space is this process's at the fork.
class Child {
 public:
  Child() {
    pid_ = fork();
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~Child() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Three readable pages with a pattern, then a PROT_NONE page.
struct PatternPages {
  PatternPages() {
    void* p = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bytes = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < 3 * kPage; ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    mprotect(bytes + 3 * kPage, kPage, PROT_NONE);
  }
  ~PatternPages() { munmap(bytes, 4 * kPage); }
  uint64_t at(size_t offset) const { return reinterpret_cast<uintptr_t>(bytes) + offset; }
  unsigned char* bytes;
};

class RemoteMemoryTest : public ::testing::TestWithParam<bool> {};

TEST_P(RemoteMemoryTest, ReadsTheChildsBytesInsideItsMappingsOnly) {
  PatternPages pages;
  Child child;
  // Ours change; the child's copy keeps the pattern.
  std::memset(pages.bytes, 0xee, 3 * kPage);
  auto modules = TargetModules::Read(child.pid());
  ASSERT_TRUE(modules.ok()) << modules.status();
  RemoteMemory memory(child.pid(), (*modules)->readable());
  if (GetParam()) memory.UseProcMemForTesting();

  unsigned char got[3 * kPage];
  // Across two page boundaries, from the middle of the first page to the end of the mapping.
  ASSERT_TRUE(memory.Read(pages.at(100), got, 3 * kPage - 100));
  for (size_t i = 100; i < 3 * kPage; ++i) {
    ASSERT_EQ(got[i - 100], static_cast<unsigned char>(i * 7 + 1)) << "byte " << i;
  }
  uint64_t word = 0;
  ASSERT_TRUE(memory.Read(pages.at(kPage - 4), &word, 8));  // straddles a page
  uint64_t want;
  unsigned char pattern[8];
  for (int i = 0; i < 8; ++i) pattern[i] = static_cast<unsigned char>((kPage - 4 + i) * 7 + 1);
  std::memcpy(&want, pattern, 8);
  EXPECT_EQ(word, want);
  EXPECT_GE(memory.RegionOf(pages.at(0)), 0);
  EXPECT_EQ(memory.RegionOf(pages.at(0)), memory.RegionOf(pages.at(3 * kPage - 1)));

  // Refused: the PROT_NONE page, a read running into it, address 0, the top of the space.
  EXPECT_EQ(memory.RegionOf(pages.at(3 * kPage)), -1);
  EXPECT_FALSE(memory.Read(pages.at(3 * kPage), &word, 8));
  EXPECT_FALSE(memory.Read(pages.at(3 * kPage - 4), &word, 8));
  EXPECT_FALSE(memory.Read(0, &word, 8));
  EXPECT_FALSE(memory.Read(~uint64_t{0} - 3, &word, 8));
  EXPECT_EQ(memory.used_proc_mem(), GetParam());
  EXPECT_GT(memory.page_reads(), 0u);
}

TEST_P(RemoteMemoryTest, APageUnmappedSinceTheMapsWereReadFails) {
  PatternPages pages;
  Child child;
  auto modules = TargetModules::Read(child.pid());
  ASSERT_TRUE(modules.ok()) << modules.status();
  RemoteMemory memory(child.pid(), (*modules)->readable());
  if (GetParam()) memory.UseProcMemForTesting();
  // The child is gone: its pages with it. The maps we hold still list them.
  kill(child.pid(), SIGKILL);
  while (kill(child.pid(), 0) == 0 && waitpid(child.pid(), nullptr, WNOHANG) == 0) usleep(1000);
  uint64_t word;
  EXPECT_FALSE(memory.Read(pages.at(0), &word, 8));
}

INSTANTIATE_TEST_SUITE_P(ThroughVmReadvAndProcMem, RemoteMemoryTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ProcMem" : "ProcessVmReadv";
                         });

// dlpi_addr of every loaded object with a name, by path.
std::map<std::string, uint64_t> LoadBiases() {
  std::map<std::string, uint64_t> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] == '/') {
          char resolved[PATH_MAX];
          if (realpath(info->dlpi_name, resolved) != nullptr) {
            (*static_cast<std::map<std::string, uint64_t>*>(data))[resolved] = info->dlpi_addr;
          }
        }
        return 0;
      },
      &out);
  return out;
}

TEST(TargetModulesTest, ObjectsAtTheLoadersBiasWithBuildIds) {
  Child child;
  auto modules = TargetModules::Read(child.pid());
  ASSERT_TRUE(modules.ok()) << modules.status();
  const std::map<std::string, uint64_t> biases = LoadBiases();
  int compared = 0;
  bool vdso = false;
  for (const TargetModule& m : (*modules)->modules()) {
    if (m.is_vdso) vdso = true;
    char resolved[PATH_MAX];
    if (m.is_vdso || realpath(m.path.c_str(), resolved) == nullptr) continue;
    auto it = biases.find(resolved);
    if (it == biases.end()) continue;  // a file mapped as data
    EXPECT_EQ(m.error, "") << m.path;
    EXPECT_EQ(m.load_bias, it->second) << m.path;
    EXPECT_TRUE(m.has_eh_frame) << m.path;
    EXPECT_EQ(m.build_id.size() % 2, 0u) << m.path;
    EXPECT_FALSE(m.build_id.empty()) << m.path;  // Debian builds every object with one
    ++compared;
  }
  EXPECT_GE(compared, 3);  // this test, libc, libstdc++ at least
  EXPECT_TRUE(vdso);
}

// A PC inside each of a few functions of different objects.
std::vector<uint64_t> SomeCode() {
  return {reinterpret_cast<uintptr_t>(&LoadBiases) + 4, reinterpret_cast<uintptr_t>(&malloc) + 4,
          reinterpret_cast<uintptr_t>(&memcpy) + 4, reinterpret_cast<uintptr_t>(&dl_iterate_phdr) + 4,
          reinterpret_cast<uintptr_t>(static_cast<void (*)()>(&std::terminate)) + 4};
}

TEST(TargetModulesTest, TablesFromTheFileGiveTheLoadedTablesFdes) {
  Child child;
  auto modules_or = TargetModules::Read(child.pid());
  ASSERT_TRUE(modules_or.ok()) << modules_or.status();
  TargetModules& modules = **modules_or;
  RemoteMemory memory(child.pid(), modules.readable());
  modules.set_memory(&memory);
  modules.LoadVdso(memory);
  ModuleMap::Reader reader(ModuleMap::Global());
  NativeLocator native(reader.snapshot());
  for (uint64_t pc : SomeCode()) {
    SCOPED_TRACE(pc);
    EhFrameSection here, there;
    ASSERT_TRUE(native.Find(pc, &here));
    ASSERT_TRUE(modules.Find(pc, &there));
    EXPECT_NE(here.hdr, there.hdr);  // read from the file, not from the loaded object
    Fde fde_here, fde_there;
    ASSERT_EQ(ParseFde(here, FindFde(here, pc), &fde_here), CfiError::kOk);
    ASSERT_EQ(ParseFde(there, FindFde(there, pc), &fde_there), CfiError::kOk);
    EXPECT_EQ(fde_here.pc_begin, fde_there.pc_begin);
    EXPECT_EQ(fde_here.pc_end, fde_there.pc_end);
    EXPECT_LE(fde_there.pc_begin, pc);
    EXPECT_GT(fde_there.pc_end, pc);
    // Code reads go to the child's memory, in executable mappings only.
    unsigned char code[16];
    EXPECT_TRUE(modules.ReadCode(pc, code, sizeof(code)));
    EXPECT_EQ(std::memcmp(code, reinterpret_cast<const void*>(pc), sizeof(code)), 0);
    EXPECT_TRUE(modules.IsCode(pc));
  }
  int on_stack;
  EXPECT_FALSE(modules.IsCode(reinterpret_cast<uintptr_t>(&on_stack)));
  unsigned char code[4];
  EXPECT_FALSE(modules.ReadCode(reinterpret_cast<uintptr_t>(&on_stack), code, sizeof(code)));
}

TEST(TargetModulesTest, AMissingProcessIsNotFound) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);  // reaped: the pid names no process (until reused, unlikely here)
  auto modules = TargetModules::Read(pid);
  ASSERT_FALSE(modules.ok());
  EXPECT_TRUE(absl::IsNotFound(modules.status())) << modules.status();
}

}  // namespace
}  // namespace stackwalk::internal
