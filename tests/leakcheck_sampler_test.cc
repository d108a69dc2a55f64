// The sampler (leakcheck/sampler.h): the probability that a block is recorded is 1 - exp(-s/N)
// for each size, blocks of N bytes or more are always recorded, and the estimates a report sums
// (report_group.cc) weigh each recorded block by the inverse of that probability.
//
// The bounds: a thread's sample points form a Poisson process over its allocated bytes, so
// disjoint blocks are recorded independently and the number k recorded of n blocks of size s is
// Binomial(n, p), p = 1 - exp(-s/N): mean np, standard deviation sqrt(np(1-p)). The estimate
// k / p of n then has standard deviation sqrt(n(1-p)/p). Each check allows 6 standard
// deviations (a false failure has probability below 2e-9 per check by the normal approximation,
// whatever the seed); the seeds are fixed, so a run is the same every time.
#include "leakcheck/sampler.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "leakcheck/recording.h"
#include "leakcheck/report_group.h"

namespace stackwalk::leakcheck {
namespace {

double Probability(double size, double mean) { return 1.0 - std::exp(-size / mean); }

TEST(LeakcheckSampler, WeightIsTheInverseOfTheProbabilityOfBeingRecorded) {
  // (1 - exp loses digits for small s/N that expm1 keeps: equal to 1e-12 relative.)
  EXPECT_NEAR(SampleWeight(64, 4096), 1.0 / Probability(64, 4096), 1e-12 * 64.5);
  EXPECT_NEAR(SampleWeight(4095, 4096), 1.0 / Probability(4095, 4096), 1e-12);
  EXPECT_NEAR(SampleWeight(1, 524288), 524288.5, 0.01);  // ~N/s + 1/2 for small blocks
  EXPECT_EQ(SampleWeight(4096, 4096), 1.0);   // always recorded: stands for itself
  EXPECT_EQ(SampleWeight(1 << 20, 4096), 1.0);
  EXPECT_EQ(SampleWeight(64, 0), 1.0);        // no sampling
  EXPECT_EQ(EstimatedBytes(64, 0), 64u);
  EXPECT_EQ(EstimatedBytes(8192, 4096), 8192u);
  EXPECT_EQ(EstimatedBytes(64, 4096), 4128u);  // 64 x 64.5013
}

TEST(LeakcheckSampler, WithoutSamplingAndForLargeBlocksEveryAllocationIsRecorded) {
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(ShouldRecord(16, 0, 0));
    ASSERT_TRUE(ShouldRecord(4096, 4096, 5));
    ASSERT_TRUE(ShouldRecord(100000, 4096, 5));
  }
}

// Blocks of three sizes interleaved, as a program allocates them: each size is recorded in the
// proportion p(s), and each size's estimate lies within the bound of its true count.
TEST(LeakcheckSampler, EachSizeIsRecordedWithProbabilityOneMinusExpOfMinusSizeOverMean) {
  constexpr uint64_t kMean = 4096;
  const uint64_t sizes[] = {16, 256, 3000};
  constexpr int kRounds = 400000;
  for (uint64_t seed : {1u, 2u, 3u}) {
    uint64_t recorded[3] = {};
    double estimate[3] = {};
    std::thread([&] {  // a thread of its own: a fresh countdown for this seed
      for (int i = 0; i < kRounds; ++i) {
        for (int k = 0; k < 3; ++k) {
          if (ShouldRecord(sizes[k], kMean, seed)) {
            ++recorded[k];
            estimate[k] += SampleWeight(sizes[k], kMean);
          }
        }
        ASSERT_TRUE(ShouldRecord(kMean * 2, kMean, seed));  // large: recorded, countdown kept
      }
    }).join();
    for (int k = 0; k < 3; ++k) {
      const double p = Probability(static_cast<double>(sizes[k]), kMean);
      const double expected = kRounds * p;
      const double sd = std::sqrt(kRounds * p * (1 - p));
      EXPECT_NEAR(static_cast<double>(recorded[k]), expected, 6 * sd)
          << "size " << sizes[k] << " seed " << seed;
      EXPECT_NEAR(estimate[k], kRounds, 6 * std::sqrt(kRounds * (1 - p) / p))
          << "size " << sizes[k] << " seed " << seed;
    }
  }
}

// A seed's streams: the n-th thread to sample takes the n-th, so a whole run repeats (the fixture
// run twice in leakcheck_sampling_test); here, that a stream samples and two seeds differ.
TEST(LeakcheckSampler, SeedsGiveDifferentSamples) {
  auto decisions = [](uint64_t seed) {
    std::vector<bool> out;
    std::thread([&] {
      for (int i = 0; i < 20000; ++i) out.push_back(ShouldRecord(64, 4096, seed));
    }).join();
    return out;
  };
  const std::vector<bool> a = decisions(11), b = decisions(12);
  EXPECT_NE(a, b);
  EXPECT_GT(std::count(a.begin(), a.end(), true), 0);
  EXPECT_LT(std::count(a.begin(), a.end(), true), 20000);
}

// A forked child draws other sample points than its parent (a pre-forked server's workers must
// not all record the same sites), and two children of one parent differ too. The child runs
// recording's fork handler.
TEST(LeakcheckSampler, AForkedChildSamplesOtherBytesThanItsParent) {
  constexpr int kDraws = 20000;
  auto draw = [] {
    std::string out;
    for (int i = 0; i < kDraws; ++i) out.push_back(ShouldRecord(64, 4096, 21) ? '1' : '0');
    return out;
  };
  // The parent's draws after each of two forks, and each child's.
  auto run = [&] {
    std::vector<std::string> out;
    std::thread([&] {
      draw();  // the countdown started before the forks
      for (int child = 0; child < 2; ++child) {
        int fds[2];
        if (pipe(fds) != 0) return;
        SamplerBeforeFork();  // what the checker's prepare handler does
        const pid_t pid = fork();
        if (pid == 0) {
          ForgetThreadAfterFork();  // the checker's child handler
          const std::string mine = draw();
          const bool whole = write(fds[1], mine.data(), mine.size()) == kDraws;
          _exit(whole ? 0 : 1);
        }
        close(fds[1]);
        out.push_back(draw());  // the parent goes on from where the fork found it
        std::string theirs(kDraws, '?');
        size_t got = 0;
        for (ssize_t n; got < theirs.size() && (n = read(fds[0], &theirs[got], kDraws - got)) > 0;)
          got += static_cast<size_t>(n);
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        out.push_back(got == theirs.size() ? theirs : "");
      }
    }).join();
    return out;  // parent after fork 1, child 1, parent after fork 2, child 2
  };
  const std::vector<std::string> draws = run();
  ASSERT_EQ(draws.size(), 4u);
  ASSERT_EQ(draws[1].size(), size_t{kDraws});
  ASSERT_EQ(draws[3].size(), size_t{kDraws});
  // (Compared as bools: a failure printing 20,000 digits helps no one.)
  EXPECT_TRUE(draws[0] != draws[1]) << "child 1 sampled its parent's bytes";
  EXPECT_TRUE(draws[2] != draws[3]) << "child 2 sampled its parent's bytes";
  EXPECT_TRUE(draws[1] != draws[3]) << "two children sampled the same bytes";
}

// Estimates never leave the range of a uint64 (a cast of a double past 2^64 is undefined): a
// huge sum saturates, and the options refuse a mean past kMaxSampleBytes.
TEST(LeakcheckSampler, EstimatesSaturateInsteadOfWrapping) {
  EXPECT_EQ(SaturatedRound(0x1p70), UINT64_MAX);
  EXPECT_EQ(SaturatedRound(-3.0), 0u);
  EXPECT_EQ(SaturatedRound(2.5), 3u);
  EstimateSum sum;
  for (int i = 0; i < 40; ++i) sum.Add(1, kMaxSampleBytes);  // ~2^40 allocations each
  EXPECT_EQ(sum.rounded_count(), static_cast<uint64_t>(sum.count + 0.5));
  sum.bytes = 1e30;
  EXPECT_EQ(sum.rounded_bytes(), UINT64_MAX);
  EXPECT_GE(EstimatedBytes(1, kMaxSampleBytes), kMaxSampleBytes);
}

// The group stage sums each recorded block's weight, rounding once per figure.
TEST(LeakcheckSampler, ReportFiguresAreTheSumsOfTheWeights) {
  constexpr uint64_t kMean = 1000;
  std::vector<Allocation> blocks;
  for (uint64_t i = 0; i < 3; ++i) blocks.push_back({0x1000 + 0x100 * i, 700, i, 1, 1});
  blocks.push_back({0x9000, 5000, 9, 1, 1});  // at least the mean: itself
  std::vector<NamedStack> stacks(2);
  stacks[1].pcs = {0x401000};
  for (Allocation& b : blocks) b.stack_id = 1;
  blocks[3].stack_id = 0;
  LeakReport report;
  report.sample_bytes = kMean;
  GroupBlocks(blocks.data(), blocks.size(), {}, stacks, /*at_exit=*/false, &report);
  FilterEntries("", "", false, stacks, &report);
  ASSERT_EQ(report.entries.size(), 2u);
  const double w = 1.0 / Probability(700, kMean);  // 1.9866: 3 blocks stand for 5.96
  const ReportEntry& sampled = report.entries[0].stack_id == 1 ? report.entries[0] : report.entries[1];
  const ReportEntry& large = report.entries[0].stack_id == 1 ? report.entries[1] : report.entries[0];
  EXPECT_EQ(sampled.count, static_cast<uint64_t>(3 * w + 0.5));  // 6, not 3 x round(1.99)
  EXPECT_EQ(sampled.bytes, static_cast<uint64_t>(3 * 700 * w + 0.5));
  EXPECT_EQ(large.count, 1u);
  EXPECT_EQ(large.bytes, 5000u);
  EXPECT_EQ(report.summary.allocations, static_cast<uint64_t>(3 * w + 0.5) + 1);
  ASSERT_EQ(report.threads.size(), 1u);
  EXPECT_EQ(report.threads[0].bytes, static_cast<uint64_t>(3 * 700 * w + 5000 + 0.5));
  EXPECT_EQ(report.threads[0].count, static_cast<uint64_t>(3 * w + 1 + 0.5));
}

}  // namespace
}  // namespace stackwalk::leakcheck
