// The library symbolizer on this process's own frames: exact function, file, line and the
// inline chain, computed by the test itself with __LINE__; and objects without DWARF.
#include "stackwalk/symbolizer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "stackwalk/stackwalk.h"

namespace {

struct Trace {
  void* pcs[32];
  int n = 0;
  int capture_line = 0;
  int call_line = 0;
};

}  // namespace

// Inlined into the caller: the trace's first PC lies in this function's inlined code.
static inline __attribute__((always_inline)) void InlinedCapture(Trace* t) {
  t->n = stackwalk_backtrace(t->pcs, 32, STACKWALK_AUTO); t->capture_line = __LINE__;
}

extern "C" __attribute__((noinline)) void symbolizer_outer(Trace* t) {
  InlinedCapture(t); t->call_line = __LINE__;
  __asm__ volatile("" ::: "memory");
}

static bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(Symbolizer, InlineChainWithExactLines) {
  Trace t;
  symbolizer_outer(&t);
  ASSERT_GT(t.n, 2);
  stackwalk::Symbolizer symbolizer;
  std::vector<stackwalk::SymbolizedFrame> frames = symbolizer.Symbolize(t.pcs[0], true);
  ASSERT_GE(frames.size(), 2u) << stackwalk::FormatFrames(frames);
  EXPECT_EQ(frames[0].function, "InlinedCapture");
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_TRUE(EndsWith(frames[0].file, "symbolizer_test.cc")) << frames[0].file;
  EXPECT_EQ(frames[0].line, t.capture_line);
  EXPECT_EQ(frames[1].function, "symbolizer_outer");
  EXPECT_FALSE(frames[1].inlined);
  EXPECT_EQ(frames[1].line, t.call_line);
  EXPECT_EQ(frames[0].pc, reinterpret_cast<uintptr_t>(t.pcs[0]));
  EXPECT_TRUE(EndsWith(frames[0].module, "symbolizer_test")) << frames[0].module;

  // The whole trace, grouped by trace index, reaches the test body.
  std::vector<stackwalk::SymbolizedFrame> all = symbolizer.SymbolizeTrace(t.pcs, t.n);
  std::string text = stackwalk::FormatFrames(all);
  EXPECT_NE(text.find("#0 0x"), std::string::npos);
  EXPECT_NE(text.find("InlinedCapture (inlined) at "), std::string::npos) << text;
  EXPECT_NE(text.find("TestBody"), std::string::npos) << text;
  std::string json = stackwalk::FormatFramesJson(all);
  EXPECT_EQ(json.front(), '[');
  EXPECT_NE(json.find("\"function\":\"symbolizer_outer\""), std::string::npos) << json;
}

TEST(Symbolizer, LibraryWithoutDebugInfoStillGetsItsSymbolName) {
  // A copy of a fixture library stripped of its DWARF: the symbol table still names it.
  const std::string copy = ::testing::TempDir() + "libstripped." + std::to_string(getpid()) + ".so";
  ASSERT_EQ(std::system(("objcopy --strip-debug " + std::string(CHAIN_LIB_PATH) + " " + copy).c_str()),
            0);
  void* lib = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  void* entry = dlsym(lib, "chain_lib_entry");
  ASSERT_NE(entry, nullptr);
  stackwalk::Symbolizer symbolizer;
  auto frames = symbolizer.Symbolize(entry, false);
  ASSERT_EQ(frames.size(), 1u) << stackwalk::FormatFrames(frames);
  EXPECT_EQ(frames[0].function, "chain_lib_entry");
  EXPECT_TRUE(frames[0].file.empty());
  EXPECT_EQ(frames[0].module, copy);
  dlclose(lib);
  unlink(copy.c_str());

  // libc: from its symbol table, or from its debug file where one is installed.
  frames = symbolizer.Symbolize(reinterpret_cast<void*>(&abort), false);
  ASSERT_FALSE(frames.empty());
  EXPECT_NE(frames.back().function.find("abort"), std::string::npos) << stackwalk::FormatFrames(frames);
}

// A PC of a library dlclose'd since: named from the library's file, once the module map saw it.
TEST(Symbolizer, NamesPcsOfAnUnloadedLibrary) {
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  void* entry = dlsym(lib, "chain_lib_entry");
  ASSERT_NE(entry, nullptr);
  stackwalk_refresh_modules();
  ASSERT_EQ(dlclose(lib), 0);
  Dl_info info;
  ASSERT_EQ(dladdr(entry, &info), 0) << "the library is still loaded";
  EXPECT_EQ(stackwalk_refresh_modules(), 1);  // the module map no longer has it
  stackwalk::Symbolizer symbolizer;
  auto frames = symbolizer.Symbolize(static_cast<char*>(entry) + 1, false);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "chain_lib_entry") << stackwalk::FormatFrames(frames);
  EXPECT_EQ(frames.back().module, CHAIN_LIB_PATH);
  EXPECT_NE(frames.back().file.find("chain_lib.c"), std::string::npos) << stackwalk::FormatFrames(frames);
}

TEST(Symbolizer, UnknownAddressesAndUnreadableFiles) {
  stackwalk::Symbolizer symbolizer;
  auto frames = symbolizer.Symbolize(reinterpret_cast<void*>(16), false);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty());
  EXPECT_TRUE(frames[0].module.empty());
  EXPECT_EQ(stackwalk::FormatFrames(frames), "#0 0x0000000000000010 (in no known object)\n");
  // The error says why.
  EXPECT_EQ(symbolizer.SymbolizeFile("/nonexistent/file", 0x1000).status().message(),
            "/nonexistent/file: No such file or directory");
  EXPECT_EQ(symbolizer.SymbolizeFile("/etc/hostname", 0x1000).status().message(),
            "/etc/hostname: not an ELF file");
  EXPECT_EQ(symbolizer.SymbolizeFile("/etc", 0x1000).status().message(), "/etc: is a directory");
}

// The named trace of a std::thread's start (this test, libstdc++, libc).
static std::vector<stackwalk::SymbolizedFrame> TraceOfAThread(stackwalk::Symbolizer& symbolizer) {
  void* pcs[64];
  int n = 0;
  std::thread t([&] { n = stackwalk_backtrace(pcs, 64, STACKWALK_AUTO); });
  t.join();
  return symbolizer.SymbolizeTrace(pcs, n, false);
}

// A std::thread's stack passes through libstdc++'s thread start routine, a local function its
// stripped .dynsym does not name. The frame stays unnamed (with its module and offset) rather
// than named as the exported function below it, past that one's size, as binutils names it
// (std::error_code::default_error_condition() const on Debian 12's libstdc++).
TEST(Symbolizer, ThreadStartInLibstdcxxIsNotNamedAsTheExportBelowIt) {
  stackwalk::Symbolizer symbolizer;
  std::vector<stackwalk::SymbolizedFrame> frames = TraceOfAThread(symbolizer);
  ASSERT_GT(frames.size(), 2u);
  const stackwalk::SymbolizedFrame* start = nullptr;
  for (const auto& f : frames) {
    if (f.module.find("libstdc++") != std::string::npos) start = &f;
  }
  ASSERT_NE(start, nullptr) << stackwalk::FormatFrames(frames);
  EXPECT_EQ(start->function, "") << stackwalk::FormatFrames(frames);
  EXPECT_GT(start->module_offset, 0u);
  // What binutils says at the call instruction: a name, of a symbol that ends below it.
  char command[512];
  std::snprintf(command, sizeof(command), "addr2line -f -e %s 0x%llx", start->module.c_str(),
                static_cast<unsigned long long>(start->module_offset - 1));
  FILE* p = popen(command, "r");
  ASSERT_NE(p, nullptr);
  char name[256] = {};
  ASSERT_NE(std::fgets(name, sizeof(name), p), nullptr);
  pclose(p);
  EXPECT_STRNE(name, "??\n");
}

// Files opened together (OpenFiles, several threads) name every frame as files opened by their
// first lookup do; a file that cannot be read still says why when looked up; and lookups from
// other threads go on while files open.
TEST(Symbolizer, FilesOpenedTogetherNameAsFilesOpenedOneByOne) {
  stackwalk::Symbolizer in_process;
  std::vector<stackwalk::SymbolizedFrame> traced = TraceOfAThread(in_process);
  ASSERT_GT(traced.size(), 2u);
  traced.push_back({});
  traced.back().module = CHAIN_LIB_PATH;
  traced.back().module_offset = 0x1001;
  std::vector<std::string> paths;
  for (const auto& f : traced) {
    if (!f.module.empty()) paths.push_back(f.module);
  }
  paths.push_back("/nonexistent/file");
  paths.push_back("/etc/hostname");
  ASSERT_GE(paths.size(), 5u);
  auto describe = [](stackwalk::Symbolizer& s, const std::string& path, uint64_t offset) {
    auto frames = s.SymbolizeFile(path, offset);
    if (!frames.ok()) return std::string(frames.status().message());
    std::string out;
    for (const auto& f : *frames) {
      out += f.function + " " + f.file + ":" + std::to_string(f.line) +
             (f.inlined ? " i;" : ";");
    }
    return out;
  };
  stackwalk::Symbolizer one_by_one, together;
  std::atomic<bool> opening{true};
  std::thread meanwhile([&] {  // a lookup in a file opened by its lookup, while others open
    while (opening.load()) describe(together, "/etc/hostname", 0x1000);
  });
  together.OpenFiles(paths);
  together.OpenFiles(paths);  // all open already: nothing to do
  opening.store(false);
  meanwhile.join();
  for (const auto& f : traced) {
    if (f.module.empty()) continue;
    const uint64_t offset = f.module_offset - 1;
    EXPECT_EQ(describe(together, f.module, offset), describe(one_by_one, f.module, offset))
        << f.module << "+" << offset;
  }
  EXPECT_EQ(describe(together, "/nonexistent/file", 0x1000),
            "/nonexistent/file: No such file or directory");
  EXPECT_EQ(describe(together, "/etc/hostname", 0x1000), "/etc/hostname: not an ELF file");
}

// The public API stackwalk-symbolize uses: sections and file offsets against binutils' readelf,
// and the errors that name the file and why.
TEST(Symbolizer, SectionsAndFileOffsetsOfAFile) {
  const std::string lib = CHAIN_LIB_PATH;
  stackwalk::Symbolizer symbolizer;
  uint64_t address = 0, size = 0;
  ASSERT_TRUE(symbolizer.FindSection(lib, ".text", &address, &size).ok());
  // readelf -SW: "[Nr] Name Type Address Off Size ...": .text's address, offset and size.
  FILE* p = popen(("readelf -SW " + lib + " | awk '$2 == \".text\" {print $4, $5, $6}'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  unsigned long long want_address = 0, want_offset = 0, want_size = 0;
  ASSERT_EQ(std::fscanf(p, "%llx %llx %llx", &want_address, &want_offset, &want_size), 3);
  pclose(p);
  EXPECT_EQ(address, want_address);
  EXPECT_EQ(size, want_size);
  auto mapped = symbolizer.FileOffsetToAddress(lib, want_offset + 4);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(*mapped, want_address + 4);
  EXPECT_EQ(symbolizer.FindSection(lib, ".no_such_section", &address, &size).message(),
            lib + ": cannot find section .no_such_section");
  EXPECT_EQ(symbolizer.FileOffsetToAddress("/nonexistent/file", 0).status().message(),
            "/nonexistent/file: No such file or directory");
  EXPECT_FALSE(symbolizer.FileOffsetToAddress(lib, 1ull << 40).ok());
}
