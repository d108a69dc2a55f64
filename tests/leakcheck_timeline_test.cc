// The timeline (leakcheck/timeline.h) as a unit: a point per interval and at new peaks (rate
// limited), the busiest threads largest first, and bounded: when full, pairs merge keeping the
// larger live bytes and the interval doubles, over any number of samples.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "leakcheck/thread_registry.h"
#include "leakcheck/timeline.h"

namespace stackwalk::leakcheck {
namespace {

constexpr uint64_t kMs = 1000000;

std::vector<Timeline::Point> Points(Timeline& timeline, uint64_t* interval_ns) {
  std::vector<Timeline::Point> out(Timeline::kPoints);
  out.resize(timeline.Copy(out.data(), Timeline::kPoints, interval_ns));
  return out;
}

TEST(Timeline, APointPerIntervalAndAtPeaksAtMostEveryEighth) {
  // A fresh registry each run (its chunks are the checker's own mappings, never given back).
  const auto registry = std::make_unique<ThreadRegistry>();
  ThreadRegistry& threads = *registry;
  Timeline timeline;
  timeline.Start(8);
  EXPECT_TRUE(timeline.Due(1000 * kMs, false));
  timeline.Sample(1000 * kMs, 10, false, threads);
  EXPECT_FALSE(timeline.Due(1007 * kMs, false));
  EXPECT_TRUE(timeline.Due(1008 * kMs, false));
  EXPECT_FALSE(timeline.Due(1000 * kMs, true));
  EXPECT_TRUE(timeline.Due(1001 * kMs, true));  // a peak: an eighth of the interval on
  timeline.Sample(1001 * kMs, 20, true, threads);
  EXPECT_FALSE(timeline.Due(1001 * kMs, true));
  EXPECT_FALSE(timeline.Due(1007 * kMs, false));  // a peak point does not move the regular one
  uint64_t interval = 0;
  const std::vector<Timeline::Point> points = Points(timeline, &interval);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].live_bytes, 20u);
  EXPECT_EQ(points[1].at_peak, 1u);
  EXPECT_EQ(interval, 8 * kMs);
  Timeline off;
  off.Start(0);
  EXPECT_FALSE(off.Due(UINT64_MAX - 1, false));
}

TEST(Timeline, TheBusiestThreadsComeLargestFirst) {
  // A fresh registry each run (its chunks are the checker's own mappings, never given back).
  const auto registry = std::make_unique<ThreadRegistry>();
  ThreadRegistry& threads = *registry;
  const uint64_t bytes[] = {5, 700, 30, 9000, 0, 41, 600};
  std::vector<uint32_t> serials;
  for (uint64_t b : bytes) {
    serials.push_back(threads.RegisterCurrent(1));
    threads.LiveBytesOf(serials.back())->Add(b);
  }
  Timeline timeline;
  timeline.Start(1);
  timeline.Sample(kMs, 1, false, threads);
  uint64_t interval = 0;
  const std::vector<Timeline::Point> points = Points(timeline, &interval);
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(points[0].threads, Timeline::kThreadsPerPoint);
  const uint64_t expected[] = {9000, 700, 600, 41};
  for (uint32_t i = 0; i < Timeline::kThreadsPerPoint; ++i) {
    EXPECT_EQ(points[0].thread[i].live_bytes, expected[i]) << i;
  }
  EXPECT_EQ(points[0].thread[0].serial, serials[3]);
}

TEST(Timeline, StaysBoundedKeepingPeaksAndDoublingTheInterval) {
  // A fresh registry each run (its chunks are the checker's own mappings, never given back).
  const auto registry = std::make_unique<ThreadRegistry>();
  ThreadRegistry& threads = *registry;
  Timeline timeline;
  timeline.Start(1);
  // A sample due every ms for 10 x kPoints ms: the live bytes rise to 777777 for 20 ms (longer
  // than the interval grows to), from ms 5555.
  uint64_t now = kMs;
  for (uint32_t i = 0; i < 10 * Timeline::kPoints; ++i, now += kMs) {
    if (timeline.Due(now, false)) timeline.Sample(now, i >= 5555 && i < 5575 ? 777777 : i % 100, false, threads);
  }
  uint64_t interval = 0;
  const std::vector<Timeline::Point> points = Points(timeline, &interval);
  EXPECT_LE(points.size(), Timeline::kPoints);
  EXPECT_GE(points.size(), Timeline::kPoints / 2);
  EXPECT_GE(interval, 8 * kMs);  // halved at least three times
  uint64_t highest = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_GT(points[i].time_ns, points[i - 1].time_ns);
    highest = std::max(highest, points[i].live_bytes);
  }
  EXPECT_EQ(highest, 777777u);
  // The points span the run: the first within its first interval, the last within its last few.
  EXPECT_LE(points.front().time_ns, kMs + interval);
  EXPECT_GE(points.back().time_ns, now - 2 * interval);
}

}  // namespace
}  // namespace stackwalk::leakcheck
