// Allocations made before libstackwalk's constructors have run: a library's constructor
// (tests/fixtures/early_allocating_lib.c) allocates 100 blocks at load, as GnuTLS's does in every
// `cmake -E`, and the preloaded checker is initialized after it. Its walks must find the loaded
// objects and the per-thread caches anyway (stackwalk_prepare, at the checker's first
// allocation): the process opens /proc/self/maps at most twice before main (counted by
// tests/fixtures/maps_open_counter.c, preloaded too), where each such walk once read it, and the
// three blocks the constructor leaked are reported from its function.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(EarlyAllocations, AConstructorsWalksNeedNoMapsAndItsLeaksAreReported) {
  const std::string base = ::testing::TempDir() + "early." + std::to_string(getpid());
  const std::string out = base + ".out", report = base + ".report", loader = base + ".loader";
  // Preloaded by hand: under the launcher the record it keeps for a killed program lists the
  // loaded objects at the first allocation anyway. The loader's log of the constructors it calls
  // (LD_DEBUG, on stderr): the fixture's must run before libstackwalk's, or this test would not
  // test what it says.
  const std::string command = std::string("env LD_DEBUG=files LD_PRELOAD=") + MAPS_OPEN_COUNTER +
                              ":" + STACKWALK_LEAKCHECK_PRELOAD + " STACKWALK_LEAKCHECK=output=" +
                              report + " " + EARLY_ALLOCATIONS + " > " + out + " 2> " + loader;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string calls = ReadFile(loader);
  const size_t fixture_init = calls.find("calling init: " + std::string(EARLY_ALLOCATING_LIB));
  size_t stackwalk_init = std::string::npos;  // found through the checker's RUNPATH, by soname
  for (size_t at = calls.find("calling init: ");
       at != std::string::npos && stackwalk_init == std::string::npos;
       at = calls.find("calling init: ", at + 1)) {
    const std::string line = calls.substr(at, calls.find('\n', at) - at);
    if (line.size() > std::strlen(STACKWALK_SONAME) &&
        line.compare(line.size() - std::strlen(STACKWALK_SONAME) - 1, std::string::npos,
                     "/" + std::string(STACKWALK_SONAME)) == 0) {
      stackwalk_init = at;
    }
  }
  ASSERT_NE(fixture_init, std::string::npos) << calls;
  ASSERT_NE(stackwalk_init, std::string::npos) << calls;
  ASSERT_LT(fixture_init, stackwalk_init) << "the loader ran libstackwalk's constructors first";
  const std::string printed = ReadFile(out);
  long opens = -1;
  ASSERT_EQ(std::sscanf(printed.c_str(), "maps opens before main: %ld", &opens), 1) << printed;
  EXPECT_GE(opens, 0) << "the counter was not preloaded";
  EXPECT_LE(opens, 2) << "the constructor's 100 walks read /proc/self/maps";
  const std::string text = ReadFile(report);
  EXPECT_NE(text.find(" in 3 allocations"), std::string::npos) << text;
  EXPECT_NE(text.find("AllocateEarly"), std::string::npos) << text;
  std::remove(out.c_str());
  std::remove(report.c_str());
  std::remove(loader.c_str());
}

// A process the launcher does not check (below its program, without --follow-exec: here another
// pid in STACKWALK_LEAKCHECK_PID) sets nothing up at its first allocation, which comes before the
// preload's start decides: no walk, no list of the loaded objects (/proc/self/maps never
// opened), and no report.
TEST(EarlyAllocations, AProcessTheLauncherDoesNotCheckSetsNothingUp) {
  const std::string base = ::testing::TempDir() + "unchosen." + std::to_string(getpid());
  const std::string out = base + ".out", report = base + ".report";
  const std::string command = std::string("env STACKWALK_LEAKCHECK_PID=1 LD_PRELOAD=") +
                              MAPS_OPEN_COUNTER + ":" + STACKWALK_LEAKCHECK_PRELOAD +
                              " STACKWALK_LEAKCHECK=output=" + report + " " + EARLY_ALLOCATIONS +
                              " > " + out;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string printed = ReadFile(out);
  long opens = -1;
  ASSERT_EQ(std::sscanf(printed.c_str(), "maps opens before main: %ld", &opens), 1) << printed;
  EXPECT_EQ(opens, 0) << "the first allocations set the recording up";
  EXPECT_EQ(ReadFile(report), "") << "an unchecked process reported";
  std::remove(out.c_str());
  std::remove(report.c_str());
}

}  // namespace
