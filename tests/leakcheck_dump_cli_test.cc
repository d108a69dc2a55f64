// stackwalk-report on the dumps of a real checked program (the leaky fixture under
// stackwalk-leakcheck --dump): the report it renders from the dump is byte for byte the one the
// program wrote itself (text and JSON; suppressions that take indirect leaks with them; reachable
// blocks shown; a dlclose'd plugin's frames), also when the objects are read under --sysroot or found by build-id under
// --debug-dir; a cut dump or a file that is no dump is an error naming why, with exit status 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "leakcheck/dump/dump_decode.h"

#include "file_and_shell.h"

namespace {

using stackwalk_test::Read;
using stackwalk_test::Shell;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "dump_cli." + std::to_string(getpid()) + "." + name;
  Shell("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  return dir;
}

struct Checked {
  std::string report;  // what the program wrote
  std::string dump;    // the dump's path
};

// Runs `program args` under the checker with `options`, its report and dump in `dir`.
Checked RunChecked(const std::string& dir, const std::string& options, const std::string& program,
                   const std::string& args = "") {
  Checked out;
  out.dump = dir + "/leaks.dump";
  const std::string report = dir + "/leaks.txt";
  Shell(std::string(STACKWALK_LEAKCHECK) + " --output " + report + " --dump " + out.dump + " " +
      options + " " + program + " " + args + " >/dev/null 2>&1");
  out.report = Read(report);
  return out;
}

// stackwalk-report's output, its stderr in *errors and its status in *status.
std::string Report(const std::string& args, int* status = nullptr, std::string* errors = nullptr) {
  const std::string out = ::testing::TempDir() + "dump_cli.out." + std::to_string(getpid());
  const std::string err = out + ".err";
  const int rc = Shell(std::string(STACKWALK_REPORT) + " " + args + " >" + out + " 2>" + err);
  if (status != nullptr) *status = rc;
  if (errors != nullptr) *errors = Read(err);
  return Read(out);
}

TEST(DumpReport, TheTextReportOfTheDumpIsTheProgramsOwn) {
  const Checked run = RunChecked(Dir("text"), "", LEAKY_FIXTURE);
  ASSERT_NE(run.report.find("Direct leak of 300 byte(s) in 3 object(s)"), std::string::npos)
      << run.report;
  ASSERT_NE(run.report.find("in fixture::LeakMallocs()"), std::string::npos) << run.report;
  int status = -1;
  EXPECT_EQ(Report(run.dump, &status), run.report);
  EXPECT_EQ(status, 0);
}

TEST(DumpReport, TheJsonReportOfTheDumpIsTheProgramsOwn) {
  const Checked run = RunChecked(Dir("json"), "--format json", LEAKY_FIXTURE);
  ASSERT_NE(run.report.find("\"function\":\"fixture::LeakNode()\""), std::string::npos)
      << run.report;
  EXPECT_EQ(Report(run.dump), run.report);  // the program's format by default
  EXPECT_EQ(Report("--format json " + run.dump), run.report);
}

TEST(DumpReport, AFramesObjectUnloadedBeforeTheReportIsNamedAsTheProgramNamedIt) {
  // leaky_forms leaks from a plugin it dlopens and dlcloses: the dump records the closed object.
  const Checked run = RunChecked(Dir("plugin"), "", LEAKY_FORMS);
  ASSERT_NE(run.report.find("in PluginLeak at "), std::string::npos) << run.report;
  EXPECT_EQ(Report(run.dump), run.report);
}

TEST(DumpReport, SuppressionsTakeTheIndirectLeaksTheyHoldAndReachableBlocksShow) {
  const std::string dir = Dir("suppress");
  Write(dir + "/chain.supp", "leak:LoseChain\n");
  const Checked run = RunChecked(
      dir, "--show-reachable --suppressions " + dir + "/chain.supp", LEAKY_FIXTURE, "reachability");
  // The lost chain (222 bytes holding 333) is suppressed whole; the reachable blocks are listed.
  ASSERT_NE(run.report.find("555 bytes in 2 allocations suppressed"), std::string::npos)
      << run.report;
  ASSERT_NE(run.report.find("Reachable: 111 byte(s) in 1 object(s)"), std::string::npos)
      << run.report;
  EXPECT_EQ(Report(run.dump), run.report);
  // Without the program's suppressions file the chain is back: the direct head and its tail.
  Write(dir + "/none.supp", "");
  const std::string unsuppressed = Report("--suppressions " + dir + "/none.supp " + run.dump);
  EXPECT_NE(unsuppressed.find("Direct leak of 222 byte(s) in 1 object(s)"), std::string::npos)
      << unsuppressed;
  EXPECT_NE(unsuppressed.find("Indirect leak of 333 byte(s) in 1 object(s)"), std::string::npos)
      << unsuppressed;
}

// The objects a text report names frames in, from its "(path+0x...)" ends of lines.
std::set<std::string> ModulesOf(const std::string& report) {
  std::set<std::string> out;
  const std::regex module(R"(\(([^()+ ]+)\+0x[0-9a-f]+\)\n)");
  for (auto it = std::sregex_iterator(report.begin(), report.end(), module);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// Each module's build-id in the dump, as hex: path -> id.
std::map<std::string, std::string> BuildIds(const std::string& dump) {
  const std::string bytes = Read(dump);
  const auto decoded = stackwalk::leakcheck::dump::DecodeDumps(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  EXPECT_EQ(decoded.error, "");
  std::map<std::string, std::string> out;
  for (const auto& m : decoded.dumps.at(0).modules) {
    std::string hex;
    for (uint8_t b : m.build_id) {
      char two[3];
      std::snprintf(two, sizeof(two), "%02x", b);
      hex += two;
    }
    out[m.path] = hex;
  }
  return out;
}

std::string BuildIdPath(const std::string& hex) {
  return "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
}

TEST(DumpReport, ObjectsAreReadUnderASysrootOrFoundByBuildId) {
  // The program runs from a copy that is gone when the dump is read: only the sysroot has it.
  const std::string dir = Dir("sysroot");
  const std::string program = dir + "/bin/leaky";
  ASSERT_EQ(Shell("mkdir -p " + dir + "/bin && cp " LEAKY_FIXTURE " " + program), 0);
  const Checked run = RunChecked(dir, "", program);
  ASSERT_NE(run.report.find("in fixture::LeakNode()"), std::string::npos) << run.report;
  const std::string root = dir + "/root";
  std::set<std::string> modules = ModulesOf(run.report);
  ASSERT_EQ(modules.count(program), 1u) << run.report;
  const std::map<std::string, std::string> ids = BuildIds(run.dump);
  // Every object the dump lists, not only those of the shown frames: every live block's stack is
  // named (a block not shown may be allocated under ld.so: glibc's exit-function block is, when
  // the libraries' constructors register more than 32 exit functions).
  for (const auto& [module, id] : ids) {
    if (module.rfind('/', 0) == 0 && access(module.c_str(), R_OK) == 0) modules.insert(module);
  }
  for (const std::string& module : modules) {
    ASSERT_EQ(Shell("mkdir -p '" + root + module.substr(0, module.rfind('/')) + "' && cp '" +
                  module + "' '" + root + module + "'"),
              0);
  }
  // And the system's separate debug files of those objects (glibc's), as another machine has them.
  for (const std::string& module : modules) {
    const std::string hex = ids.count(module) ? ids.at(module) : "";
    if (hex.size() < 3) continue;
    const std::string debug = "/usr/lib/debug" + BuildIdPath(hex);
    if (access(debug.c_str(), R_OK) != 0) continue;
    ASSERT_EQ(Shell("mkdir -p '" + root + debug.substr(0, debug.rfind('/')) + "' && cp '" + debug +
                    "' '" + root + debug + "'"),
              0);
  }
  ASSERT_EQ(Shell("mv " + program + " " + dir + "/leaky.moved"), 0);
  EXPECT_EQ(Report("--sysroot " + root + " " + run.dump), run.report);
  // Without it the program's frames stay unnamed, and the report says which object was missing.
  const std::string unnamed = Report(run.dump);
  EXPECT_EQ(unnamed.find("in fixture::LeakNode()"), std::string::npos);
  EXPECT_NE(unnamed.find("frames are not named: no file for 1 object(s): " + program +
                         " (no such file)"),
            std::string::npos)
      << unnamed;

  // The program's build-id, as the dump recorded it, names its debug file under --debug-dir.
  const std::string hex = ids.at(program);
  ASSERT_GT(hex.size(), 2u) << "the fixture has no build-id";
  const std::string debug = dir + "/debug" + BuildIdPath(hex);
  ASSERT_EQ(Shell("mkdir -p " + debug.substr(0, debug.rfind('/')) + " && cp " + dir +
                  "/leaky.moved " + debug),
            0);
  EXPECT_EQ(Report("--debug-dir " + dir + "/debug " + run.dump), run.report);
}

TEST(DumpReport, AnObjectPathThatIsAFifoIsNotOpenedForEver) {
  // A dump names the files to read; under this sysroot the program's path is a FIFO, which an
  // open or a read would wait on for ever.
  const std::string dir = Dir("fifo");
  const Checked run = RunChecked(dir, "", LEAKY_FIXTURE);
  const std::string root = dir + "/root";
  const std::string fifo = root + LEAKY_FIXTURE;
  ASSERT_EQ(Shell("mkdir -p '" + fifo.substr(0, fifo.rfind('/')) + "' && mkfifo '" + fifo + "'"), 0);
  const std::string out = dir + "/report.txt";
  const int status = Shell("timeout 60 " STACKWALK_REPORT " --sysroot " + root + " " + run.dump +
                           " >" + out + " 2>/dev/null");
  EXPECT_EQ(status, 0) << "stackwalk-report did not finish (124: killed after 60 s)";
  const std::string report = Read(out);
  EXPECT_NE(report.find("frames are not named"), std::string::npos) << report;
  EXPECT_EQ(report.find("in fixture::LeakMallocs()"), std::string::npos) << report;
}

TEST(DumpReport, AProgramThatDoesNotReportNamesNothingAndItsDumpHasTheLeaks) {
  const std::string dir = Dir("dump_only");
  // The loader's log of what the program opened: the names library only when it reports itself.
  auto opened = [&](const std::string& options) {
    Shell("rm -f " + dir + "/ld.* " + dir + "/leaks.*; LD_DEBUG=files LD_DEBUG_OUTPUT=" + dir +
          "/ld " STACKWALK_LEAKCHECK " --output " + dir + "/leaks.txt --dump " + dir +
          "/leaks.dump " + options + " " LEAKY_FIXTURE " >/dev/null 2>&1");
    std::string all;
    FILE* p = popen(("cat " + dir + "/ld.* 2>/dev/null").c_str(), "r");
    char buf[4096];
    for (size_t n; p != nullptr && (n = fread(buf, 1, sizeof(buf), p)) > 0;) all.append(buf, n);
    if (p != nullptr) pclose(p);
    return all;
  };
  const std::string reporting = opened("--name-in=program");
  ASSERT_NE(reporting.find("libstackwalk_leakcheck_names.so"), std::string::npos)
      << "the loader's log does not show the program naming its own report";
  const std::string dump_only = opened("--program-report=0");
  EXPECT_EQ(dump_only.find("libstackwalk_leakcheck_names.so"), std::string::npos);
  EXPECT_NE(dump_only.find("libstackwalk_leakcheck.so"), std::string::npos) << "not checked";
  EXPECT_NE(access((dir + "/leaks.txt").c_str(), F_OK), 0) << "the program wrote a report";
  const std::string report = Report(dir + "/leaks.dump");
  EXPECT_NE(report.find("Direct leak of 300 byte(s) in 3 object(s)"), std::string::npos) << report;
  EXPECT_NE(report.find("in fixture::LeakMallocs()"), std::string::npos) << report;
  EXPECT_NE(report.find("SUMMARY: stackwalk-leakcheck: 364 bytes leaked in 4 allocations."),
            std::string::npos)
      << report;
  // It needs the dump, and no exit status can say whether it leaked.
  EXPECT_EQ(Shell(std::string(STACKWALK_LEAKCHECK) + " --program-report=0 " LEAKY_FIXTURE
                  " 2>/dev/null"),
            2);
  EXPECT_EQ(Shell(std::string(STACKWALK_LEAKCHECK) + " --program-report=0 --exitcode 9 --dump " +
                  dir + "/x.dump " LEAKY_FIXTURE " 2>/dev/null"),
            2);
}

TEST(DumpReport, ACutDumpIsAnErrorWithWhatCouldBeRead) {
  const std::string dir = Dir("cut");
  const Checked run = RunChecked(dir, "", LEAKY_FIXTURE);
  const std::string bytes = Read(run.dump);
  ASSERT_GT(bytes.size(), 200u);
  const size_t cut = bytes.size() - 100;  // inside the last sections: the blocks are read
  Write(dir + "/cut.dump", bytes.substr(0, cut));
  int status = 0;
  std::string errors;
  const std::string partial = Report(dir + "/cut.dump", &status, &errors);
  EXPECT_EQ(status, 1);
  EXPECT_NE(errors.find("truncated at byte " + std::to_string(cut)), std::string::npos) << errors;
  EXPECT_NE(partial.find("leaks at exit (report 1)"), std::string::npos) << partial;

  Report(dir + "/leaks.txt", &status, &errors);  // the text report is no dump
  EXPECT_EQ(status, 1);
  EXPECT_NE(errors.find("not a leak dump"), std::string::npos) << errors;
  Report(dir + "/absent.dump", &status, &errors);
  EXPECT_EQ(status, 1);
  EXPECT_NE(errors.find("cannot read"), std::string::npos) << errors;
}

}  // namespace
