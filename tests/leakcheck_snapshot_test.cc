// Snapshots (--snapshot-signal, --snapshot-interval, stackwalk_leakcheck_snapshot) and
// stackwalk-report --diff over a real checked program whose sites grow, stay and churn by known
// amounts per step (fixtures/growth_sites.c): each way of asking lands in the dump with its
// occasion and count and prints no leak report; the diff of two snapshots puts the growing site
// first with the growth the fixture's constants give; its JSON conforms to
// docs/schema/diff.schema.json; its folded lines sum to the growth; bad inputs are refused.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "growth_sites.h"
#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_encode.h"

#include "file_and_shell.h"

namespace {

using nlohmann::json;
namespace dump = stackwalk::leakcheck::dump;

using stackwalk_test::Read;
using stackwalk_test::Shell;

std::string Dir() {
  static const std::string dir = [] {
    const std::string d = ::testing::TempDir() + "snapshots." + std::to_string(getpid());
    Shell("rm -rf '" + d + "' && mkdir -p '" + d + "'");
    return d;
  }();
  return dir;
}

struct CheckedRun {
  int status = -1;
  std::string out, err;  // the program's stdout; the launcher's and program's stderr
  std::string report;    // --output
  std::string dump;      // the dump file's path
};

// The launcher on growth_sites with `options`, its dump in `name`.dump.
CheckedRun Checked(const std::string& name, const std::string& options, const std::string& fixture_args,
            bool with_dump = true) {
  CheckedRun run;
  const std::string base = Dir() + "/" + name;
  run.dump = base + ".dump";
  std::remove(run.dump.c_str());
  run.status = Shell(std::string(STACKWALK_LEAKCHECK) + " --output " + base + ".report " +
                     (with_dump ? "--dump " + run.dump + " " : "") + options + " " +
                     GROWTH_SITES + " " + fixture_args + " >" + base + ".out 2>" + base + ".err");
  run.out = Read(base + ".out");
  run.err = Read(base + ".err");
  run.report = Read(base + ".report");
  return run;
}

dump::DecodedDumps Decode(const std::string& path) {
  const std::string bytes = Read(path);
  return dump::DecodeDumps(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::vector<std::string> Occasions(const dump::DecodedDumps& d) {
  std::vector<std::string> out;
  for (const dump::DumpContents& c : d.dumps) out.push_back(c.process.occasion);
  return out;
}

std::vector<std::string> SnapshotsThenExit(int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back("snapshot " + std::to_string(i));
  out.push_back("exit");
  return out;
}

struct Report {
  int status = -1;
  std::string out, err;
};

Report StackwalkReport(const std::string& args) {
  const std::string base = Dir() + "/report";
  Report r;
  r.status = Shell(std::string(STACKWALK_REPORT) + " " + args + " >" + base + ".out 2>" + base +
                   ".err");
  r.out = Read(base + ".out");
  r.err = Read(base + ".err");
  return r;
}

// The diff's entry of the stack whose innermost frame is `site` (null if none).
const json* Site(const json& diff, const std::string& site) {
  for (const json& s : diff["stacks"]) {
    if (!s["frames"].empty() && s["frames"][0] == site) return &s;
  }
  return nullptr;
}

// Checks the diff of snapshots `from` and `to` (after step `from` and step `to`) of `path`
// against the fixture's constants.
void ExpectGrowthBetween(const std::string& path, int from, int to) {
  const Report r = StackwalkReport("--diff --from-dump " + std::to_string(from) + " --to-dump " +
                                   std::to_string(to) + " --format json " + path + " " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  const json diff = json::parse(r.out);
  const uint64_t steps = static_cast<uint64_t>(to - from);
  EXPECT_EQ(diff["from"]["occasion"], "snapshot " + std::to_string(from));
  EXPECT_EQ(diff["to"]["occasion"], "snapshot " + std::to_string(to));
  EXPECT_TRUE(diff["same_process"].get<bool>());
  // The growing site first, with exactly its steps' blocks.
  ASSERT_FALSE(diff["stacks"].empty());
  EXPECT_EQ(diff["stacks"][0]["frames"][0], "grow_site");
  const json* grow = Site(diff, "grow_site");
  ASSERT_NE(grow, nullptr);
  EXPECT_EQ((*grow)["from_bytes"].get<uint64_t>(), from * uint64_t{GROW_BLOCKS * GROW_SIZE});
  EXPECT_EQ((*grow)["to_bytes"].get<uint64_t>(), to * uint64_t{GROW_BLOCKS * GROW_SIZE});
  EXPECT_EQ((*grow)["growth_bytes"].get<int64_t>(), steps * GROW_BLOCKS * GROW_SIZE);
  EXPECT_EQ((*grow)["growth_blocks"].get<int64_t>(), steps * GROW_BLOCKS);
  EXPECT_EQ((*grow)["allocations_between"].get<uint64_t>(), steps * GROW_BLOCKS);
  // The stable site: the same live bytes, new allocations.
  const json* stable = Site(diff, "stable_site");
  ASSERT_NE(stable, nullptr);
  EXPECT_EQ((*stable)["growth_bytes"].get<int64_t>(), 0);
  EXPECT_EQ((*stable)["growth_blocks"].get<int64_t>(), 0);
  EXPECT_EQ((*stable)["to_bytes"].get<uint64_t>(), uint64_t{STABLE_BLOCKS * STABLE_SIZE});
  EXPECT_EQ((*stable)["allocations_between"].get<uint64_t>(), steps * STABLE_BLOCKS);
  // The temporary site: nothing live at either, its allocations counted.
  const json* temporary = Site(diff, "temporary_site");
  ASSERT_NE(temporary, nullptr);
  EXPECT_EQ((*temporary)["to_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ((*temporary)["growth_bytes"].get<int64_t>(), 0);
  EXPECT_EQ((*temporary)["allocated_bytes_between"].get<uint64_t>(),
            steps * TEMP_BLOCKS * TEMP_SIZE);
}

// The values of folded lines ("a;b;c VALUE"), summed.
uint64_t FoldedSum(const std::string& folded, int* lines) {
  uint64_t sum = 0;
  *lines = 0;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    if (space == std::string::npos) continue;
    sum += std::stoull(line.substr(space + 1));
    ++*lines;
  }
  return sum;
}

// The API's snapshots after each of 5 steps, made once for the suite.
const CheckedRun& ApiRun() {
  static const CheckedRun run = Checked("api", "", "api 5");
  return run;
}

TEST(Snapshots, ByTheApiLandInTheDumpAndPrintNoLeakReport) {
  const CheckedRun& run = ApiRun();
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "snapshot 1\nsnapshot 2\nsnapshot 3\nsnapshot 4\nsnapshot 5\n");
  const dump::DecodedDumps d = Decode(run.dump);
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(Occasions(d), SnapshotsThenExit(5));
  for (size_t i = 0; i < d.dumps.size(); ++i) {
    const bool snapshot = i + 1 < d.dumps.size();
    EXPECT_EQ(d.dumps[i].process.snapshot, snapshot) << i;
    EXPECT_TRUE(d.dumps[i].has_stack_stats) << i;
    EXPECT_TRUE(d.dumps[i].has_thread_totals) << i;
    EXPECT_TRUE(d.dumps[i].has_timeline) << i;
    if (snapshot) EXPECT_TRUE(d.dumps[i].blocks.empty()) << "a snapshot carries aggregates only";
  }
  // One leak report (at exit) reached the user; the snapshots stayed in the dump.
  EXPECT_NE(run.report.find("leaks at exit"), std::string::npos) << run.report;
  EXPECT_EQ(run.report.find("SUMMARY: "), run.report.rfind("SUMMARY: ")) << run.report;
  EXPECT_EQ(run.report.find("snapshot"), std::string::npos) << run.report;
  // stackwalk-report's leaks view renders the report, not the snapshots.
  const Report leaks = StackwalkReport(run.dump);
  EXPECT_EQ(leaks.status, 0) << leaks.err;
  EXPECT_EQ(leaks.out.find("snapshot"), std::string::npos) << leaks.out;
  EXPECT_NE(leaks.out.find("leaks at exit"), std::string::npos) << leaks.out;
}

TEST(Snapshots, DiffOfTwoSnapshotsGivesTheFixturesGrowth) {
  ASSERT_EQ(ApiRun().status, 0) << ApiRun().err;
  ExpectGrowthBetween(ApiRun().dump, 2, 5);
  ExpectGrowthBetween(ApiRun().dump, 1, 2);
  // Text: the growing site is the first stack listed.
  const Report text = StackwalkReport("--diff --from-dump 2 --to-dump 5 " + ApiRun().dump + " " +
                                      ApiRun().dump);
  ASSERT_EQ(text.status, 0) << text.err;
  const std::string first = "#1 +" + std::to_string(3 * GROW_BLOCKS * GROW_SIZE) + " byte(s) +" +
                            std::to_string(3 * GROW_BLOCKS) + " block(s)";
  const size_t at = text.out.find("\n#1 ");
  ASSERT_NE(at, std::string::npos) << text.out;
  EXPECT_EQ(text.out.compare(at + 1, first.size(), first), 0) << text.out;
  EXPECT_EQ(text.out.find("#0 grow_site", at), text.out.find("#0 ", at)) << text.out;
}

TEST(Snapshots, DiffTextListsOnlyTheStacksThatChanged) {
  ASSERT_EQ(ApiRun().status, 0) << ApiRun().err;
  // The stable site holds as much at every step: counted as unchanged, not listed.
  const Report text = StackwalkReport("--diff --from-dump 2 --to-dump 5 " + ApiRun().dump + " " +
                                      ApiRun().dump);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out.find("#0 stable_site"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("stack(s) unchanged, not listed"), std::string::npos) << text.out;
  // A dump against itself: nothing changed, and the text says so instead of listing zeros.
  const Report same = StackwalkReport("--diff --from-dump 3 --to-dump 3 " + ApiRun().dump + " " +
                                      ApiRun().dump);
  ASSERT_EQ(same.status, 0) << same.err;
  EXPECT_NE(same.out.find("no stack changed its live bytes or blocks"), std::string::npos)
      << same.out;
  EXPECT_EQ(same.out.find("\n#1 "), std::string::npos) << same.out;
}

TEST(Snapshots, DiffFoldedSumsToTheGrowth) {
  const std::string args = "--diff --from-dump 2 --to-dump 5 " + ApiRun().dump + " " + ApiRun().dump;
  const Report folded = StackwalkReport(args + " --format folded");
  ASSERT_EQ(folded.status, 0) << folded.err;
  const json diff = json::parse(StackwalkReport(args + " --format json").out);
  uint64_t grown = 0;
  for (const json& s : diff["stacks"]) {
    if (s["growth_bytes"].get<int64_t>() > 0) grown += s["growth_bytes"].get<uint64_t>();
  }
  int lines = 0;
  EXPECT_EQ(FoldedSum(folded.out, &lines), grown);
  EXPECT_EQ(grown, diff["positive_growth_bytes"].get<uint64_t>());
  EXPECT_GE(grown, uint64_t{3 * GROW_BLOCKS * GROW_SIZE});
  EXPECT_NE(folded.out.find(";main;grow_site " + std::to_string(3 * GROW_BLOCKS * GROW_SIZE) +
                            "\n"),
            std::string::npos)
      << folded.out;
  EXPECT_EQ(folded.out.find("stable_site"), std::string::npos) << "no growth: not folded";
  // The flame graph of the same values.
  const Report svg = StackwalkReport(args + " --format svg");
  ASSERT_EQ(svg.status, 0) << svg.err;
  EXPECT_NE(svg.out.find("<svg"), std::string::npos);
  EXPECT_NE(svg.out.find("grow_site"), std::string::npos);
}

TEST(Snapshots, DiffJsonConformsToItsSchema) {
  if (Shell("python3 -c 'import jsonschema' 2>/dev/null") != 0) {
    GTEST_SKIP() << "no python3-jsonschema";
  }
  const std::string base = Dir() + "/schema";
  std::ofstream(base + ".py") << "import json,sys\n"
                                 "from jsonschema import Draft202012Validator\n"
                                 "v=Draft202012Validator(json.load(open(sys.argv[1])))\n"
                                 "e=list(v.iter_errors(json.load(open(sys.argv[2]))))\n"
                                 "print(len(e), 'errors', e[0].message if e else '')\n";
  ASSERT_EQ(Shell(std::string(STACKWALK_REPORT) + " --diff --from-dump 1 --to-dump 5 --format json " +
                  ApiRun().dump + " " + ApiRun().dump + " >" + base + ".json"),
            0);
  const std::string check = "python3 " + base + ".py " + DIFF_SCHEMA + " " + base + ".json >" +
                            base + ".result 2>&1";
  Shell(check);
  EXPECT_EQ(Read(base + ".result"), "0 errors \n");
  // The check can fail: a count given as text.
  Shell("sed -i 's/\"growth_blocks\":\\([0-9]*\\)/\"growth_blocks\":\"\\1\"/' " + base + ".json");
  Shell(check);
  EXPECT_EQ(Read(base + ".result").rfind("0 errors", 0), std::string::npos)
      << Read(base + ".result");
}

TEST(Snapshots, BySignalLandInTheDump) {
  const CheckedRun run = Checked("signal", "--snapshot-signal SIGUSR1", "signal 4 " + Dir() + "/signal.dump");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(Occasions(Decode(run.dump)), SnapshotsThenExit(4));
  EXPECT_EQ(run.report.find("snapshot"), std::string::npos) << run.report;
  ExpectGrowthBetween(run.dump, 1, 4);
}

TEST(Snapshots, NamingInTheProgramGoStraightToTheDumpFile) {
  const CheckedRun run = Checked("program", "--name-in=program --snapshot-signal SIGUSR1",
                                 "signal 3 " + Dir() + "/program.dump");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(Occasions(Decode(run.dump)), SnapshotsThenExit(3));
  EXPECT_EQ(run.report.find("SUMMARY: "), run.report.rfind("SUMMARY: ")) << run.report;
  EXPECT_EQ(run.report.find("snapshot"), std::string::npos) << run.report;
  ExpectGrowthBetween(run.dump, 1, 3);
}

TEST(Snapshots, ByIntervalLandInTheDump) {
  // The fixture waits for each snapshot before its next step, so snapshot k follows step k.
  const CheckedRun run = Checked("interval", "--snapshot-interval 1", "wait 3 " + Dir() + "/interval.dump");
  ASSERT_EQ(run.status, 0) << run.err;
  const dump::DecodedDumps d = Decode(run.dump);
  EXPECT_EQ(d.error, "") << "no snapshot cut by the end, none after the exit report";
  ASSERT_GE(d.dumps.size(), 4u);
  // A last snapshot may land between the third and the exit.
  std::vector<std::string> occasions = Occasions(d);
  occasions.resize(3);
  EXPECT_EQ(occasions, (std::vector<std::string>{"snapshot 1", "snapshot 2", "snapshot 3"}));
  EXPECT_EQ(d.dumps.back().process.occasion, "exit");
  ExpectGrowthBetween(run.dump, 1, 3);
}

TEST(Snapshots, NeedADumpFile) {
  // Refused by the launcher, with the reason.
  const CheckedRun refused = Checked("nodump", "--snapshot-interval 1", "none 1", false);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("need --dump FILE"), std::string::npos) << refused.err;
  const CheckedRun same = Checked("samesig", "--snapshot-signal USR2 --report-signal USR2", "none 1");
  EXPECT_EQ(same.status, 2);
  EXPECT_NE(same.err.find("must differ"), std::string::npos) << same.err;
  // The API without a dump file (the program names its own report, so no pipe either).
  const CheckedRun api = Checked("apinodump", "--name-in=program", "api 1", false);
  EXPECT_EQ(api.status, 0) << api.err;
  EXPECT_EQ(api.out, "snapshot -10\n");  // STACKWALK_LEAKCHECK_NO_DUMP
}

TEST(Snapshots, ByTheCppApiInProcess) {
  const std::string path = Dir() + "/inprocess.dump";
  std::remove(path.c_str());
  const std::string base = Dir() + "/inprocess";
  ASSERT_EQ(Shell(std::string(LEAKY_FORMS) + " snapshots " + path + " >" + base + ".out 2>" +
                  base + ".err"),
            0)
      << Read(base + ".err");
  EXPECT_EQ(Read(base + ".out"),
            "first 1\nsecond 2\n"
            "no dump FAILED_PRECONDITION: no dump file to add a snapshot to: set the dump option "
            "(--dump FILE)\n"
            "stopped FAILED_PRECONDITION: no leak checker runs: the in-process one is not started "
            "(Start()) and the preloaded one (stackwalk-leakcheck, LD_PRELOAD) is not loaded\n");
  EXPECT_EQ(Occasions(Decode(path)), (std::vector<std::string>{"snapshot 1", "snapshot 2"}));
  // The library's calloc site grew by the four blocks of 3 x 13 bytes made between.
  const Report r = StackwalkReport("--diff --from-dump 1 --format json " + path + " " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  const json diff = json::parse(r.out);
  ASSERT_FALSE(diff["stacks"].empty());
  EXPECT_EQ(diff["stacks"][0]["growth_bytes"], 4 * 3 * 13);
  EXPECT_EQ(diff["stacks"][0]["growth_blocks"], 4);
  EXPECT_EQ(diff["stacks"][0]["frames"][0], "forms::LeakCalloc()");
}

TEST(Snapshots, DiffRefusesWhatItCannotCompare) {
  ASSERT_EQ(ApiRun().status, 0);
  const std::string& good = ApiRun().dump;
  // Not a dump.
  std::ofstream(Dir() + "/text.dump") << "hello\n";
  Report r = StackwalkReport("--diff " + Dir() + "/text.dump " + good);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not a leak dump"), std::string::npos) << r.err;
  // No such dump in the file.
  r = StackwalkReport("--diff --from-dump 9 " + good + " " + good);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("holds 6 whole dump(s): --from-dump 9 is not one"), std::string::npos)
      << r.err;
  // Cut inside its last dump: the last is refused; a whole one before it is diffed, and the
  // status still says the file is damaged.
  const std::string bytes = Read(good);
  const dump::DecodedDumps d = Decode(good);
  const std::string cut = Dir() + "/cut.dump";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  r = StackwalkReport("--diff " + good + " " + cut);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("truncated at byte"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("its last dump is cut or corrupt: pick a whole one with --to-dump N (1..5)"),
            std::string::npos)
      << r.err;
  r = StackwalkReport("--diff --from-dump 1 --to-dump 5 --format json " + good + " " + cut);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(json::parse(r.out)["stacks"][0]["frames"][0], "grow_site");
  // A dump written before the statistics existed.
  dump::DumpContents old = d.dumps[0];
  old.has_stack_stats = false;
  old.stack_stats.clear();
  const std::string old_path = Dir() + "/old.dump";
  std::ofstream(old_path, std::ios::binary) << dump::EncodeDump(old);
  r = StackwalkReport("--diff " + old_path + " " + good);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("has no stack statistics"), std::string::npos) << r.err;
  // Bad command lines.
  EXPECT_EQ(StackwalkReport("--diff " + good).status, 2);
  EXPECT_EQ(StackwalkReport("--from-dump 1 " + good).status, 2);
  EXPECT_EQ(StackwalkReport("--diff --format html " + good + " " + good).status, 2);
}

}  // namespace
