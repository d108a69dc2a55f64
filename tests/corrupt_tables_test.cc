// Damaged unwind tables in a real library: a copy of the fixture library made at test time with
// bytes of its .eh_frame, its .eh_frame_hdr (or, on arm32, its .ARM.exidx) overwritten, the
// section found through the ELF section headers. Each copy is loaded with dlopen in a child
// process and unwound through by a callback from it: the walk must neither crash nor loop (the
// child has a deadline), and must return the frames up to the damage, the callback and the
// library function that called it.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/chain_lib.h"
#include "frame_names.h"
#include "stackwalk/stackwalk.h"

using stackwalk::testing::FrameNames;
using stackwalk::testing::Join;
using stackwalk::testing::kTableMethod;

namespace {

constexpr int kMax = 256;

void* g_pcs[kMax];
int g_n;
stackwalk_method g_method;

}  // namespace

extern "C" __attribute__((noinline)) int corrupt_capture_callback(void*) {
  g_n = stackwalk_backtrace(g_pcs, kMax, g_method);
  __asm__ volatile("" ::: "memory");
  return g_n;
}

extern "C" __attribute__((noinline)) int corrupt_call_library(chain_lib_entry_fn entry) {
  int r = entry(corrupt_capture_callback, nullptr);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

namespace {

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return out.good();
}

// The file offset and size of section `name`, from the section headers of an ELF file of this
// process's class.
bool FindSection(const std::vector<uint8_t>& file, const char* name, size_t* offset, size_t* size) {
  if (file.size() < sizeof(ElfW(Ehdr))) return false;
  ElfW(Ehdr) eh;
  std::memcpy(&eh, file.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_shentsize != sizeof(ElfW(Shdr)) ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(ElfW(Shdr)) > file.size() ||
      eh.e_shstrndx >= eh.e_shnum) {
    return false;
  }
  auto section = [&](int i) {
    ElfW(Shdr) sh;
    std::memcpy(&sh, file.data() + eh.e_shoff + i * sizeof(ElfW(Shdr)), sizeof(sh));
    return sh;
  };
  const ElfW(Shdr) names = section(eh.e_shstrndx);
  for (int i = 0; i < eh.e_shnum; ++i) {
    const ElfW(Shdr) sh = section(i);
    if (names.sh_offset + sh.sh_name >= file.size()) continue;
    const char* at = reinterpret_cast<const char*>(file.data() + names.sh_offset + sh.sh_name);
    if (std::strcmp(at, name) == 0 && sh.sh_type != SHT_NOBITS &&
        sh.sh_offset + sh.sh_size <= file.size()) {
      *offset = sh.sh_offset;
      *size = sh.sh_size;
      return true;
    }
  }
  return false;
}

// One way of damaging a section's bytes.
struct Damage {
  std::string name;
  std::function<void(uint8_t* bytes, size_t size)> apply;
};

std::vector<Damage> Damages() {
  std::vector<Damage> damages;
  damages.push_back({"intact", [](uint8_t*, size_t) {}});
  damages.push_back({"all 0xff", [](uint8_t* b, size_t n) { std::memset(b, 0xff, n); }});
  damages.push_back({"all zero", [](uint8_t* b, size_t n) { std::memset(b, 0, n); }});
  damages.push_back({"first word huge", [](uint8_t* b, size_t n) {
                       if (n >= 4) std::memset(b, 0xf0, 4);
                     }});
  damages.push_back({"second half 0x80", [](uint8_t* b, size_t n) {
                       std::memset(b + n / 2, 0x80, n - n / 2);
                     }});
  for (unsigned seed = 1; seed <= 8; ++seed) {
    damages.push_back({"random, seed " + std::to_string(seed), [seed](uint8_t* b, size_t n) {
                         std::mt19937 rng(seed);
                         for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(rng());
                       }});
    damages.push_back({"every 16th byte random, seed " + std::to_string(seed),
                       [seed](uint8_t* b, size_t n) {
                         std::mt19937 rng(seed);
                         for (size_t i = rng() % 16; i < n; i += 1 + rng() % 31) {
                           b[i] = static_cast<uint8_t>(rng());
                         }
                       }});
    damages.push_back({"one word random, seed " + std::to_string(seed),
                       [seed](uint8_t* b, size_t n) {
                         std::mt19937 rng(seed);
                         if (n < 4) return;
                         const size_t at = (rng() % (n / 4)) * 4;
                         const uint32_t word = rng();
                         std::memcpy(b + at, &word, 4);
                       }});
  }
  return damages;
}

// In a child: loads `path`, captures through it with `method`, checks the frames up to the
// damage. Exit 0 on success, 1 if a check failed; a crash or a hang (SIGALRM) shows as a signal.
int RunChild(const std::string& path, stackwalk_method method, bool intact) {
  alarm(20);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  if (entry == nullptr) return 1;
  g_method = method;
  g_n = 0;
  corrupt_call_library(entry);
  auto names = FrameNames(g_pcs, g_n, false);
  bool right = g_n >= 2 && g_n <= kMax && names[0] == "corrupt_capture_callback" &&
               names[1] == "chain_lib_middle";
  if (intact) {
    right = right && g_n >= 4 && names[2] == "chain_lib_entry" &&
            names[3] == "corrupt_call_library";
  }
  // Whatever the walk found past the damage lies in loaded code: a damaged table may end the
  // walk, never send it into data.
  for (int i = 1; i < g_n; ++i) {
    Dl_info info;
    if (dladdr(static_cast<char*>(g_pcs[i]) - 1, &info) == 0) {
      std::fprintf(stderr, "frame %d at %p is in no loaded object\n", i, g_pcs[i]);
      right = false;
    }
  }
  if (!right) std::fprintf(stderr, "frames: %s\n", Join(names).c_str());
  // What the walk found past the damage, for the record: "+N" frames, "-" if it stopped there.
  std::fprintf(stdout, "%s", g_n > 2 && names[2] == "chain_lib_entry" ? "+" : "-");
  std::fflush(stdout);
  dlclose(lib);
  return right ? 0 : 1;
}

void DamageSectionAndUnwind(const char* section) {
  const std::vector<uint8_t> original = ReadFile(CORRUPT_SOURCE_LIB);
  ASSERT_FALSE(original.empty()) << CORRUPT_SOURCE_LIB;
  size_t offset = 0, size = 0;
  ASSERT_TRUE(FindSection(original, section, &offset, &size)) << section;
  ASSERT_GT(size, 0u);
  const std::string dir = ::testing::TempDir() + "corrupt_tables." + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  int cases = 0, failures = 0;
  for (const Damage& damage : Damages()) {
    std::vector<uint8_t> copy = original;
    damage.apply(copy.data() + offset, size);
    // A path of its own for each copy: the loader would hand back a library it has seen.
    const std::string path = dir + "/libchain_" + std::to_string(cases) + ".so";
    ASSERT_TRUE(WriteFile(path, copy));
    for (stackwalk_method method : {kTableMethod, STACKWALK_AUTO}) {
      std::fflush(stdout);
      pid_t child = fork();
      if (child == 0) _exit(RunChild(path, method, damage.name == "intact"));
      ASSERT_GT(child, 0);
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, 0), child);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) ++failures;
      EXPECT_TRUE(ok) << section << ", " << damage.name << ", method " << method << ": "
                      << (WIFSIGNALED(status)
                              ? "killed by signal " + std::to_string(WTERMSIG(status)) +
                                    (WTERMSIG(status) == SIGALRM ? " (a hang)" : "")
                              : "wrong frames");
    }
    ++cases;
  }
  std::printf("\n%s: %d damaged copies x 2 methods, %d failed (+: the walk went on past the "
              "library, -: it stopped at the damage)\n",
              section, cases, failures);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace

#if defined(__arm__)
TEST(CorruptTables, DamagedArmExidx) { DamageSectionAndUnwind(".ARM.exidx"); }
#else
TEST(CorruptTables, DamagedEhFrame) { DamageSectionAndUnwind(".eh_frame"); }
TEST(CorruptTables, DamagedEhFrameHdr) { DamageSectionAndUnwind(".eh_frame_hdr"); }
#endif
