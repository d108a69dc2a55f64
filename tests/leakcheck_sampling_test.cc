// Sampling (--sample-bytes, leakcheck/sampler.h) on a program whose allocations are known
// (tests/fixtures/known_sizes.c): the report says it was sampled, blocks of the mean or more are
// all there exactly, the estimates of the small blocks lie within the bound of the truth, a fixed
// seed repeats a run, and stackwalk-report gives the same figures from the dump.
//
// The bound: a thread's sample points are a Poisson process over its allocated bytes, so each of
// the n blocks of s bytes is recorded independently with probability p = 1 - exp(-s/N), and the
// estimate of their count, k / p for k recorded, has mean n and standard deviation
// sqrt(n (1 - p) / p). We allow 6 standard deviations: a seed failing that has probability below
// 2e-9 by the normal approximation. For N = 8192: the 200,000 blocks of 64 bytes (p = 0.0078)
// give sd 5,050, the 20,000 of 1,000 bytes (p = 0.115) sd 392. The seed is fixed, so the test
// gives the same answer every run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>
#include <regex>
#include <sstream>
#include <string>

namespace {

constexpr uint64_t kMean = 8192;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `program` (the fixture of known sizes unless told) under the launcher with `options`;
// its report (and dump, if `dump`).
std::string RunSampled(const std::string& options, const std::string& dump = "",
                       const std::string& program = KNOWN_SIZES) {
  static int serial = 0;
  const std::string report = ::testing::TempDir() + "sampled." + std::to_string(getpid()) + "." +
                             std::to_string(serial++) + ".txt";
  std::remove(report.c_str());
  if (!dump.empty()) std::remove(dump.c_str());
  const std::string command = std::string(STACKWALK_LEAKCHECK) + " --output " + report + " " +
                              options + (dump.empty() ? "" : " --dump " + dump) + " " +
                              program + " >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return ReadFile(report);
}

struct Figures {
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// Each leak entry's figures by the function of its frame #0 (leak_small, leak_medium, ...).
std::map<std::string, Figures> LeaksByFunction(const std::string& report) {
  std::map<std::string, Figures> out;
  const std::regex entry(
      R"(Direct leak of (\d+) byte\(s\) in (\d+) object\(s\) allocated from:\n\s+#0 0x[0-9a-f]+ in (\w+))");
  for (std::sregex_iterator it(report.begin(), report.end(), entry), end; it != end; ++it) {
    Figures& f = out[(*it)[3].str()];
    f.bytes += std::stoull((*it)[1].str());
    f.count += std::stoull((*it)[2].str());
  }
  return out;
}

// The count's bound: 6 standard deviations of the estimate of n blocks of `size` bytes.
double Bound(double n, double size) {
  const double p = 1.0 - std::exp(-size / static_cast<double>(kMean));
  return 6 * std::sqrt(n * (1 - p) / p);
}

void ExpectEstimates(const std::string& report) {
  const auto leaks = LeaksByFunction(report);
  ASSERT_TRUE(leaks.count("leak_small") && leaks.count("leak_medium") && leaks.count("leak_large"))
      << report;
  // Blocks of the mean or more: every one, exactly.
  EXPECT_EQ(leaks.at("leak_large").count, 4u) << report;
  EXPECT_EQ(leaks.at("leak_large").bytes, 4u << 20) << report;
  // Smaller ones: estimates within the bound; bytes are the count's, times the size.
  const Figures small = leaks.at("leak_small"), medium = leaks.at("leak_medium");
  EXPECT_NEAR(static_cast<double>(small.count), 200000, Bound(200000, 64)) << report;
  EXPECT_NEAR(static_cast<double>(small.bytes), 64.0 * small.count, 64) << report;
  EXPECT_NEAR(static_cast<double>(medium.count), 20000, Bound(20000, 1000)) << report;
  EXPECT_NEAR(static_cast<double>(medium.bytes), 1000.0 * medium.count, 1000) << report;
  EXPECT_EQ(leaks.count("churn"), 0u) << report;  // freed blocks are in no figure
}

TEST(LeakcheckSampling, ReportSaysSampledAndItsEstimatesLieWithinTheBound) {
  for (const char* seed : {"1", "2", "3"}) {
    const std::string report =
        RunSampled("--sample-bytes " + std::to_string(kMean) + " --sample-seed " + seed);
    EXPECT_NE(report.find("==stackwalk-leakcheck== sampled: mean 8192 bytes, figures are "
                          "estimates\n"),
              std::string::npos)
        << report;
    ExpectEstimates(report);
  }
}

TEST(LeakcheckSampling, WithoutSamplingTheFiguresAreExactAndNotCalledEstimates) {
  const std::string report = RunSampled("");
  EXPECT_EQ(report.find("sampled"), std::string::npos) << report;
  const auto leaks = LeaksByFunction(report);
  ASSERT_TRUE(leaks.count("leak_small")) << report;
  EXPECT_EQ(leaks.at("leak_small").count, 200000u);
  EXPECT_EQ(leaks.at("leak_medium").bytes, 20000000u);
}

TEST(LeakcheckSampling, AFixedSeedRepeatsTheRun) {
  const std::string options = "--sample-bytes 8192 --sample-seed 77";
  const auto first = LeaksByFunction(RunSampled(options));
  const auto second = LeaksByFunction(RunSampled(options));
  ASSERT_TRUE(first.count("leak_small"));
  EXPECT_EQ(first.at("leak_small").count, second.at("leak_small").count);
  EXPECT_EQ(first.at("leak_medium").bytes, second.at("leak_medium").bytes);
  // Another seed samples other blocks: of leak_small's 200,000 and leak_medium's, the chance
  // that every figure comes out the same is negligible (one figure alone matches ~0.7 %).
  const auto other = LeaksByFunction(RunSampled("--sample-bytes 8192 --sample-seed 78"));
  std::vector<uint64_t> figures_first, figures_other;
  for (const auto* m : {&first, &other}) {
    auto& v = m == &first ? figures_first : figures_other;
    for (const auto& [function, f] : *m) v.insert(v.end(), {f.count, f.bytes});
  }
  EXPECT_NE(figures_first, figures_other);
}

TEST(LeakcheckSampling, JsonAndTheDumpSayItWasSampledWithTheSameFigures) {
  const std::string dump = ::testing::TempDir() + "sampled." + std::to_string(getpid()) + ".dump";
  const std::string report = RunSampled("--sample-bytes 8192 --sample-seed 5", dump);
  // stackwalk-report of the dump: the same header line and the same estimates.
  const std::string rendered = ::testing::TempDir() + "sampled.rendered.txt";
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " " + dump + " >" + rendered).c_str()),
            0);
  const std::string from_dump = ReadFile(rendered);
  EXPECT_NE(from_dump.find("sampled: mean 8192 bytes, figures are estimates"), std::string::npos)
      << from_dump;
  const auto program = LeaksByFunction(report), later = LeaksByFunction(from_dump);
  ASSERT_TRUE(later.count("leak_small")) << from_dump;
  EXPECT_EQ(program.at("leak_small").count, later.at("leak_small").count);
  EXPECT_EQ(program.at("leak_medium").bytes, later.at("leak_medium").bytes);
  EXPECT_EQ(later.at("leak_large").bytes, 4u << 20);
  // JSON: the "sampled" member, and the summary's estimate.
  ASSERT_EQ(std::system((std::string(STACKWALK_REPORT) + " --format json " + dump + " >" +
                         rendered).c_str()),
            0);
  const std::string json = ReadFile(rendered);
  EXPECT_NE(json.find(R"("sampled":{"mean_bytes":8192,"note":"figures are estimates"})"),
            std::string::npos)
      << json;
  std::smatch total;
  ASSERT_TRUE(std::regex_search(json, total, std::regex(R"("summary":\{"bytes":(\d+),"allocations":(\d+))")))
      << json;
  const uint64_t truth = 200000 * 64 + 20000 * 1000 + (4 << 20);
  EXPECT_NEAR(std::stod(total[1].str()), truth, 64 * Bound(200000, 64) + 1000 * Bound(20000, 1000));
}

TEST(LeakcheckSampling, FreesOfRecordedBlocksAreSeenAmongTheUnrecorded) {
  // tests/fixtures/sampled_frees.c: recorded blocks freed by another thread, and realloc'ed into
  // small (mostly unrecorded) blocks and back, among many frees of blocks never recorded whose
  // filter entries (leakcheck/recorded_filter.h) meet theirs. A free the fast path let pass
  // wrongly would leave its block live in the report (the 64 handed over are still pointed at);
  // a realloc losing its record would lose the 2 MiB block kept, and one keeping the record of
  // the block it shrank (64 KiB to 64 bytes, unrecorded under these seeds) would show 64 KiB.
  for (const char* seed : {"1", "2", "3"}) {
    const std::string report = RunSampled(
        std::string("--show-reachable --sample-bytes 8192 --sample-seed ") + seed, "",
        SAMPLED_FREES);
    EXPECT_NE(report.find("== leaks: 0 bytes direct in 0 allocations, 0 bytes indirect in 0 "
                          "allocations\n"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("== 2097152 bytes in 1 allocation still reachable\n"), std::string::npos)
        << report;
    EXPECT_TRUE(std::regex_search(
        report, std::regex(R"(Reachable: 2097152 byte\(s\) in 1 object\(s\) allocated from:\n\s+#0 0x[0-9a-f]+ in keep_realloced)")))
        << report;
  }
}

}  // namespace
