// The leak dump as a unit: what EncodeDump writes DecodeDumps reads back; every truncation and
// random corruption of a small dump gives an error (and what could be read), never a crash;
// unknown sections are skipped, a newer major version refused; and the report made from a dump
// suppresses a leak together with the blocks it alone holds (through the dump's leak edges).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_bytes.h"
#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_encode.h"
#include "leakcheck/dump/dump_report.h"
#include "leakcheck/dump/profile_render.h"
#include "leakcheck/dump/profile_view.h"
#include "leakcheck/sampler.h"
#include "leakcheck/scan/verdict.h"

namespace stackwalk::leakcheck::dump {
namespace {

// Two objects (files that do not exist: frames stay unnamed, their module known), three stacks,
// a leaked block holding another, a reachable one and a second direct leak.
DumpContents Sample() {
  DumpContents c;
  c.process = {4242, 1, true, true, 62, 1700000000000000000u, "/usr/bin/app", "exit"};
  c.summary.peak_bytes = 9000;
  c.summary.live_allocations = 4;
  c.summary.distinct_stacks = 12;
  c.summary.table_bytes = 4096;
  c.summary.stack_bytes = 8192;
  c.summary.method = "ptrace";
  c.summary.stopped_threads = 2;
  c.summary.pause_ns = 1234;
  c.summary.check_ns = 5678;
  c.summary.unstopped = {{77, "signal blocked"}};
  c.summary.untracked = {3, 1, 70000};
  c.rendering.libraries = "";
  DumpModule app;
  app.path = "/nonexistent/app";
  app.build_id = {0xde, 0xad, 0xbe, 0xef};
  app.load_bias = 0x555500000000;
  app.extent = {0x555500000000, 0x555500010000};
  app.exec = {{0x555500001000, 0x555500008000}};
  DumpModule plugin;
  plugin.path = "/nonexistent/libplugin.so";
  plugin.load_bias = 0x7f0000000000;
  plugin.extent = {0x7f0000000000, 0x7f0000004000};
  plugin.closed_at = 17;
  c.modules = {app, plugin};
  c.stacks = {{7, 1, {{1, 0x1234}, {0, 0x2000}}},
              {9, 2, {{0, 0x2100}, {kUnknownModule, 0xdeadbeef}}},
              {11, 3, {{0, 0x2200}}}};
  const auto v = [](Verdict x) { return static_cast<uint8_t>(x); };
  c.blocks = {{0x1000, 100, 1, 7, 1, v(Verdict::kDirect)},
              {0x2000, 50, 2, 9, 1, v(Verdict::kIndirect)},
              {0x3000, 4096, 3, 11, 2, v(Verdict::kReachable)},
              {0x4000, 10, 4, 11, 2, v(Verdict::kDirect)}};
  c.edges = {{0, 1}};
  c.has_edges = true;
  c.threads = {{1, 4242, 9000, "app"}, {2, 4243, 4096, "worker"}};
  // The profile's sections: stack 13 has no live block any more (its frames are still listed).
  c.stacks.push_back({13, UINT64_MAX, {{0, 0x2300}}});
  c.has_stack_stats = true;
  c.stack_stats = {{7, 3, 300, 100, 1, 0, 0, 200, 2},
                   {11, 2, 4106, 4106, 2, 0, 0, 4106, 2},
                   {13, 40, 640, 0, 0, 40, 640, 64, 1}};
  c.has_thread_totals = true;
  c.thread_totals = {{1, 4242, false, 150, 9000, "app"}, {2, 4243, true, 4106, 4106, "worker"},
                     {3, 4244, true, 0, 64, ""}};
  c.has_timeline = true;
  c.timeline_interval_ns = 200000000;
  c.timeline = {{0, 100, false, {{1, 100}}},
                {100000000, 9000, true, {{1, 4894}, {2, 4106}}},
                {250000000, 4256, false, {{2, 4106}, {1, 150}, {7, 1}}}};
  return c;
}

DecodedDumps Decode(const std::string& bytes) {
  return DecodeDumps(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// Renders whatever was decoded (both formats): must not crash, whatever the bytes were.
void RenderAll(const DecodedDumps& decoded) {
  for (const DumpContents& dump : decoded.dumps) {
    RenderRequest text, json;
    json.json = true;
    RenderDumpReport(dump, text, {});
    RenderDumpReport(dump, json, {});
    for (ViewKind kind : {ViewKind::kPeak, ViewKind::kAllocations, ViewKind::kTemporary,
                          ViewKind::kLive, ViewKind::kThreads, ViewKind::kTimeline}) {
      DumpNamer namer(dump, {});
      const ProfileView view = BuildProfileView(dump, kind, &namer);
      RenderViewText(view, 10);
      RenderViewJson(view, 0);
      RenderViewFolded(view);
    }
  }
}

TEST(LeakDump, WhatIsWrittenIsReadBack) {
  const DumpContents c = Sample();
  const DecodedDumps d = Decode(EncodeDump(c));
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.dumps.size(), 1u);
  const DumpContents& r = d.dumps[0];
  EXPECT_EQ(r.process.pid, 4242);
  EXPECT_EQ(r.process.program, "/usr/bin/app");
  EXPECT_EQ(r.process.occasion, "exit");
  EXPECT_TRUE(r.process.at_exit);
  EXPECT_EQ(r.process.unix_time_ns, c.process.unix_time_ns);
  EXPECT_EQ(r.summary.method, "ptrace");
  EXPECT_EQ(r.summary.pause_ns, 1234u);
  ASSERT_EQ(r.summary.unstopped.size(), 1u);
  EXPECT_EQ(r.summary.unstopped[0].why, "signal blocked");
  ASSERT_EQ(r.modules.size(), 2u);
  EXPECT_EQ(r.modules[0].build_id, c.modules[0].build_id);
  EXPECT_EQ(r.modules[0].exec.size(), 1u);
  EXPECT_EQ(r.modules[1].closed_at, 17u);
  ASSERT_EQ(r.stacks.size(), 4u);
  EXPECT_EQ(r.stacks[1].frames[1].module, kUnknownModule);
  EXPECT_EQ(r.stacks[1].frames[1].offset, 0xdeadbeefu);
  ASSERT_EQ(r.blocks.size(), 4u);
  EXPECT_EQ(r.blocks[1].verdict, static_cast<uint8_t>(Verdict::kIndirect));
  EXPECT_EQ(r.blocks[3].size, 10u);
  ASSERT_TRUE(r.has_edges);
  ASSERT_EQ(r.edges.size(), 1u);
  ASSERT_EQ(r.threads.size(), 2u);
  EXPECT_EQ(r.threads[1].name, "worker");
}

TEST(LeakDump, TheProfileSectionsAreReadBack) {
  const DecodedDumps d = Decode(EncodeDump(Sample()));
  ASSERT_EQ(d.error, "");
  const DumpContents& r = d.dumps[0];
  ASSERT_TRUE(r.has_stack_stats);
  ASSERT_EQ(r.stack_stats.size(), 3u);
  EXPECT_EQ(r.stack_stats[2].stack_id, 13u);
  EXPECT_EQ(r.stack_stats[2].temporary_bytes, 640u);
  EXPECT_EQ(r.stack_stats[1].peak_bytes, 4106u);
  EXPECT_EQ(r.stack_stats[0].peak_blocks, 2u);
  ASSERT_TRUE(r.has_thread_totals);
  ASSERT_EQ(r.thread_totals.size(), 3u);
  EXPECT_TRUE(r.thread_totals[1].exited);
  EXPECT_EQ(r.thread_totals[0].peak_bytes, 9000u);
  EXPECT_EQ(r.stacks.back().earliest, UINT64_MAX);
  ASSERT_TRUE(r.has_timeline);
  EXPECT_EQ(r.timeline_interval_ns, 200000000u);
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_TRUE(r.timeline[1].at_peak);
  ASSERT_EQ(r.timeline[2].threads.size(), 3u);
  EXPECT_EQ(r.timeline[2].threads[0].live_bytes, 4106u);
}

TEST(LeakDump, TheLeakReportIsTheSameWithOrWithoutTheProfileSections) {
  DumpContents without = Sample();
  without.stacks.pop_back();
  without.has_stack_stats = without.has_thread_totals = without.has_timeline = false;
  without.stack_stats.clear();
  without.thread_totals.clear();
  for (bool json : {false, true}) {
    RenderRequest request;
    request.json = json;
    EXPECT_EQ(RenderDumpReport(Sample(), request, {}), RenderDumpReport(without, request, {}));
  }
}

// What the launcher reads of a dump to render its leak report: the stacks of no live block and
// the stack statistics are passed over, every other section kept, and the report is the same;
// a corrupt dump read so fails as a whole read does.
TEST(LeakDump, ReadForItsLeakReportADumpKeepsWhatTheReportShows) {
  const std::string bytes = EncodeDump(Sample());
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const DecodedDumps whole = DecodeDumps(data, bytes.size());
  const DecodedDumps leaks = DecodeDumps(data, bytes.size(), DecodeScope::kLeakReport);
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(leaks.error, "");
  ASSERT_EQ(leaks.dumps.size(), 1u);
  const DumpContents& d = leaks.dumps[0];
  ASSERT_EQ(d.stacks.size(), 3u);  // stack 13 has no live block
  for (const DumpStack& s : d.stacks) EXPECT_NE(s.id, 13u);
  EXPECT_EQ(d.stacks[1].frames.size(), 2u);
  EXPECT_EQ(d.stacks[1].frames[1].offset, 0xdeadbeefu);
  EXPECT_FALSE(d.has_stack_stats);
  EXPECT_TRUE(d.stack_stats.empty());
  EXPECT_EQ(d.blocks.size(), 4u);
  EXPECT_EQ(d.thread_totals.size(), 3u);
  EXPECT_EQ(d.timeline.size(), whole.dumps[0].timeline.size());
  for (bool json : {false, true}) {
    RenderRequest request;
    request.json = json;
    EXPECT_EQ(RenderDumpReport(d, request, {}), RenderDumpReport(whole.dumps[0], request, {}));
  }
  // Cut inside the stack it passes over: the same error as the whole read's.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    const DecodedDumps a = DecodeDumps(data, cut);
    const DecodedDumps b = DecodeDumps(data, cut, DecodeScope::kLeakReport);
    EXPECT_EQ(a.error, b.error) << "cut at " << cut;
    EXPECT_EQ(a.dumps.size(), b.dumps.size()) << "cut at " << cut;
  }
}

TEST(LeakDump, ViewsOfTheSample) {
  const DumpContents c = Sample();
  DumpNamer namer(c, {});
  const ProfileView peak = BuildProfileView(c, ViewKind::kPeak, &namer);
  ASSERT_EQ(peak.stacks.size(), 3u);
  EXPECT_EQ(peak.total_bytes, 200u + 4106u + 64u);
  EXPECT_EQ(peak.stacks[0].bytes, 4106u);  // largest first
  EXPECT_EQ(peak.stacks[0].frames, std::vector<std::string>{"app+0x2200"});
  const ProfileView temporary = BuildProfileView(c, ViewKind::kTemporary, &namer);
  ASSERT_EQ(temporary.stacks.size(), 1u);
  EXPECT_EQ(RenderViewFolded(temporary), "app+0x2300 40\n");
  const ProfileView live = BuildProfileView(c, ViewKind::kLive, &namer);
  EXPECT_EQ(live.total_bytes, 100u + 50u + 4096u + 10u);
  EXPECT_EQ(live.total_allocations, 4u);
  // Outermost first, the unnamed PC as itself.
  EXPECT_NE(RenderViewFolded(live).find("0xdeadbeef;app+0x2100 50\n"), std::string::npos);
  const ProfileView threads = BuildProfileView(c, ViewKind::kThreads, &namer);
  ASSERT_EQ(threads.threads.size(), 3u);
  EXPECT_EQ(threads.threads[0].name, "app");  // the largest peak first
  EXPECT_EQ(threads.threads[2].name, "?");
  const ProfileView timeline = BuildProfileView(c, ViewKind::kTimeline, &namer);
  ASSERT_EQ(timeline.timeline.size(), 3u);
  EXPECT_EQ(timeline.timeline[1].threads[1].name, "worker");
  EXPECT_EQ(timeline.timeline[2].threads[2].name, "?");  // a serial with no totals
  EXPECT_NE(RenderViewText(timeline, 0).find("0.100           9000 peak app[1]=4894 worker[2]=4106"),
            std::string::npos)
      << RenderViewText(timeline, 0);
  DumpContents old = Sample();
  old.has_stack_stats = false;
  old.stack_stats.clear();
  EXPECT_NE(BuildProfileView(old, ViewKind::kPeak, &namer).missing, "");
}

TEST(LeakDump, StatisticsOfAStackNotInTheDumpAreDroppedAndNamed) {
  DumpContents c = Sample();
  c.stack_stats.push_back({99, 1, 1, 0, 0, 0, 0, 0, 0});
  const DecodedDumps d = Decode(EncodeDump(c));
  EXPECT_NE(d.error.find("stack statistics name stack 99"), std::string::npos) << d.error;
  ASSERT_EQ(d.dumps.size(), 1u);
  EXPECT_EQ(d.dumps[0].stack_stats.size(), 3u);
}

TEST(LeakDump, AppendedDumpsAreEachRead) {
  DumpContents second = Sample();
  second.process.number = 2;
  const DecodedDumps d = Decode(EncodeDump(Sample()) + EncodeDump(second));
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.dumps.size(), 2u);
  EXPECT_EQ(d.dumps[1].process.number, 2u);
}

TEST(LeakDump, AStreamedDumpIsTheSameBytesInBoundedPieces) {
  // Big enough for several pieces: 20,000 stacks of 12 frames (~3 MB), the sample's blocks after;
  // the first stack 0-3 frames longer, so that the pieces' ends fall at other places in the
  // frames' integers (12 bytes a frame), some inside one.
  std::vector<DumpContents> large;
  for (uint32_t extra = 0; extra < 4; ++extra) {
    DumpContents c = Sample();
    const auto sample_stacks = c.stacks;
    c.stacks.clear();
    for (uint32_t id = 0; id < 20000; ++id) {
      DumpStack s;
      s.id = 100 + id;
      s.earliest = id;
      for (uint32_t f = 0; f < 12 + (id == 0 ? extra : 0); ++f) {
        s.frames.push_back({id % 2, 0x1000 + 16ull * (id + f) + 0x0102030405060000ull * (f % 3)});
      }
      c.stacks.push_back(std::move(s));
    }
    c.stacks.insert(c.stacks.end(), sample_stacks.begin(), sample_stacks.end());
    large.push_back(std::move(c));
  }
  large.push_back(Sample());
  for (const DumpContents& contents : large) {
    const std::string whole = EncodeDump(contents);
    std::string streamed;
    size_t pieces = 0, largest = 0;
    const uint64_t handed = EncodeDump(contents, [&](const char* data, size_t n) {
      streamed.append(data, n);
      ++pieces;
      largest = n > largest ? n : largest;
    });
    EXPECT_EQ(handed, whole.size());
    // The lengths declared ahead (measured by a first pass) included. Not EXPECT_EQ: gtest's
    // diff of two 3 MB strings takes gigabytes.
    const auto differ = std::mismatch(streamed.begin(), streamed.end(), whole.begin(), whole.end());
    EXPECT_TRUE(streamed == whole) << "the first difference at byte "
                                   << (differ.first - streamed.begin()) << " of " << whole.size();
    EXPECT_LE(largest, kDumpPieceBytes);
    if (whole.size() > kDumpPieceBytes) EXPECT_GE(pieces, whole.size() / kDumpPieceBytes);
    const DecodedDumps d = Decode(streamed);
    ASSERT_EQ(d.error, "");
    ASSERT_EQ(d.dumps.size(), 1u);
    ASSERT_EQ(d.dumps[0].stacks.size(), contents.stacks.size());
    for (size_t i = 0; i < contents.stacks.size(); ++i) {
      const DumpStack& read = d.dumps[0].stacks[i];
      ASSERT_EQ(read.id, contents.stacks[i].id);
      ASSERT_EQ(read.frames.size(), contents.stacks[i].frames.size()) << "stack " << i;
      for (size_t f = 0; f < read.frames.size(); ++f) {
        ASSERT_EQ(read.frames[f].module, contents.stacks[i].frames[f].module);
        ASSERT_EQ(read.frames[f].offset, contents.stacks[i].frames[f].offset)
            << "stack " << i << " frame " << f;
      }
    }
  }
}

TEST(LeakDump, EveryTruncationIsAnErrorThatNamesTheByte) {
  const std::string bytes = EncodeDump(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const DecodedDumps d = Decode(bytes.substr(0, n));
    ASSERT_NE(d.error, "") << "cut at " << n;
    if (n >= kHeaderBytes) {
      EXPECT_NE(d.error.find("truncated at byte " + std::to_string(n)), std::string::npos)
          << n << ": " << d.error;
      EXPECT_EQ(d.dumps.size(), 1u) << n;  // the partial dump, to report what it has
    }
    RenderAll(d);
  }
  // Cut after the blocks: the partial report still has the leaks.
  const DecodedDumps d = Decode(bytes.substr(0, bytes.size() - 30));
  ASSERT_EQ(d.dumps.size(), 1u);
  EXPECT_EQ(d.dumps[0].blocks.size(), 4u);
}

// Little-endian fields of a dump's header, overwritten (docs/dump-format.md: header_bytes at
// byte 12, dump_bytes at byte 16).
void Put(std::string* bytes, size_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) (*bytes)[at + i] = static_cast<char>(value >> (8 * i));
}

TEST(LeakDump, ALengthPastTheFileIsACutEvenWithItsEndSectionRead) {
  std::string bytes = EncodeDump(Sample());
  Put(&bytes, 16, bytes.size() + 100, 8);
  const DecodedDumps d = Decode(bytes);
  EXPECT_NE(d.error.find("truncated at byte " + std::to_string(bytes.size())), std::string::npos)
      << d.error;
}

TEST(LeakDump, ALengthThatWrapsNeverLeadsBackToAnEarlierDump) {
  // Three dumps at 0, A and B; B's length is 2^64 - B + A, so B + length wraps to A: read as
  // the next dump's start, the reader would go A, B, A, ... for ever.
  const std::string one = EncodeDump(Sample());
  std::string bytes = one + one + one;
  const uint64_t a = one.size(), b = 2 * one.size();
  Put(&bytes, b + 16, uint64_t{0} - b + a, 8);
  const DecodedDumps d = Decode(bytes);
  EXPECT_NE(d.error, "");
  EXPECT_EQ(d.dumps.size(), 3u);
}

TEST(LeakDump, AHeaderLongerThanACutDumpIsACutNotAReadPastIt) {
  std::string bytes = EncodeDump(Sample()).substr(0, kHeaderBytes + 40);
  Put(&bytes, 12, 1000, 4);   // header_bytes past the file's end
  Put(&bytes, 16, 5000, 8);   // and a dump longer still: a cut dump
  const DecodedDumps d = Decode(bytes);
  EXPECT_NE(d.error.find("truncated"), std::string::npos) << d.error;
  RenderAll(d);
}

// A sampling mean past the largest the options accept is refused by name: its estimates (about
// the mean per block) would not fit in 64 bits.
TEST(LeakDump, ASamplingMeanBeyondTheLargestIsRefused) {
  DumpContents c = Sample();
  c.sample_bytes = kMaxSampleBytes;
  EXPECT_EQ(Decode(EncodeDump(c)).error, "");
  c.sample_bytes = UINT64_MAX;
  const DecodedDumps d = Decode(EncodeDump(c));
  EXPECT_NE(d.error.find("sampling mean of 18446744073709551615 bytes"), std::string::npos)
      << d.error;
  RenderAll(d);
  // What was read before the refusal is kept, without the refused mean: it encodes again.
  for (const DumpContents& partial : d.dumps) {
    EXPECT_EQ(partial.sample_bytes, 0u);
    EXPECT_EQ(Decode(EncodeDump(partial)).error, "");
  }
}

TEST(LeakDump, RandomCorruptionGivesAnErrorOrAReportNeverACrash) {
  DumpContents sampled = Sample();  // a sampled dump too: its estimates from corrupt sizes
  sampled.sample_bytes = 8192;
  const std::string bytes = EncodeDump(Sample()) + EncodeDump(sampled);
  std::mt19937 random(18);  // fixed: a failure is reproducible
  int errors = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string corrupt = bytes;
    const int flips = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < flips; ++i) {
      corrupt[random() % corrupt.size()] = static_cast<char>(random());
    }
    const DecodedDumps d = Decode(corrupt);
    errors += !d.error.empty();
    RenderAll(d);
  }
  EXPECT_GT(errors, 0);
}

TEST(LeakDump, ANewerMajorVersionIsRefusedAndNotADumpSaysSo) {
  std::string bytes = EncodeDump(Sample());
  bytes[8] = 2;  // major version, little-endian
  bytes[10] = 0;  // minor
  DecodedDumps d = Decode(bytes);
  EXPECT_NE(d.error.find("version 2.0"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("newer"), std::string::npos) << d.error;
  EXPECT_TRUE(d.dumps.empty());
  d = Decode("==stackwalk-leakcheck== leaks at exit (report 1)\n");
  EXPECT_NE(d.error.find("not a leak dump"), std::string::npos) << d.error;
}

TEST(LeakDump, UnknownSectionsAreSkippedAndASectionPastTheEndIsNamed) {
  const std::string bytes = EncodeDump(Sample());
  // A section of a later writer (id 99, 5 bytes) before the end section.
  ByteSink extra;
  extra.U32(99);
  extra.U32(0);
  extra.U64(5);
  extra.Bytes("hello", 5);
  std::string longer = bytes.substr(0, bytes.size() - kSectionHeaderBytes) + extra.bytes() +
                       bytes.substr(bytes.size() - kSectionHeaderBytes);
  ByteSink total;
  total.U64(longer.size());
  longer.replace(16, 8, total.bytes());
  DecodedDumps d = Decode(longer);
  EXPECT_EQ(d.error, "");
  ASSERT_EQ(d.dumps.size(), 1u);
  EXPECT_EQ(d.dumps[0].blocks.size(), 4u);
  // The first section (process, at byte 24) says it runs to byte 2^40.
  std::string bad = bytes;
  ByteSink huge;
  huge.U64(uint64_t{1} << 40);
  bad.replace(kHeaderBytes + 8, 8, huge.bytes());
  d = Decode(bad);
  EXPECT_NE(d.error.find("section 1 (process) at byte 24 runs past"), std::string::npos) << d.error;
}

// `bytes` (one dump) with its summary section's payload `delta` bytes longer (zeros appended) or
// shorter (cut from its end), the section's and the dump's lengths mended, and minor version
// `minor`: a dump as an earlier or a later writer of the same major version makes it.
std::string WithSummaryResized(const std::string& bytes, int64_t delta, uint16_t minor) {
  std::string out = bytes;
  ByteSink version;
  version.U16(minor);
  out.replace(10, 2, version.bytes());
  for (uint64_t pos = kHeaderBytes; pos + kSectionHeaderBytes <= out.size();) {
    uint32_t id = 0;
    uint64_t length = 0;
    std::memcpy(&id, out.data() + pos, 4);
    std::memcpy(&length, out.data() + pos + 8, 8);
    if (id != kSummary) {
      pos += kSectionHeaderBytes + length;
      continue;
    }
    const uint64_t end = pos + kSectionHeaderBytes + length;
    if (delta > 0) {
      out.insert(end, static_cast<size_t>(delta), '\0');
    } else {
      out.erase(end - static_cast<uint64_t>(-delta), static_cast<size_t>(-delta));
    }
    ByteSink mended, total;
    mended.U64(length + delta);
    out.replace(pos + 8, 8, mended.bytes());
    total.U64(out.size());
    out.replace(16, 8, total.bytes());
    break;
  }
  return out;
}

// 1.4 appended the untracked allocations to the summary: a 1.3 dump (the section without them)
// reads as none untracked, its other figures intact; a later writer's longer section still gives
// them (what a 1.3 reader does with 1.4's: reads its fields, skips the rest of the section).
TEST(LeakDump, TheUntrackedCountsAreReadBackAndAnOlderDumpHasNone) {
  const std::string bytes = EncodeDump(Sample());
  DecodedDumps d = Decode(bytes);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.dumps[0].minor, 4u);
  EXPECT_EQ(d.dumps[0].summary.untracked.refused, 3u);
  EXPECT_EQ(d.dumps[0].summary.untracked.no_memory, 1u);
  EXPECT_EQ(d.dumps[0].summary.untracked.bytes, 70000u);
  const std::string text = RenderDumpReport(d.dumps[0], RenderRequest{}, {});
  EXPECT_NE(text.find("== 4 allocations (70000 bytes) could not be tracked: 3 refused (an "
                      "address above 2^48 or not 8-byte aligned, or a block of 1 TiB or more), 1 "
                      "for lack of memory for the checker's tables;"),
            std::string::npos)
      << text;

  d = Decode(WithSummaryResized(bytes, -24, 3));
  ASSERT_EQ(d.error, "");
  const DumpSummary& old = d.dumps[0].summary;
  EXPECT_EQ(old.untracked.allocations(), 0u);
  EXPECT_EQ(old.untracked.bytes, 0u);
  ASSERT_EQ(old.unstopped.size(), 1u);
  EXPECT_EQ(old.unstopped[0].why, "signal blocked");
  EXPECT_EQ(old.check_ns, 5678u);
  EXPECT_EQ(RenderDumpReport(d.dumps[0], RenderRequest{}, {}).find("could not be tracked"),
            std::string::npos);

  d = Decode(WithSummaryResized(bytes, 16, 5));
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.dumps[0].summary.untracked.refused, 3u);
  EXPECT_EQ(d.dumps[0].summary.untracked.bytes, 70000u);
  EXPECT_EQ(d.dumps[0].blocks.size(), 4u);
}

TEST(LeakDump, ReferencesToNothingAreErrorsAndDropped) {
  DumpContents c = Sample();
  c.stacks[0].frames[0].module = 5;
  c.edges.push_back({0, 99});
  const DecodedDumps d = Decode(EncodeDump(c));
  EXPECT_NE(d.error.find("names module 5 of 2"), std::string::npos) << d.error;
  ASSERT_EQ(d.dumps.size(), 1u);
  EXPECT_EQ(d.dumps[0].stacks[0].frames[0].module, kUnknownModule);
  EXPECT_EQ(d.dumps[0].edges.size(), 1u);
}

std::string SuppressionsFile(const std::string& text) {
  const std::string path = ::testing::TempDir() + "dump_test.supp";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

TEST(LeakDumpReport, ASuppressedLeakTakesTheBlocksItHoldsWithIt) {
  const DumpContents c = Sample();
  DumpNamer namer(c, {});
  RenderRequest request;
  request.suppressions = SuppressionsFile("leak:libplugin.so\n");
  LeakReport report = ReportFromDump(c, request, &namer);
  // Block 0 (stack 7, in the plugin) is suppressed and block 1, which only it points to, too.
  EXPECT_EQ(report.summary.suppressed_allocations, 2u);
  EXPECT_EQ(report.summary.suppressed_bytes, 150u);
  EXPECT_EQ(report.summary.direct_bytes, 10u);
  EXPECT_EQ(report.summary.indirect_bytes, 0u);
  EXPECT_EQ(report.summary.reachable_bytes, 4096u);
  // Without the edges only the block whose own stack matches goes.
  DumpContents no_edges = c;
  no_edges.has_edges = false;
  no_edges.edges.clear();
  DumpNamer namer2(no_edges, {});
  report = ReportFromDump(no_edges, request, &namer2);
  EXPECT_EQ(report.summary.suppressed_bytes, 100u);
  EXPECT_EQ(report.summary.indirect_bytes, 50u);
}

// The library filters read every frame of a stack, also of a reachable one, which the report
// otherwise looks up and keeps only the first frame of: here the plugin's frame is the second.
TEST(LeakDumpReport, TheLibraryFiltersSeeEveryFrameOfAReachableStack) {
  DumpContents c = Sample();
  c.stacks.push_back({15, 5, {{0, 0x2400}, {1, 0x1300}}});
  c.blocks.push_back({0x5000, 300, 5, 15, 1, static_cast<uint8_t>(Verdict::kReachable)});
  auto reachable = [&c](const char* libraries, const char* ignore_libraries) {
    DumpNamer namer(c, {});
    RenderRequest request;
    request.suppressions = "";
    request.libraries = libraries;
    request.ignore_libraries = ignore_libraries;
    return ReportFromDump(c, request, &namer).summary.reachable_bytes;
  };
  EXPECT_EQ(reachable("", ""), 4096u + 300u);
  EXPECT_EQ(reachable("", "*libplugin*"), 4096u);
  EXPECT_EQ(reachable("*libplugin*", ""), 300u);
}

// A sampled program's dump (1.1's sampling section): read back, and its report weighs each block
// below the mean (leakcheck/sampler.h) and says it is an estimate. Without the section (a 1.0
// dump, or a run that did not sample) the figures are the blocks' own.
TEST(LeakDumpReport, ASampledDumpGivesEstimatesAndSaysSo) {
  DumpContents c = Sample();
  c.sample_bytes = 1000;
  const DecodedDumps d = Decode(EncodeDump(c));
  ASSERT_EQ(d.error, "");
  ASSERT_EQ(d.dumps.size(), 1u);
  EXPECT_EQ(d.dumps[0].sample_bytes, 1000u);
  EXPECT_EQ(Decode(EncodeDump(Sample())).dumps[0].sample_bytes, 0u);
  DumpNamer namer(d.dumps[0], {});
  RenderRequest request;
  request.suppressions = "";
  const LeakReport report = ReportFromDump(d.dumps[0], request, &namer);
  EXPECT_EQ(report.sample_bytes, 1000u);
  // Leaks: 100 bytes direct (weight 1 / (1 - e^-0.1) = 10.508), 50 indirect (20.504), 10 direct
  // (100.5); the 4,096-byte reachable block is at least the mean: itself.
  const double w100 = 1 / -std::expm1(-0.1), w50 = 1 / -std::expm1(-0.05),
               w10 = 1 / -std::expm1(-0.01);
  EXPECT_EQ(report.summary.direct_bytes, static_cast<uint64_t>(100 * w100 + 0.5) +
                                             static_cast<uint64_t>(10 * w10 + 0.5));
  EXPECT_EQ(report.summary.indirect_allocations, static_cast<uint64_t>(w50 + 0.5));
  EXPECT_EQ(report.summary.reachable_bytes, 4096u);
  EXPECT_EQ(report.summary.allocations, static_cast<uint64_t>(w100 + 0.5) +
                                            static_cast<uint64_t>(w50 + 0.5) +
                                            static_cast<uint64_t>(w10 + 0.5));
  EXPECT_NE(RenderDumpReport(d.dumps[0], request, {}, nullptr)
                .find("sampled: mean 1000 bytes, figures are estimates"),
            std::string::npos);
}

TEST(LeakDumpReport, FramesKeepTheProgramsPcsAndModulesWhenNoFileNamesThem) {
  const DumpContents c = Sample();
  DumpNamer namer(c, {});
  RenderRequest request;
  request.suppressions = "";
  const LeakReport report = ReportFromDump(c, request, &namer);
  EXPECT_NE(report.naming_error.find("/nonexistent/app (no such file)"), std::string::npos)
      << report.naming_error;
  ASSERT_EQ(report.entries.size(), 3u);  // 100 direct, 50 indirect, 10 direct
  const ReportEntry& first = report.entries[0];
  EXPECT_EQ(first.bytes, 100u);
  ASSERT_EQ(first.frames.size(), 2u);
  EXPECT_EQ(first.frames[0].pc, 0x7f0000001234u);
  EXPECT_EQ(first.frames[0].module, "/nonexistent/libplugin.so");
  EXPECT_EQ(first.frames[0].module_offset, 0x1234u);
  EXPECT_EQ(first.thread_name, "app");
  EXPECT_EQ(first.tid, 4242);
  const ReportEntry& indirect = report.entries[1];
  EXPECT_EQ(indirect.verdict, Verdict::kIndirect);
  ASSERT_EQ(indirect.frames.size(), 2u);
  EXPECT_EQ(indirect.frames[1].pc, 0xdeadbeefu);
  EXPECT_EQ(indirect.frames[1].module, "");
}

// Two functions of this test to name, in this test's own file.
__attribute__((noinline)) int NamedFirst(int x) { return x * 3 + 1; }
__attribute__((noinline)) int NamedSecond(int x) { return x * 5 + 2; }

TEST(LeakDumpNamer, OnlyTheFramesAskedForAreLookedUpTheRestKeepTheirModule) {
  Dl_info self{};
  link_map* map = nullptr;
  ASSERT_NE(dladdr1(reinterpret_cast<void*>(&NamedFirst), &self, reinterpret_cast<void**>(&map),
                    RTLD_DL_LINKMAP),
            0);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));
  ASSERT_GT(n, 0);
  DumpContents c;
  DumpModule m;
  m.path.assign(exe, static_cast<size_t>(n));
  m.load_bias = map->l_addr;
  c.modules.push_back(m);
  // Return addresses two bytes into each function (the namer looks a byte back).
  const auto offset = [&](int (*f)(int)) {
    return reinterpret_cast<uintptr_t>(f) + 2 - m.load_bias;
  };
  DumpStack stack{1, 5, {{0, offset(&NamedFirst)}, {0, offset(&NamedSecond)}}};
  c.stacks.push_back(stack);
  DumpNamer namer(c, {});
  const std::vector<SymbolizedFrame> all = namer.Name(stack);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NE(all[0].function.find("NamedFirst"), std::string::npos) << all[0].function;
  EXPECT_NE(all[1].function.find("NamedSecond"), std::string::npos) << all[1].function;
  const std::vector<SymbolizedFrame> first = namer.Name(stack, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0].function.find("NamedFirst"), std::string::npos) << first[0].function;
  EXPECT_EQ(first[1].function, "");  // not looked up: module and offset alone
  EXPECT_EQ(first[1].module, m.path);
  EXPECT_EQ(first[1].module_offset, offset(&NamedSecond));
  EXPECT_EQ(first[1].pc, m.load_bias + offset(&NamedSecond));
  EXPECT_EQ(first[1].index, 1);
  EXPECT_TRUE(namer.missing().empty());
}

}  // namespace
}  // namespace stackwalk::leakcheck::dump
