// The main of every GoogleTest binary: GoogleTest's, run in a scratch directory of its own.
// `::testing::TempDir()` names it (through TEST_TMPDIR, which the programs the tests start inherit),
// and it is removed when the tests pass: the suite runs each case as a process, and the files they
// left in /tmp grew by thousands a run. When a test fails, the directory is kept and named. A
// TEST_TMPDIR already set (by the user, or inherited by a death test's re-run of the binary) is used
// as it is and left alone.
#include <ftw.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

// What cannot be removed is left; the walk goes on.
int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) {
  ::remove(path);
  return 0;
}

// A fresh directory under $TMPDIR (else /tmp); "" if none can be made.
std::string MakeScratchDirectory() {
  const char* base = getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                        "/stackwalk-test.XXXXXX";
  return mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* given = getenv("TEST_TMPDIR");
  if (given != nullptr && *given != '\0') return RUN_ALL_TESTS();
  const std::string scratch = MakeScratchDirectory();
  // Without one, the tests use /tmp as before rather than not run.
  if (!scratch.empty()) setenv("TEST_TMPDIR", scratch.c_str(), 1);
  const pid_t main_process = getpid();
  const int status = RUN_ALL_TESTS();
  // A test's forked child that returned here must not remove its parent's files.
  if (scratch.empty() || getpid() != main_process) return status;
  if (status == 0) {
    nftw(scratch.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
  } else {
    std::fprintf(stderr, "the test's scratch files are kept in %s\n", scratch.c_str());
  }
  return status;
}
