// The leak checker's options, defined once (leakcheck/options.cc): the text form's parser, and the
// launcher's command line by GNU conventions, built from the same table.
#include "leakcheck/options.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace stackwalk::leakcheck {
namespace {

TEST(LeakcheckOptions, EveryOptionIsDefinedOnceAndTakesAGoodValue) {
  std::set<std::string> keys, longs;
  std::set<char> shorts;
  for (int i = 0; i < kOptionSpecCount; ++i) {
    const OptionSpec& spec = kOptionSpecs[i];
    EXPECT_TRUE(keys.insert(spec.key).second) << spec.key;
    if (spec.long_name != nullptr) EXPECT_TRUE(longs.insert(spec.long_name).second) << spec.key;
    if (spec.short_name != 0) EXPECT_TRUE(shorts.insert(spec.short_name).second) << spec.key;
    EXPECT_GT(std::strlen(spec.help), 10u) << spec.key;
  }
  // A good value for each key, set through the one setter.
  const std::pair<const char*, const char*> good[] = {
      {"output", "/tmp/x"},  {"dump", "/tmp/d.%p"},  {"program_report", "0"},  {"exitcode", "23"},     {"min_size", "16"},
      {"max_frames", "8"},   {"method", "ehframe"},  {"format", "json"},
      {"libraries", "a*,b"}, {"ignore_libraries", "c*"}, {"report_signal", "SIGUSR2"},
      {"follow_exec", "1"},  {"unreachable_only", "1"}, {"report_at_exit", "0"},
      {"show_reachable", "1"}, {"suppressions", "/tmp/a.supp"}, {"anonymous_roots", "0"},
      {"stop_method", "signal"}, {"stop_timeout_ms", "250"}, {"stop_signal", "RTMIN+7"},
      {"check_interval", "5"}, {"sample_bytes", "524288"}, {"sample_seed", "42"},
      {"timeline_interval_ms", "250"}, {"snapshot_signal", "USR1"}, {"snapshot_interval", "30"},
      {"report_clean", "1"}};
  ASSERT_EQ(std::size(good), static_cast<size_t>(kOptionSpecCount));
  Options o;
  for (const auto& [key, value] : good) {
    EXPECT_TRUE(keys.count(key)) << key;
    EXPECT_TRUE(SetOption(&o, key, std::strlen(key), value, std::strlen(value))) << key;
  }
  EXPECT_STREQ(o.output, "/tmp/x");
  EXPECT_STREQ(o.dump, "/tmp/d.%p");
  EXPECT_FALSE(o.program_report);
  EXPECT_EQ(o.exitcode, 23);
  EXPECT_EQ(o.min_size, 16u);
  EXPECT_EQ(o.max_frames, 8);
  EXPECT_EQ(o.method, 2);
  EXPECT_TRUE(o.json);
  EXPECT_STREQ(o.libraries, "a*,b");
  EXPECT_STREQ(o.ignore_libraries, "c*");
  EXPECT_EQ(o.report_signal, 12);
  EXPECT_TRUE(o.follow_exec);
  EXPECT_TRUE(o.unreachable_only);
  EXPECT_FALSE(o.report_at_exit);
  EXPECT_TRUE(o.show_reachable);
  EXPECT_STREQ(o.suppressions, "/tmp/a.supp");
  EXPECT_FALSE(o.anonymous_roots);
  EXPECT_EQ(o.stop_method, 2);
  EXPECT_EQ(o.stop_timeout_ms, 250);
  EXPECT_EQ(o.stop_signal, SIGRTMIN + 7);
  EXPECT_EQ(o.check_interval, 5);
  EXPECT_EQ(o.sample_bytes, 524288u);
  EXPECT_EQ(o.sample_seed, 42u);
  EXPECT_EQ(o.timeline_interval_ms, 250);
  EXPECT_EQ(o.snapshot_signal, SIGUSR1);
  EXPECT_EQ(o.snapshot_interval, 30);
}

TEST(LeakcheckOptions, TheCheckOptionsDefaultsAndBounds) {
  const Options fresh;
  EXPECT_FALSE(fresh.show_reachable);  // leaks only
  EXPECT_STREQ(fresh.suppressions, "");
  EXPECT_TRUE(fresh.anonymous_roots);  // valgrind's rule
  EXPECT_EQ(fresh.stop_method, 0);     // auto
  EXPECT_EQ(fresh.stop_timeout_ms, 1000);
  EXPECT_EQ(fresh.stop_signal, 0);     // SIGRTMIN+5
  EXPECT_EQ(fresh.check_interval, 0);  // off
  EXPECT_EQ(fresh.timeline_interval_ms, 100);
  auto set = [](Options* o, const char* key, const std::string& value) {
    return SetOption(o, key, std::strlen(key), value.data(), value.size());
  };
  Options o;
  // stop_method: the three words.
  for (const auto& [word, value] : {std::pair{"auto", 0}, {"ptrace", 1}, {"signal", 2}}) {
    ASSERT_TRUE(set(&o, "stop_method", word));
    EXPECT_EQ(o.stop_method, value);
  }
  EXPECT_FALSE(set(&o, "stop_method", "sigstop"));
  EXPECT_FALSE(set(&o, "stop_method", ""));
  // stop_timeout_ms: 1..600000.
  EXPECT_FALSE(set(&o, "stop_timeout_ms", "0"));
  EXPECT_FALSE(set(&o, "stop_timeout_ms", "600001"));
  EXPECT_TRUE(set(&o, "stop_timeout_ms", "600000"));
  // stop_signal: 0, a number, a name, RTMIN+N; never a fault's, nor one that cannot park a thread.
  EXPECT_TRUE(set(&o, "stop_signal", "SIGUSR1"));
  EXPECT_EQ(o.stop_signal, SIGUSR1);
  EXPECT_TRUE(set(&o, "stop_signal", "SIGRTMIN+5"));
  EXPECT_EQ(o.stop_signal, SIGRTMIN + 5);
  EXPECT_TRUE(set(&o, "stop_signal", std::to_string(SIGRTMIN + 2)));
  EXPECT_EQ(o.stop_signal, SIGRTMIN + 2);
  for (const std::string bad : {"SIGSEGV", "9", "SIGSTOP", "SIGCHLD", "SIGCONT", "RTMIN+99",
                                "RTMIN+", "SIGFOO", "-1"}) {
    EXPECT_FALSE(set(&o, "stop_signal", bad)) << bad;
  }
  EXPECT_EQ(o.stop_signal, SIGRTMIN + 2);  // a refused value changes nothing
  EXPECT_TRUE(set(&o, "stop_signal", "0"));
  EXPECT_EQ(o.stop_signal, 0);
  // check_interval: seconds, up to a day; 0 turns it off.
  EXPECT_TRUE(set(&o, "check_interval", "86400"));
  EXPECT_FALSE(set(&o, "check_interval", "86401"));
  EXPECT_FALSE(set(&o, "check_interval", "1.5"));
  EXPECT_TRUE(set(&o, "check_interval", "0"));
  // timeline_interval_ms: up to an hour; 0 turns the timeline off.
  EXPECT_TRUE(set(&o, "timeline_interval_ms", "3600000"));
  EXPECT_FALSE(set(&o, "timeline_interval_ms", "3600001"));
  EXPECT_TRUE(set(&o, "timeline_interval_ms", "0"));
  // anonymous_roots, show_reachable: 0 or 1.
  EXPECT_FALSE(set(&o, "anonymous_roots", "yes"));
  EXPECT_FALSE(set(&o, "show_reachable", "2"));
}

TEST(LeakcheckOptions, SuppressionsAddUpInBothForms) {
  // Each setting adds a file: the launcher's repeated option, the text form's repeated key or
  // its comma list, all the same list.
  int problems = -1;
  Options o = ParseOptions("suppressions=/a.supp:suppressions=/b.supp,/c.supp", &problems);
  EXPECT_EQ(problems, 0);
  EXPECT_STREQ(o.suppressions, "/a.supp,/b.supp,/c.supp");
  // Shown as the list, which reads back the same.
  char shown[1100];
  FindOption("suppressions", 12)->show(o, shown, sizeof(shown));
  EXPECT_STREQ(shown, "/a.supp,/b.supp,/c.supp");
  Options again;
  ASSERT_TRUE(SetOption(&again, "suppressions", 12, shown, std::strlen(shown)));
  EXPECT_STREQ(again.suppressions, o.suppressions);
  // More than the list holds: refused, the list as it was.
  const std::string long_path(1000, 'x');
  EXPECT_FALSE(SetOption(&o, "suppressions", 12, long_path.data(), long_path.size()));
  EXPECT_STREQ(o.suppressions, "/a.supp,/b.supp,/c.supp");
}

TEST(LeakcheckOptions, BadValuesChangeNothing) {
  Options o;
  const std::pair<const char*, const char*> bad[] = {
      {"max_frames", "0"},   {"max_frames", "65"},   {"max_frames", "-1"}, {"min_size", "lots"},
      {"exitcode", "256"},   {"method", "magic"},    {"format", "xml"},   {"report_signal", "SEGV"},
      {"report_signal", "9"}, {"follow_exec", "yes"}, {"nonsense", "1"},   {"min_size", ""},
      {"sample_bytes", "-1"}, {"sample_bytes", "1099511627777"},  // past 2^40
      {"sample_bytes", "1k"}, {"sample_seed", "x"}};
  for (const auto& [key, value] : bad) {
    EXPECT_FALSE(SetOption(&o, key, std::strlen(key), value, std::strlen(value)))
        << key << "=" << value;
  }
  // Field by field (padding is not part of the value): every field as a fresh Options has it.
  Options fresh;
  EXPECT_EQ(o.min_size, fresh.min_size);
  EXPECT_EQ(o.sample_bytes, fresh.sample_bytes);
  EXPECT_EQ(o.sample_seed, fresh.sample_seed);
  EXPECT_EQ(o.max_frames, fresh.max_frames);
  EXPECT_EQ(o.method, fresh.method);
  EXPECT_EQ(o.exitcode, fresh.exitcode);
  EXPECT_EQ(o.report_signal, fresh.report_signal);
  EXPECT_EQ(o.follow_exec, fresh.follow_exec);
  EXPECT_EQ(o.json, fresh.json);
  EXPECT_STREQ(o.output, fresh.output);
}

TEST(LeakcheckOptions, TextFormUnescapesAndCountsEveryProblem) {
  int problems = -1;
  Options o = ParseOptions("output=/tmp/a\\:b\\\\c:min_size=5::method=fp", &problems);
  EXPECT_EQ(problems, 0);
  EXPECT_STREQ(o.output, "/tmp/a:b\\c");
  EXPECT_EQ(o.min_size, 5u);
  EXPECT_EQ(o.method, 1);
  o = ParseOptions("bogus=1:max_frames=99:novalue:format=json", &problems);
  EXPECT_EQ(problems, 3);
  EXPECT_TRUE(o.json);          // the good one still applies
  EXPECT_EQ(o.max_frames, 32);  // the bad one leaves the default
  // A value longer than any option holds is refused, not cut.
  ParseOptions(("output=" + std::string(2000, 'x')).c_str(), &problems);
  EXPECT_EQ(problems, 1);
  ParseOptions(nullptr, &problems);
  EXPECT_EQ(problems, 0);
}

TEST(LeakcheckOptions, EachSpecShowsItsDefaultAndReadsItBack) {
  const Options fresh;
  for (int i = 0; i < kOptionSpecCount; ++i) {
    const OptionSpec& spec = kOptionSpecs[i];
    EXPECT_EQ(FindOption(spec.key, std::strlen(spec.key)), &spec);
    // A flag, and only a flag, has no value name on the command line.
    EXPECT_EQ(spec.type == OptionType::kFlag, spec.value_name == nullptr) << spec.key;
    // The help does not repeat the default: the launcher adds it from the Options initializer.
    EXPECT_EQ(std::strstr(spec.help, "default"), nullptr) << spec.key;
    char shown[600];
    spec.show(fresh, shown, sizeof(shown));
    Options o;
    ASSERT_TRUE(spec.set(&o, shown, std::strlen(shown))) << spec.key << "=" << shown;
    char again[600];
    spec.show(o, again, sizeof(again));
    EXPECT_STREQ(again, shown) << spec.key;
  }
  EXPECT_EQ(FindOption("max_frames", 10)->type, OptionType::kNumber);
  EXPECT_EQ(FindOption("max_frame", 9), nullptr);
  EXPECT_EQ(FindOption("max_framesx", 11), nullptr);
  // What a set value shows as.
  Options o;
  char shown[64];
  ASSERT_TRUE(SetOption(&o, "report_signal", 13, "USR2", 4));
  FindOption("report_signal", 13)->show(o, shown, sizeof(shown));
  EXPECT_STREQ(shown, "12");
  ASSERT_TRUE(SetOption(&o, "report_signal", 13, "0", 1));  // none again
  EXPECT_EQ(o.report_signal, 0);
  ASSERT_TRUE(SetOption(&o, "method", 6, "fp", 2));
  FindOption("method", 6)->show(o, shown, sizeof(shown));
  EXPECT_STREQ(shown, "fp");
  FindOption("method", 6)->show(o, shown, 2);  // cut to the room given
  EXPECT_STREQ(shown, "f");
}

TEST(LeakcheckOptions, FormatOptionIsWhatParseOptionsReads) {
  const char* value = "/tmp/a:b\\c::";
  char item[64];
  const size_t len = FormatOption("output", value, item, sizeof(item));
  EXPECT_EQ(len, std::strlen(item));
  EXPECT_STREQ(item, "output=/tmp/a\\:b\\\\c\\:\\:");
  const std::string text = std::string(item) + ":min_size=7";
  int problems = -1;
  const Options o = ParseOptions(text.c_str(), &problems);
  EXPECT_EQ(problems, 0);
  EXPECT_STREQ(o.output, value);
  EXPECT_EQ(o.min_size, 7u);
  // Too small a buffer: cut and terminated, the length needed still returned.
  char small[8];
  EXPECT_EQ(FormatOption("output", value, small, sizeof(small)), len);
  EXPECT_STREQ(small, "output=");
  EXPECT_EQ(FormatOption("output", value, nullptr, 0), len);
}

// ---- the launcher's command line ----

struct Launch {
  int status = -1;
  std::string out, err;
};

Launch RunLauncher(const std::string& args) {
  // Of this process: ctest runs the cases at once.
  const std::string base = ::testing::TempDir() + "options." + std::to_string(getpid());
  const std::string out = base + ".out", err = base + ".err";
  const int raw = std::system((std::string(STACKWALK_LEAKCHECK) + " " + args + " >" + out + " 2>" + err).c_str());
  Launch run;
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::stringstream o, e;
  o << std::ifstream(out).rdbuf();
  e << std::ifstream(err).rdbuf();
  run.out = o.str();
  run.err = e.str();
  return run;
}

TEST(LeakcheckOptions, HelpAndVersionGoToStdoutWithStatusZero) {
  for (const char* help : {"-h", "--help"}) {
    Launch run = RunLauncher(help);
    EXPECT_EQ(run.status, 0);
    EXPECT_EQ(run.out.rfind("usage: stackwalk-leakcheck", 0), 0u) << run.out;
    // Every launcher option of the table is in the help.
    for (int i = 0; i < kOptionSpecCount; ++i) {
      if (kOptionSpecs[i].long_name == nullptr) continue;
      EXPECT_NE(run.out.find(std::string("--") + kOptionSpecs[i].long_name), std::string::npos)
          << kOptionSpecs[i].long_name;
    }
  }
  for (const char* version : {"-V", "--version"}) {
    Launch run = RunLauncher(version);
    EXPECT_EQ(run.status, 0);
    EXPECT_EQ(run.out, std::string("stackwalk-leakcheck ") + STACKWALK_VERSION + "\n");
  }
}

TEST(LeakcheckOptions, BadCommandLinesNameTheOptionAndExitTwo) {
  const std::pair<const char*, const char*> cases[] = {
      {"--bogus /bin/true", "unknown option --bogus"},
      {"-x /bin/true", "unknown option -x"},
      {"--output", "option --output needs a value"},
      {"-o", "option -o needs a value"},
      {"--method=magic /bin/true", "bad value 'magic' for --method"},
      {"--max-frames 99 /bin/true", "bad value '99' for --max-frames"},
      {"--report-signal SIGSEGV /bin/true", "bad value 'SIGSEGV' for --report-signal"},
      {"--format", "option --format needs a value"},
      {"--stop-method=sigstop /bin/true", "bad value 'sigstop' for --stop-method"},
      {"--stop-signal SIGKILL /bin/true", "bad value 'SIGKILL' for --stop-signal"},
      {"--check-interval soon /bin/true", "bad value 'soon' for --check-interval"},
      {"--suppressions /nonexistent/x.supp /bin/true",
       "bad --suppressions: /nonexistent/x.supp: cannot read the suppressions file"},
      {"", "no program given"}};
  for (const auto& [args, message] : cases) {
    Launch run = RunLauncher(args);
    EXPECT_EQ(run.status, 2) << args;
    EXPECT_NE(run.err.find(std::string("stackwalk-leakcheck: ") + message), std::string::npos)
        << args << ": " << run.err;
  }
  EXPECT_EQ(RunLauncher("/nonexistent/program").status, 127);
}

TEST(LeakcheckOptions, EveryFormOfAValueReachesTheReport) {
  // --opt=value, --opt value, -o FILE and -oFILE; a path with ':' in it; options end at the program.
  const std::string dir = ::testing::TempDir() + "with:colon." + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  const std::string forms[] = {"--format=json --output=" + dir + "/a.json",
                               "--format json --output " + dir + "/a.json",
                               "--format=json -o " + dir + "/a.json",
                               "--format=json -o" + dir + "/a.json"};
  for (const std::string& form : forms) {
    std::remove((dir + "/a.json").c_str());
    Launch run = RunLauncher(form + " --min-size=4000 " + LEAK_ENDINGS + " plain --format=text");
    EXPECT_EQ(run.status, 0) << form << ": " << run.err;
    std::stringstream json;
    json << std::ifstream(dir + "/a.json").rdbuf();
    // JSON (the program's own "--format=text" is its argument, not ours), min_size applied.
    EXPECT_EQ(json.str().rfind("{\"occasion\":\"exit\"", 0), 0u) << form << ": " << json.str();
    // The fixture's block is held by a global: reachable, counted beside the leaks (none).
    EXPECT_NE(json.str().find("\"summary\":{\"bytes\":0,\"allocations\":0,"), std::string::npos)
        << form << ": " << json.str();
    EXPECT_NE(json.str().find("\"reachable_bytes\":4321,\"reachable_allocations\":1,"),
              std::string::npos)
        << form << ": " << json.str();
  }
}

}  // namespace
}  // namespace stackwalk::leakcheck
