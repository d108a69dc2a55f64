// stackwalk-leakcheck: runs a program with the leak checker preloaded and, at its exit, reports
// the allocations it never freed, grouped by allocating stack, with names and file:line.
//
//   stackwalk-leakcheck [OPTION]... [--] PROGRAM [ARGS...]
//
// Options follow GNU conventions (getopt_long): --opt=value or --opt value, -o FILE, -h, -V; each
// is defined once, in leakcheck/options.cc, with the key it has in STACKWALK_LEAKCHECK. Options
// end at the first word that is not one (the program), or at "--".
// The program's exit status is passed through, unless --exitcode N is given and leaks are found
// (or none are, but allocations went untracked: leakcheck/exitcode.h).
// Exit statuses of its own: 2 for a bad command line, 126 for a program the preload cannot reach
// (statically linked, set-user-ID or set-group-ID of another owner, file capabilities), 127 for
// one that cannot be run.
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "leakcheck/options.h"
#include "leakcheck/preload_reach.h"
#include "leakcheck/suppressions.h"
#ifdef STACKWALK_NAME_IN_LAUNCHER
#include "leakcheck_supervisor.h"
#endif

#ifndef STACKWALK_VERSION
#define STACKWALK_VERSION "unknown"
#endif
#ifndef STACKWALK_INSTALL_LIBDIR
#define STACKWALK_INSTALL_LIBDIR "lib"
#endif

namespace {

constexpr char kLibraryName[] = "libstackwalk_leakcheck.so";
// Exit status for a program the checker cannot reach (static, set-ID, file capabilities): found,
// but not run, as a shell says 126 for a command it cannot execute.
constexpr int kCannotCheck = 126;

using stackwalk::leakcheck::kOptionSpecCount;
using stackwalk::leakcheck::kOptionSpecs;
using stackwalk::leakcheck::OptionSpec;
using stackwalk::leakcheck::OptionType;

void PrintHelp(FILE* out) {
  std::fprintf(out,
               "usage: stackwalk-leakcheck [OPTION]... [--] PROGRAM [ARGS...]\n"
               "Runs PROGRAM with %s preloaded; at its exit, reports\n"
               "every allocation it never freed, grouped by allocating stack.\n\n",
               kLibraryName);
  for (int i = 0; i < kOptionSpecCount; ++i) {
    const OptionSpec& spec = kOptionSpecs[i];
    if (spec.long_name == nullptr) continue;
    std::string form = spec.short_name != 0 ? std::string("-") + spec.short_name + ", " : "    ";
    form += std::string("--") + spec.long_name;
    if (spec.type != OptionType::kFlag) form += std::string("=") + spec.value_name;
    // The help wrapped at 79 columns, continuation lines under its first.
    std::string line = "  " + form + std::string(form.size() < 28 ? 29 - form.size() : 1, ' ');
    const size_t indent = line.size();
    std::string word;
    // The default, as a fresh Options has it (flags are off unless given).
    char shown[64];
    spec.show(stackwalk::leakcheck::Options(), shown, sizeof(shown));
    std::string help = spec.help;
    if (shown[0] != '\0' && !(spec.type == OptionType::kFlag && std::strcmp(shown, "0") == 0)) {
      help += std::string(" (default: ") + shown + ")";
    }
    for (const char* c = help.c_str();; ++c) {
      if (*c != ' ' && *c != '\0') {
        word += *c;
        continue;
      }
      if (line.size() + 1 + word.size() > 79 && line.size() > indent) {
        std::fprintf(out, "%s\n", line.c_str());
        line = std::string(indent, ' ');
      }
      if (line.size() > indent) line += ' ';
      line += word;
      word.clear();
      if (*c == '\0') break;
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
  std::fprintf(out, "  %-28s %s\n", "--name-in=launcher|program",
               "where the report is named: in this launcher (default), which gets the program's "
               "reports as dumps and names them after the program ended, or in the program at its "
               "end; either way the program runs as this launcher's child, which reports its "
               "record if it is killed by a signal");
  std::fprintf(out, "  %-28s %s\n", "--wait-children=1|0",
               "1 (default): after the program ends, wait for the processes it forked (every one "
               "the checker checks) to end, and report them; 0: do not (a program that leaves a "
               "daemon running)");
  std::fprintf(out,
               "  %-28s %s\n  %-28s %s\n\n"
               "Exit status: PROGRAM's (or --exitcode's); 2 for a bad command line; 126 for\n"
               "a program the preload cannot reach (static, set-ID, file capabilities); 127\n"
               "for one that cannot be run.\n",
               "-h, --help", "print this help and exit", "-V, --version",
               "print the version and exit");
}

int Usage(const std::string& complaint) {
  std::fprintf(stderr, "stackwalk-leakcheck: %s\nTry 'stackwalk-leakcheck --help'.\n",
               complaint.c_str());
  return 2;
}

// One item of the text form, escaped as ParseOptions reads it.
std::string TextFormItem(const char* key, const char* value) {
  std::string item(stackwalk::leakcheck::FormatOption(key, value, nullptr, 0) + 1, '\0');
  item.resize(stackwalk::leakcheck::FormatOption(key, value, item.data(), item.size()));
  return item;
}

// The preload library: beside this tool (the build tree) or in ../<libdir> (an install).
std::string FindLibrary() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string dir(self);
  dir.erase(dir.rfind('/'));
  for (const std::string& candidate :
       {dir + "/" + kLibraryName, dir + "/../" STACKWALK_INSTALL_LIBDIR "/" + kLibraryName}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // getopt_long's table from the one definition: index i is kOptionSpecs[i]; then help, version.
  std::vector<option> longs;
  std::string shorts = "+hV";  // '+': options end at the program's name
  for (int i = 0; i < kOptionSpecCount; ++i) {
    const OptionSpec& spec = kOptionSpecs[i];
    if (spec.long_name == nullptr) continue;
    const bool takes_value = spec.type != OptionType::kFlag;
    longs.push_back({spec.long_name, takes_value ? required_argument : no_argument, nullptr, 1000 + i});
    if (spec.short_name != 0) {
      shorts += spec.short_name;
      if (takes_value) shorts += ':';
    }
  }
  constexpr int kNameIn = 3000;
  longs.push_back({"name-in", required_argument, nullptr, kNameIn});
  constexpr int kWaitChildren = 3001;
  longs.push_back({"wait-children", required_argument, nullptr, kWaitChildren});
  longs.push_back({"help", no_argument, nullptr, 'h'});
  longs.push_back({"version", no_argument, nullptr, 'V'});
  longs.push_back({nullptr, 0, nullptr, 0});

  opterr = 0;  // the errors below name the option themselves
  std::string options;
  // With --name-in=launcher the program gets neither where its report goes nor --exitcode: the
  // launcher renders its dumps and decides.
  std::string program_options;
  bool name_in_launcher = true;
  bool name_in_given = false;
  bool wait_children = true;
  stackwalk::leakcheck::Options checked;
  for (;;) {
    const int previous = optind;
    const int c = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr);
    if (c == -1) break;
    if (c == 'h') {
      PrintHelp(stdout);
      return 0;
    }
    if (c == 'V') {
      std::printf("stackwalk-leakcheck %s\n", STACKWALK_VERSION);
      return 0;
    }
    if (c == kNameIn) {
      if (std::strcmp(optarg, "launcher") != 0 && std::strcmp(optarg, "program") != 0) {
        return Usage(std::string("bad value '") + optarg + "' for --name-in (launcher or program)");
      }
      name_in_launcher = std::strcmp(optarg, "launcher") == 0;
      name_in_given = true;
      continue;
    }
    if (c == kWaitChildren) {
      if (std::strcmp(optarg, "0") != 0 && std::strcmp(optarg, "1") != 0) {
        return Usage(std::string("bad value '") + optarg + "' for --wait-children (0 or 1)");
      }
      wait_children = optarg[0] == '1';
      continue;
    }
    const char* word = argv[previous];
    if (c == '?' || c == ':') {
      if (optopt != 0 && optopt < 1000) {
        std::string name = std::string("-") + static_cast<char>(optopt);
        return Usage(c == ':' || std::strchr(shorts.c_str(), optopt) != nullptr
                         ? "option " + name + " needs a value"
                         : "unknown option " + name);
      }
      // A long option: unknown, or missing its value (getopt_long sets optopt to its index).
      const bool missing = optopt >= 1000;
      return Usage(missing ? std::string("option ") + word + " needs a value"
                           : std::string("unknown option ") + word);
    }
    int index = c - 1000;
    if (c < 1000) {  // a short form: find its spec
      for (index = 0; kOptionSpecs[index].short_name != c; ++index) {
      }
    }
    const OptionSpec& spec = kOptionSpecs[index];
    const char* value = spec.type == OptionType::kFlag ? "1" : optarg;
    // Checked here with the library's own parser, so the error names the option and its value.
    if (!spec.set(&checked, value, std::strlen(value))) {
      return Usage(std::string("bad value '") + value + "' for --" + spec.long_name + " (" +
                   spec.help + ")");
    }
    options += ":" + TextFormItem(spec.key, value);
    const std::string key = spec.key;
    if (key != "output" && key != "exitcode" && key != "dump" && key != "program_report") {
      program_options += ":" + TextFormItem(spec.key, value);
    }
  }
  const int i = optind;
  if (i >= argc) return Usage("no program given");
  // A program that names nothing writes its dump alone: without one there would be no report,
  // and whether it leaked is known once the dump is named and suppressed, not in the program.
  if (name_in_launcher && !checked.program_report) {
    if (name_in_given) {
      return Usage("--name-in=launcher names in the launcher: --program-report=0 does not apply");
    }
    name_in_launcher = false;  // the program writes its dump alone, as asked
  }
  if (!checked.program_report && checked.dump[0] == '\0') {
    return Usage("--program-report=0 needs --dump FILE (the report is rendered from it)");
  }
  // Snapshots are kept only in the dump file (they are not leak reports): none without one.
  if ((checked.snapshot_signal != 0 || checked.snapshot_interval != 0) && checked.dump[0] == '\0') {
    return Usage("--snapshot-signal and --snapshot-interval need --dump FILE (snapshots are kept "
                 "only there, for stackwalk-report --diff)");
  }
  if (checked.snapshot_signal != 0 && checked.snapshot_signal == checked.report_signal) {
    return Usage("--snapshot-signal and --report-signal must differ (one asks for a snapshot, "
                 "the other for a leak report)");
  }
  if (!checked.program_report && checked.exitcode != 0) {
    return Usage("--program-report=0 does not go with --exitcode (leaks are known once named)");
  }
  // The suppressions files are read now, so a bad one stops the run with its file:line rather
  // than a report that could not apply it.
  if (checked.suppressions[0] != '\0') {
    stackwalk::leakcheck::Suppressions suppressions;
    if (const auto status = suppressions.AddFiles(checked.suppressions); !status.ok()) {
      std::fprintf(stderr, "stackwalk-leakcheck: bad --suppressions: %s\n",
                   std::string(status.message()).c_str());
      return 2;
    }
  }

  // A program no preload reaches would run unchecked: refused, with the reason.
  if (std::string why = stackwalk::leakcheck::WhyPreloadCannotReach(argv[i]); !why.empty()) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot check %s: %s\n", argv[i], why.c_str());
    return kCannotCheck;
  }

  std::string library = FindLibrary();
  if (library.empty()) {
    std::fprintf(stderr, "stackwalk-leakcheck: cannot find %s next to this tool\n", kLibraryName);
    return 2;
  }
  const char* preload = std::getenv("LD_PRELOAD");
  std::string preloads = library;
  if (preload != nullptr && *preload != '\0') preloads += std::string(":") + preload;
  setenv("LD_PRELOAD", preloads.c_str(), 1);
  if (name_in_launcher) {
#ifdef STACKWALK_NAME_IN_LAUNCHER
    // The program writes its dumps to the pipe the launcher hands it, and names nothing.
    program_options += ":" + TextFormItem("dump", ("/proc/self/fd/" + std::to_string(
                                                        stackwalk::leakcheck::kDumpDescriptor)).c_str());
    program_options += ":" + TextFormItem("program_report", "0");
#else
    return Usage("--name-in=launcher: this build has no symbolizer");
#endif
  }
  const std::string& program_env = name_in_launcher ? program_options : options;
  if (!program_env.empty()) setenv("STACKWALK_LEAKCHECK", program_env.c_str() + 1, 1);
#ifdef STACKWALK_NAME_IN_LAUNCHER
  // The launcher stays the program's parent: it names the program's dumps (--name-in=launcher),
  // or the program names its own reports and applies --exitcode; either way it reports the
  // program's record region should it die of a signal (SIGKILL included), and ends as it ended.
  stackwalk::leakcheck::SupervisorSettings settings;
  settings.name_in_launcher = name_in_launcher;
  settings.wait_children = wait_children;
  settings.options = checked;
  return stackwalk::leakcheck::SuperviseProgram(argv + i, settings);
#else
  // No dump library to read a record with: the program keeps this process id (the checker
  // checks it, not the programs it starts), and a death by signal leaves no report.
  (void)wait_children;  // nothing is left to wait: this process becomes the program
  setenv("STACKWALK_LEAKCHECK_PID", std::to_string(getpid()).c_str(), 1);
  execvp(argv[i], argv + i);
  std::fprintf(stderr, "stackwalk-leakcheck: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return 127;
#endif
}
