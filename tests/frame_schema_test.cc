// Every JSON producer's frames against the one frame schema, docs/schema/frame.schema.json,
// checked by Python's jsonschema (tests/check_frames.py): the symbolizer's FormatFramesJson,
// stackwalk-symbolize --json and the leak report's "frames".
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "stackwalk/stackwalk.h"
#include "stackwalk/symbolizer.h"

namespace {

const std::string kSchema = FRAME_SCHEMA;
const std::string kChecker = FRAME_CHECKER;

std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  pclose(pipe);
  return out;
}

std::string TempFile(const std::string& name) {
  return ::testing::TempDir() + "frame_schema." + std::to_string(getpid()) + "." + name;
}

// "N frames\n" with N > 0 if every frame of `path` conforms; the checker's complaint otherwise.
std::string Check(const std::string& kind, const std::string& path) {
  return Output("python3 " + kChecker + " " + kSchema + " " + kind + " " + path + " 2>&1");
}

bool Conforms(const std::string& verdict) {
  return verdict.find(" frames\n") != std::string::npos && verdict.rfind("0 frames", 0) != 0;
}

__attribute__((noinline)) int CaptureHere(void** pcs, int max) {
  int n = stackwalk_backtrace(pcs, max, STACKWALK_AUTO);
  asm volatile("" ::: "memory");
  return n;
}

TEST(FrameSchema, SymbolizerJson) {
  void* pcs[32];
  int n = CaptureHere(pcs, 32);
  ASSERT_GT(n, 2);
  stackwalk::Symbolizer symbolizer;
  std::vector<stackwalk::SymbolizedFrame> frames = symbolizer.SymbolizeTrace(pcs, n);
  // And a PC in no object: its frame still conforms.
  std::vector<stackwalk::SymbolizedFrame> none =
      symbolizer.Symbolize(reinterpret_cast<void*>(16), false);
  frames.insert(frames.end(), none.begin(), none.end());
  const std::string path = TempFile("symbolizer.json");
  std::ofstream(path) << stackwalk::FormatFramesJson(frames);
  std::string verdict = Check("array", path);
  EXPECT_TRUE(Conforms(verdict)) << verdict;
  EXPECT_EQ(verdict, std::to_string(frames.size()) + " frames\n");
  std::remove(path.c_str());
}

TEST(FrameSchema, StackwalkSymbolizeJson) {
  // Every function symbol of the inline-heavy fixture, with its inline chain.
  std::string offsets = Output("nm " + std::string(INLINE_FIXTURE) +
                               " | awk '$2 ~ /^[Tt]$/ {print \"" INLINE_FIXTURE "+0x\" $1}'");
  ASSERT_GT(offsets.size(), 100u);
  const std::string list = TempFile("offsets");
  std::ofstream(list) << offsets;
  const std::string path = TempFile("symbolize.json");
  ASSERT_EQ(std::system((std::string(STACKWALK_SYMBOLIZE) + " --json --inlines < " + list + " > " +
                         path).c_str()),
            0);
  std::string verdict = Check("symbolize", path);
  EXPECT_TRUE(Conforms(verdict)) << verdict;
  std::remove(list.c_str());
  std::remove(path.c_str());
}

TEST(FrameSchema, LeakReportFrames) {
  const std::string path = TempFile("leaks.json");
  ASSERT_EQ(std::system((std::string(STACKWALK_LEAKCHECK) + " --format json --output " + path +
                         " " + LEAKY_FIXTURE + " >/dev/null 2>&1").c_str()),
            0);
  std::string verdict = Check("leaks", path);
  EXPECT_TRUE(Conforms(verdict)) << verdict;
  std::remove(path.c_str());
}

TEST(FrameSchema, TheCheckCanFail) {
  // A frame of another layout (the leak report's before: "offset", no "index") is refused.
  const std::string path = TempFile("wrong.json");
  std::ofstream(path) << "[{\"pc\":\"0x10\",\"module\":\"\",\"offset\":\"0x10\",\"function\":\"\","
                         "\"file\":\"\",\"line\":0,\"column\":0,\"inlined\":false}]";
  std::string verdict = Check("array", path);
  EXPECT_FALSE(Conforms(verdict)) << verdict;
  EXPECT_EQ(verdict.rfind("frame 0 ", 0), 0u) << verdict;
  // And so is a file with no frames at all.
  std::ofstream(path) << "[]";
  verdict = Check("array", path);
  EXPECT_FALSE(Conforms(verdict)) << verdict;
  std::remove(path.c_str());
}

}  // namespace
