// What a crash report says of its frames and modules (crash_child.h runs the crashes): full
// paths, link-time offsets (of the call, for return addresses) and build-ids checked against the
// loader's view of this process; a library opened after install listed by its file; a snapshot
// written after the frames, or its failure said; and the report's MODULE+OFFSET tokens named
// with file:line through stackwalk-symbolize.
#include "stackwalk/crash_handler.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "crash_child.h"
#include "fixtures/chain_lib.h"

namespace crash_test {
namespace {

// What the loader says of each object of this process (a forked child has the same): its
// path as the report prints it (the executable's from /proc/self/exe), load bias and build-id,
// read from its PT_NOTE segments in memory.
struct LoadedObject {
  uint64_t bias = 0;
  std::string build_id;
};

std::string ExecutablePath() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

std::map<std::string, LoadedObject> LoadedObjects() {
  std::map<std::string, LoadedObject> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<std::map<std::string, LoadedObject>*>(data);
        LoadedObject o;
        o.bias = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_NOTE) continue;
          const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
          const char* end = p + ph.p_memsz;
          while (p + sizeof(ElfW(Nhdr)) <= end) {
            const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
            const char* name = p + sizeof(ElfW(Nhdr));
            const auto* desc = reinterpret_cast<const unsigned char*>(
                name + ((note->n_namesz + 3) & ~3u));
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                std::memcmp(name, "GNU", 4) == 0) {
              char hex[3];
              for (unsigned k = 0; k < note->n_descsz; ++k) {
                std::snprintf(hex, sizeof(hex), "%02x", desc[k]);
                o.build_id += hex;
              }
            }
            p = reinterpret_cast<const char*>(desc) + ((note->n_descsz + 3) & ~3u);
          }
        }
        std::string path = info->dlpi_name[0] != '\0' ? info->dlpi_name : ExecutablePath();
        if (out->empty() && info->dlpi_name[0] == '\0') path = ExecutablePath();
        out->emplace(path, o);
        return 0;
      },
      &objects);
  return objects;
}

// A function's link-time address (without the Thumb bit of an arm32 function pointer).
uint64_t LinkAddress(const void* function, uint64_t bias) {
  uintptr_t address = reinterpret_cast<uintptr_t>(function);
#if defined(__arm__)
  address &= ~uintptr_t{1};
#endif
  return address - bias;
}

// Every frame: its module printed once in the module list; the list holds nothing else.
void ExpectModuleListMatchesFrames(const Report& r) {
  std::set<std::string> in_frames, listed;
  for (const ReportFrame& f : r.frames) {
    if (!f.module.empty()) in_frames.insert(f.module);
  }
  for (const ReportModule& m : r.modules) {
    EXPECT_TRUE(listed.insert(m.path).second) << m.path << " listed twice";
  }
  EXPECT_EQ(in_frames, listed);
}

TEST(CrashReport, ReportGivesFullPathsLinkTimeOffsetsAndBuildIds) {
  Outcome o = RunCrashingChild([] { crash_caller(); });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  ASSERT_GE(r.frames.size(), 3u) << o.report;
  EXPECT_TRUE(r.complete) << o.report;
  const std::string exe = ExecutablePath();
  std::map<std::string, LoadedObject> objects = LoadedObjects();
  ASSERT_EQ(objects.count(exe), 1u);
  const uint64_t bias = objects[exe].bias;

  // The interrupted PC: the faulting instruction's own address.
  const ReportFrame& leaf = r.frames[0];
  EXPECT_FALSE(leaf.is_return_address);
  EXPECT_EQ(leaf.function, "crash_leaf") << o.report;
  EXPECT_EQ(leaf.module, exe) << o.report;
  EXPECT_EQ(leaf.pc - bias, leaf.module_offset) << o.report;
  EXPECT_EQ(leaf.module_offset - leaf.function_offset,
            LinkAddress(reinterpret_cast<const void*>(&crash_leaf), bias))
      << o.report;
  // A return address: both offsets are of the call, one byte before it.
  const ReportFrame& caller = r.frames[1];
  EXPECT_TRUE(caller.is_return_address);
  EXPECT_EQ(caller.function, "crash_caller") << o.report;
  EXPECT_EQ(caller.module, exe) << o.report;
  EXPECT_EQ(caller.pc - 1 - bias, caller.module_offset) << o.report;
  EXPECT_EQ(caller.module_offset - caller.function_offset,
            LinkAddress(reinterpret_cast<const void*>(&crash_caller), bias))
      << o.report;
  for (const ReportFrame& f : r.frames) {
    EXPECT_EQ(f.is_return_address, f.index != 0) << o.report;
    ASSERT_FALSE(f.module.empty()) << o.report;
    ASSERT_EQ(objects.count(f.module), 1u) << f.module << " is no loaded object's path";
    EXPECT_EQ(f.module_offset, f.pc - objects[f.module].bias - (f.is_return_address ? 1 : 0))
        << o.report;
  }
  // The module list: each object once, with the loader's bias and the build-id of its note.
  ExpectModuleListMatchesFrames(r);
  for (const ReportModule& m : r.modules) {
    ASSERT_EQ(objects.count(m.path), 1u) << m.path;
    EXPECT_EQ(m.bias, objects[m.path].bias) << m.path;
    ASSERT_FALSE(objects[m.path].build_id.empty()) << m.path;  // Debian builds all have one
    EXPECT_EQ(m.build_id, objects[m.path].build_id) << m.path;
  }
}

// A snapshot is written after the frames and says where it went; one that cannot be written
// costs the report nothing. (Its contents: snapshot_test, snapshot_dump_test.py.)
TEST(CrashReport, SnapshotIsWrittenOrItsFailureReportedAfterACompleteReport) {
  char dir[] = "/tmp/crash_snapshot_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/crash.snapshot";
  const std::string nowhere = "/nonexistent-stackwalk-dir/crash.snapshot";
  for (const std::string& target : {path, nowhere}) {
    Outcome o = RunCrashingChild([&target] {
      stackwalk::CrashHandlerOptions options;
      options.fd = g_report_fd;
      options.snapshot_path = target.c_str();
      options.snapshot_stack_bytes = 16 * 1024;
      if (stackwalk::InstallCrashHandler(options) != 0) _exit(102);
      crash_caller();
    });
    EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
    Report r = Parse(o.report);
    EXPECT_TRUE(r.complete) << o.report;
    EXPECT_EQ(FrameFunction(o.report, 0), "crash_leaf") << o.report;
    EXPECT_EQ(FrameFunction(o.report, 1), "crash_caller") << o.report;
    const size_t line = o.report.find("*** snapshot ");
    ASSERT_NE(line, std::string::npos) << o.report;
    EXPECT_LT(line, o.report.find("*** end of report")) << o.report;
    if (target == path) {
      struct stat st;
      ASSERT_EQ(stat(path.c_str(), &st), 0);
      const std::string said = "*** snapshot " + path + ": " + std::to_string(st.st_size) + " bytes, ";
      EXPECT_NE(o.report.find(said), std::string::npos) << said << "\n" << o.report;
      EXPECT_GT(st.st_size, 1024);
      EXPECT_LT(st.st_size, 16 * 1024 + 64 * 1024);  // the stack bounded by snapshot_stack_bytes
    } else {
      EXPECT_NE(o.report.find("*** snapshot not written: open " + nowhere + ": errno " +
                              std::to_string(ENOENT)),
                std::string::npos)
          << o.report;
    }
  }
  unlink(path.c_str());
  rmdir(dir);
}

TEST(CrashReport, ModuleListNamesALibraryOpenedAfterInstallByItsFile) {
  Outcome o = RunCrashingChild([] {
    void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(102);
    reinterpret_cast<chain_lib_fault_fn>(dlsym(lib, "chain_lib_fault"))(g_null);
  });
  EXPECT_TRUE(DiedBy(o.status, SIGSEGV)) << o.status;
  Report r = Parse(o.report);
  ASSERT_FALSE(r.frames.empty()) << o.report;
  char real[PATH_MAX];
  ASSERT_NE(realpath(CHAIN_LIB_PATH, real), nullptr);
  EXPECT_EQ(r.frames[0].module, real) << o.report;
  ExpectModuleListMatchesFrames(r);
  // The same library in this process: its build-id from the loader's view of its notes.
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr);
  std::map<std::string, LoadedObject> objects = LoadedObjects();
  dlclose(lib);
  std::string loaded_build_id;
  for (auto& [path, object] : objects) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) != nullptr && std::string(resolved) == real) {
      loaded_build_id = object.build_id;
    }
  }
  ASSERT_FALSE(loaded_build_id.empty());
  bool found = false;
  for (const ReportModule& m : r.modules) {
    if (m.path != real) continue;
    found = true;
    EXPECT_EQ(m.build_id, loaded_build_id) << o.report;
  }
  EXPECT_TRUE(found) << o.report;
}

#if defined(STACKWALK_SYMBOLIZE)
// The crash of the C fixture (-O0 -g), named with file:line by the command its report prints:
// the faulting line for frame #0, and the line of the call (not the next one, where the return
// address is) for frame #1.
TEST(CrashReport, ReportRoundTripsThroughStackwalkSymbolize) {
  char report_path[] = "/tmp/stackwalk-crash-report-XXXXXX";
  int report_fd = mkstemp(report_path);
  ASSERT_GE(report_fd, 0);
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, report_fd, 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  char fixture[] = CRASH_C_FIXTURE;
  char mode[] = "crash";
  char* argv[] = {fixture, mode, nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, fixture, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(report_fd);
  std::string lines;
  char buf[256];
  for (ssize_t n; (n = read(out[0], buf, sizeof(buf))) > 0;) lines.append(buf, n);
  close(out[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(DiedBy(status, SIGSEGV)) << status;
  int fault_line = 0, call_line = 0;
  ASSERT_EQ(std::sscanf(lines.c_str(), "fault-line %d\ncall-line %d", &fault_line, &call_line), 2)
      << lines;

  std::string report;
  {
    FILE* f = std::fopen(report_path, "r");
    ASSERT_NE(f, nullptr);
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) report.append(buf, n);
    std::fclose(f);
  }
  // The command, as the report's legend gives it, with the report's path for REPORT.
  const std::string marker = "***   grep ";
  size_t at = report.find(marker);
  ASSERT_NE(at, std::string::npos) << report;
  std::string command = report.substr(at + 6, report.find('\n', at) - at - 6);
  size_t placeholder = command.find("REPORT");
  ASSERT_NE(placeholder, std::string::npos) << command;
  command.replace(placeholder, 6, report_path);
  std::string dir = STACKWALK_SYMBOLIZE;
  dir.resize(dir.rfind('/'));
  command = "PATH='" + dir + "':\"$PATH\"; " + command;
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<std::string> named;
  for (char line[4096]; std::fgets(line, sizeof(line), pipe) != nullptr;) {
    named.emplace_back(line);
    if (!named.back().empty() && named.back().back() == '\n') named.back().pop_back();
  }
  EXPECT_EQ(pclose(pipe), 0) << command;
  unlink(report_path);

  Report r = Parse(report);
  ASSERT_GE(r.frames.size(), 3u) << report;
  ASSERT_EQ(named.size(), r.frames.size()) << command << "\n" << report;  // no inlines at -O0
  const std::string source = CRASH_C_SOURCE;
  auto expect_named = [&](size_t i, const std::string& function, int line) {
    // "<function> at <file>:<line>:<column> (<module>+0x<offset>)"
    const std::string prefix = function + " at " + source + ":" + std::to_string(line) + ":";
    EXPECT_EQ(named[i].rfind(prefix, 0), 0u) << named[i] << "\nexpected " << prefix;
    const ReportFrame& f = r.frames[i];
    char token[64];
    std::snprintf(token, sizeof(token), "+0x%llx)", static_cast<unsigned long long>(f.module_offset));
    EXPECT_NE(named[i].find(" (" + f.module + token), std::string::npos) << named[i];
  };
  expect_named(0, "crash_c_leaf", fault_line);
  expect_named(1, "crash_c_caller", call_line);
}
#endif

}  // namespace
}  // namespace crash_test
