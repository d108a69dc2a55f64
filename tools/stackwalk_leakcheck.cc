// stackwalk-leakcheck: runs a program with the leak checker preloaded and, at its exit, reports
// the allocations it never freed, grouped by allocating stack, with names and file:line.
//
//   stackwalk-leakcheck [--output FILE] [--exitcode N] [--min-size N] [--max-frames N]
//                       [--method auto|fp|ehframe] [--format text|json] [--libraries GLOBS]
//                       [--ignore-libraries GLOBS] [--report-signal SIG] [--follow-exec]
//                       [--unreachable-only] [--] PROGRAM [ARGS...]
//
// The program's exit status is passed through, unless --exitcode N is given and leaks are found.
// Exit statuses of its own: 2 for a bad command line, 126 for a program the preload cannot reach
// (statically linked, set-user-ID or set-group-ID of another owner, file capabilities), 127 for
// one that cannot be run.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "leakcheck/options.h"
#include "leakcheck/preload_reach.h"

#ifndef STACKWALK_INSTALL_LIBDIR
#define STACKWALK_INSTALL_LIBDIR "lib"
#endif

namespace {

constexpr char kLibraryName[] = "libstackwalk_leakcheck.so";
// Exit status for a program the checker cannot reach (static, set-ID, file capabilities): found,
// but not run, as a shell says 126 for a command it cannot execute.
constexpr int kCannotCheck = 126;

int Usage(const char* complaint) {
  if (complaint != nullptr) std::fprintf(stderr, "stackwalk-leakcheck: %s\n", complaint);
  std::fprintf(stderr,
               "usage: stackwalk-leakcheck [--output FILE] [--exitcode N] [--min-size N]\n"
               "                           [--max-frames N] [--method auto|fp|ehframe]\n"
               "                           [--format text|json] [--libraries GLOBS]\n"
               "                           [--ignore-libraries GLOBS] [--report-signal SIG]\n"
               "                           [--follow-exec] [--unreachable-only]\n"
               "                           [--] PROGRAM [ARGS...]\n"
               "Runs PROGRAM with %s preloaded; at its exit, prints every allocation it\n"
               "never freed, grouped by allocating stack (to stderr, or FILE; a %%p in FILE\n"
               "becomes the process id, so that child processes write reports of their own).\n"
               "  --exitcode N    exit with N if leaks were found (default: PROGRAM's status)\n"
               "  --min-size N    ignore allocations smaller than N bytes\n"
               "  --max-frames N  frames kept per allocation, 1..64 (default 32)\n"
               "  --method M      unwinder for allocation stacks (default auto)\n"
               "  --format F      text (default) or json\n"
               "  --libraries G   only leaks with a frame in an object matching one of the\n"
               "                  comma-separated globs G (path or file name, e.g. 'libfoo*')\n"
               "  --ignore-libraries G  no leaks with a frame in a matching object\n"
               "  --report-signal S     also report the live allocations on each signal S\n"
               "                  (e.g. SIGUSR2 or 12), appended to the output\n"
               "  --follow-exec   check the programs PROGRAM executes too (default: not)\n"
               "  --unreachable-only  scan memory for pointers and report only blocks nothing\n"
               "                  reachable points to (definitely and indirectly lost)\n",
               kLibraryName);
  return 2;
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

bool IsNumber(const char* text) {
  if (*text == '\0') return false;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      Usage(nullptr);
      return 0;
    }
    if (arg.rfind("--", 0) != 0) break;
    if (arg == "--follow-exec") {
      options += ":follow_exec=1";
      continue;
    }
    if (arg == "--unreachable-only") {
      options += ":unreachable_only=1";
      continue;
    }
    if (i + 1 >= argc) return Usage(("missing value for " + arg).c_str());
    const char* value = argv[++i];
    if (arg == "--output") {
      if (std::strchr(value, ':') != nullptr) return Usage("--output: the path may not contain ':'");
      options += std::string(":output=") + value;
    } else if (arg == "--exitcode" || arg == "--min-size" || arg == "--max-frames") {
      if (!IsNumber(value)) return Usage((arg + " needs a number").c_str());
      std::string key = arg == "--exitcode" ? "exitcode" : arg == "--min-size" ? "min_size" : "max_frames";
      options += ":" + key + "=" + value;
    } else if (arg == "--method") {
      if (std::strcmp(value, "auto") != 0 && std::strcmp(value, "fp") != 0 &&
          std::strcmp(value, "ehframe") != 0) {
        return Usage("--method: one of auto, fp, ehframe");
      }
      options += std::string(":method=") + value;
    } else if (arg == "--format") {
      if (std::strcmp(value, "text") != 0 && std::strcmp(value, "json") != 0) {
        return Usage("--format: text or json");
      }
      options += std::string(":format=") + value;
    } else if (arg == "--libraries" || arg == "--ignore-libraries" || arg == "--report-signal") {
      if (*value == '\0' || std::strchr(value, ':') != nullptr) {
        return Usage((arg + ": a value without ':' is needed").c_str());
      }
      std::string key = arg == "--libraries"          ? "libraries"
                        : arg == "--ignore-libraries" ? "ignore_libraries"
                                                      : "report_signal";
      options += ":" + key + "=" + value;
    } else {
      return Usage(("unknown option " + arg).c_str());
    }
  }
  if (i >= argc) return Usage("no program given");
  // Every value as the preloaded library will read it (it names what it refuses).
  int problems = 0;
  if (!options.empty()) stackwalk::leakcheck::ParseOptions(options.c_str() + 1, &problems);
  if (problems != 0) return Usage("an option's value was refused");

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
  if (!options.empty()) setenv("STACKWALK_LEAKCHECK", options.c_str() + 1, 1);
  // The program keeps this process id: the checker checks it, not the programs it starts.
  setenv("STACKWALK_LEAKCHECK_PID", std::to_string(getpid()).c_str(), 1);

  execvp(argv[i], argv + i);
  std::fprintf(stderr, "stackwalk-leakcheck: cannot run %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
