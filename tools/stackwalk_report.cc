// stackwalk-report: names and renders the leak dumps a program left (stackwalk-leakcheck
// --dump FILE; docs/dump-format.md), as the program's own report would have been: later, or on
// another machine that has the objects' files or their debug files.
//
//   stackwalk-report [--view V] [--format F] [--top N] [OPTION]... DUMP
//
// The leaks view (the default): each dump in DUMP (a program that reported several times
// appended one per report) is rendered in turn. The profile views (peak, allocations, temporary,
// live, threads; leakcheck/dump/profile_view.h) render the last dump: its figures cover the
// whole run up to it. --format svg draws a stack view as a flame graph; --format html makes one
// page of the last dump's whole profile (leakcheck/dump/profile_page.h). Snapshots (dumps the
// program added with --snapshot-signal, --snapshot-interval or the API) are not leak reports:
// the leaks view skips them. --diff A B lists the growth by stack from one dump to another
// (leakcheck/dump/dump_diff.h). Exit status: 0 when every dump was read whole; 1 when DUMP
// cannot be read or a dump is truncated or corrupt (the error names the byte, and what could be
// read is still rendered), or a dump to diff cannot be (no such dump, no stack statistics, the
// dump itself cut); 2 for a bad command line.
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_diff.h"
#include "leakcheck/dump/dump_report.h"
#include "leakcheck/dump/profile_page.h"
#include "leakcheck/dump/profile_render.h"
#include "leakcheck/dump/profile_view.h"
#include "leakcheck/profile/flame_graph.h"
#include "leakcheck/profile/flame_svg.h"
#include "leakcheck/profile/folded_reader.h"

#ifndef STACKWALK_VERSION
#define STACKWALK_VERSION "unknown"
#endif

namespace {

using stackwalk::leakcheck::dump::DecodedDumps;
using stackwalk::leakcheck::dump::NamingPlaces;
using stackwalk::leakcheck::dump::RenderRequest;
using stackwalk::leakcheck::dump::ViewKind;

constexpr char kHelp[] =
    "usage: stackwalk-report [OPTION]... DUMP\n"
    "       stackwalk-report --diff [--from-dump N] [--to-dump N] [OPTION]... A B\n"
    "Names and renders the leak reports of DUMP (written by stackwalk-leakcheck --dump).\n\n"
    "  --view=V            leaks (default: each dump's leak report), or a memory profile view\n"
    "                      of the last dump: peak (bytes each stack held at the process's\n"
    "                      peak), allocations (made per stack over the run), temporary (freed\n"
    "                      before their thread allocated again), live (blocks live at the\n"
    "                      dump), threads (each thread's live bytes and peak), timeline (live\n"
    "                      bytes over time, total and the busiest threads; --top N points)\n"
    "  --format=F          text, json, folded (flame graph input: flamegraph.pl, inferno,\n"
    "                      speedscope), svg (a stack view's interactive flame graph) or html\n"
    "                      (one page of the whole profile: summary, timeline chart, top tables,\n"
    "                      flame graphs; --view picks the view shown first); leaks default to\n"
    "                      the program's format, views to text\n"
    "  --diff              the growth by stack from dump A to dump B (two snapshots of one\n"
    "                      run, or dumps of two runs): live bytes and blocks at A and at B,\n"
    "                      the difference, allocations made between; largest growth first;\n"
    "                      text, json or folded/svg (the stacks that grew)\n"
    "  --from-dump=N       with --diff: the N-th dump of A (from 1; default: its last)\n"
    "  --to-dump=N         with --diff: the N-th dump of B (from 1; default: its last)\n"
    "  --top=N             the N largest stacks (text, JSON, HTML tables; default 10 in text\n"
    "                      and HTML, all in JSON)\n"
    "  -o, --output=FILE   write the report to FILE instead of standard output\n"
    "  --suppressions=FILE leaks to leave out (LeakSanitizer's format); repeatable; replaces\n"
    "                      the files the program was given\n"
    "  --show-reachable    list the blocks still reachable too\n"
    "  --debug-dir=DIR     look for debug files by build-id under DIR/.build-id (repeatable;\n"
    "                      /usr/lib/debug is searched last)\n"
    "  --sysroot=DIR       read each object's file under DIR (the program's paths prefixed)\n"
    "  -h, --help          this help\n"
    "  -V, --version       the version\n";

bool ReadWhole(const char* path, std::string* out, std::string* error) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::strerror(errno);
    return false;
  }
  // A file's length up front: grown by doubling, clang's 21 MB dump took 33 MB and 10 copies.
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    try {
      out->reserve(static_cast<size_t>(st.st_size));
    } catch (const std::exception&) {  // too large to reserve: read as it comes, as before
    }
  }
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::strerror(errno);
      close(fd);
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// A view of `dump` in `format` ("" for text); the leaks view as folded stacks.
std::string RenderView(const stackwalk::leakcheck::dump::DumpContents& dump, ViewKind kind,
                       const std::string& format, long top, const RenderRequest& request,
                       const NamingPlaces& places, std::string* missing) {
  namespace lc = stackwalk::leakcheck::dump;
  lc::DumpNamer namer(dump, places);
  if (format == "html") {
    return lc::RenderProfilePage(dump, &namer, kind, top < 0 ? 10 : static_cast<size_t>(top),
                                 missing);
  }
  const lc::ProfileView view =
      kind == ViewKind::kLeaks ? lc::LeaksView(lc::ReportFromDump(dump, request, &namer))
                               : lc::BuildProfileView(dump, kind, &namer);
  *missing = view.missing;
  if (format == "svg") return lc::RenderViewSvg(view);
  if (format == "folded") return lc::RenderViewFolded(view);
  if (format == "json") return lc::RenderViewJson(view, top < 0 ? 0 : static_cast<size_t>(top));
  return lc::RenderViewText(view, top < 0 ? 10 : static_cast<size_t>(top));
}

int Usage(const char* why) {
  std::fprintf(stderr, "stackwalk-report: %s\n%s", why, kHelp);
  return 2;
}

// Writes `text` to `output`, or to stdout when it is empty. False, having said why, if it
// cannot.
bool WriteOutput(const std::string& output, const std::string& text) {
  FILE* out = stdout;
  if (!output.empty() && (out = std::fopen(output.c_str(), "w")) == nullptr) {
    std::fprintf(stderr, "stackwalk-report: cannot write %s: %s\n", output.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fwrite(text.data(), 1, text.size(), out);
  if (out != stdout) std::fclose(out);
  return true;
}

// One side of --diff: the dumps of a file and which one.
struct DiffInput {
  DecodedDumps decoded;
  size_t index = 0;  // into decoded.dumps
};

// Reads dump `which` (from 1; 0: the last) of `path` for --diff, saying on stderr what is wrong
// with the file. Returns 0, or 1 when that dump cannot be diffed: no file, no dump, not that many
// whole dumps, or the one asked for is the cut or corrupt one (its figures would be partial).
int LoadForDiff(const char* path, long which, const char* option, DiffInput* in, bool* damaged) {
  std::string bytes, why;
  if (!ReadWhole(path, &bytes, &why)) {
    std::fprintf(stderr, "stackwalk-report: cannot read %s: %s\n", path, why.c_str());
    return 1;
  }
  in->decoded = stackwalk::leakcheck::dump::DecodeDumps(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  const DecodedDumps& d = in->decoded;
  // The last dump read of a damaged file may be partial: never diffed.
  const size_t whole = d.dumps.size() - (d.error.empty() || d.dumps.empty() ? 0 : 1);
  if (!d.error.empty()) {
    *damaged = true;
    std::fprintf(stderr, "stackwalk-report: %s: %s\n", path, d.error.c_str());
  }
  if (whole == 0) {
    std::fprintf(stderr, "stackwalk-report: %s: no whole dump to diff\n", path);
    return 1;
  }
  if (which == 0 && !d.error.empty()) {
    std::fprintf(stderr,
                 "stackwalk-report: %s: its last dump is cut or corrupt: pick a whole one with "
                 "%s N (1..%zu)\n", path, option, whole);
    return 1;
  }
  const size_t n = which == 0 ? whole : static_cast<size_t>(which);
  if (n > whole) {
    std::fprintf(stderr, "stackwalk-report: %s holds %zu whole dump(s): %s %ld is not one\n",
                 path, whole, option, which);
    return 1;
  }
  in->index = n - 1;
  return 0;
}

// --diff A B: the growth by stack from A's dump to B's, rendered in `format`.
int RunDiff(const char* a_path, long a_which, const char* b_path, long b_which,
            const std::string& format, long top, const NamingPlaces& places,
            const std::string& output) {
  namespace lc = stackwalk::leakcheck::dump;
  DiffInput a, b;
  bool damaged = false;
  if (int status = LoadForDiff(a_path, a_which, "--from-dump", &a, &damaged); status != 0) {
    return status;
  }
  if (int status = LoadForDiff(b_path, b_which, "--to-dump", &b, &damaged); status != 0) {
    return status;
  }
  const lc::DumpContents& from = a.decoded.dumps[a.index];
  const lc::DumpContents& to = b.decoded.dumps[b.index];
  lc::DumpNamer name_a(from, places), name_b(to, places);
  lc::DumpDiff diff;
  std::string why;
  if (!lc::DiffDumps(from, {a_path, a.index + 1, a.decoded.dumps.size(), "", 0, ""}, &name_a, to,
                     {b_path, b.index + 1, b.decoded.dumps.size(), "", 0, ""}, &name_b, &diff,
                     &why)) {
    std::fprintf(stderr, "stackwalk-report: %s\n", why.c_str());
    return 1;
  }
  std::string text;
  if (format == "json") {
    text = lc::RenderDiffJson(diff, top < 0 ? 0 : static_cast<size_t>(top));
  } else if (format == "folded" || format == "svg") {
    text = lc::RenderDiffFolded(diff);
    if (format == "svg") {
      // The flame graph of the folded growth: its total is the positive growth.
      namespace prof = stackwalk::profile;
      prof::FlameInput input{"growth by stack", prof::ValueUnit::kBytes, {}};
      prof::ReadFolded(text, input);
      text = prof::RenderFlameSvg(prof::FlameTree::Build(input), input.title, input.unit,
                                  prof::FlameSvgOptions{});
    }
  } else {
    text = lc::RenderDiffText(diff, top < 0 ? 10 : static_cast<size_t>(top));
  }
  if (!WriteOutput(output, text)) return 1;
  return damaged ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  enum {
    kFormat = 256, kSuppressions, kShowReachable, kDebugDir, kSysroot, kView, kTop, kDiff,
    kFromDump, kToDump
  };
  static const option kLong[] = {
      {"format", required_argument, nullptr, kFormat},
      {"view", required_argument, nullptr, kView},
      {"top", required_argument, nullptr, kTop},
      {"diff", no_argument, nullptr, kDiff},
      {"from-dump", required_argument, nullptr, kFromDump},
      {"to-dump", required_argument, nullptr, kToDump},
      {"output", required_argument, nullptr, 'o'},
      {"suppressions", required_argument, nullptr, kSuppressions},
      {"show-reachable", no_argument, nullptr, kShowReachable},
      {"debug-dir", required_argument, nullptr, kDebugDir},
      {"sysroot", required_argument, nullptr, kSysroot},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},
      {nullptr, 0, nullptr, 0},
  };
  RenderRequest request;
  NamingPlaces places;
  std::string output;
  ViewKind view = ViewKind::kLeaks;
  std::string format;  // "" the default
  long top = -1;       // -1 the default
  bool diff = false;
  long from_dump = 0, to_dump = 0;  // 0: the last
  bool view_given = false;
  for (int c; (c = getopt_long(argc, argv, "o:hV", kLong, nullptr)) != -1;) {
    switch (c) {
      case kFormat:
        format = optarg;
        if (format != "text" && format != "json" && format != "folded" && format != "svg" &&
            format != "html") {
          return Usage("--format takes text, json, folded, svg or html");
        }
        break;
      case kView:
        view_given = true;
        if (!stackwalk::leakcheck::dump::ParseViewKind(optarg, &view)) {
          return Usage("--view takes leaks, peak, allocations, temporary, live, threads or timeline");
        }
        break;
      case kTop: {
        char* end = nullptr;
        top = std::strtol(optarg, &end, 10);
        if (*optarg == '\0' || *end != '\0' || top < 0) return Usage("--top takes a count");
        break;
      }
      case kDiff: diff = true; break;
      case kFromDump:
      case kToDump: {
        char* end = nullptr;
        const long n = std::strtol(optarg, &end, 10);
        if (*optarg == '\0' || *end != '\0' || n < 1) {
          return Usage("--from-dump and --to-dump take a dump's place in its file, from 1");
        }
        (c == kFromDump ? from_dump : to_dump) = n;
        break;
      }
      case 'o': output = optarg; break;
      case kSuppressions:
        request.suppressions =
            request.suppressions ? *request.suppressions + "," + optarg : std::string(optarg);
        break;
      case kShowReachable: request.show_reachable = true; break;
      case kDebugDir: places.debug_dirs.push_back(optarg); break;
      case kSysroot: places.sysroot = optarg; break;
      case 'h': std::fputs(kHelp, stdout); return 0;
      case 'V': std::printf("stackwalk-report %s\n", STACKWALK_VERSION); return 0;
      default: return Usage("bad command line");
    }
  }
  if (diff) {
    if (view_given) return Usage("--diff shows growth, not a --view");
    if (format == "html") return Usage("--diff renders text, json, folded or svg");
    if (optind + 2 != argc) return Usage("--diff takes two dump files, A and B (may be one file)");
    return RunDiff(argv[optind], from_dump, argv[optind + 1], to_dump, format, top, places,
                   output);
  }
  if (from_dump != 0 || to_dump != 0) return Usage("--from-dump and --to-dump go with --diff");
  if (view == ViewKind::kTimeline && format == "folded") {
    return Usage("--view timeline --format folded: the timeline has no stacks to fold; "
                 "--format text, json or html");
  }
  if (format == "svg" && !stackwalk::leakcheck::dump::ViewHasStacks(view)) {
    const std::string why = std::string("--view ") + stackwalk::leakcheck::dump::ViewName(view) +
                            " --format svg: the view has no stacks to draw as a flame graph; "
                            "--format text, json or html";
    return Usage(why.c_str());
  }
  if (optind + 1 != argc) return Usage(optind == argc ? "no DUMP given" : "one DUMP only");
  while (places.sysroot.size() > 1 && places.sysroot.back() == '/') places.sysroot.pop_back();
  const char* path = argv[optind];
  std::string bytes, why;
  if (!ReadWhole(path, &bytes, &why)) {
    std::fprintf(stderr, "stackwalk-report: cannot read %s: %s\n", path, why.c_str());
    return 1;
  }
  // The leaks view reads what a leak report shows (the html page shows the profile's views too).
  const auto scope = view == ViewKind::kLeaks && format != "html"
                         ? stackwalk::leakcheck::dump::DecodeScope::kLeakReport
                         : stackwalk::leakcheck::dump::DecodeScope::kEverything;
  const DecodedDumps decoded = stackwalk::leakcheck::dump::DecodeDumps(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), scope);
  std::string().swap(bytes);  // decoded: the raw bytes are not needed to name and render
  if (format == "text" || format == "json") request.json = format == "json";
  std::string text;
  bool view_failed = false;
  if (view == ViewKind::kLeaks && (format.empty() || format == "text" || format == "json")) {
    size_t snapshots = 0;
    for (const auto& dump : decoded.dumps) {
      if (dump.process.snapshot) {  // not a leak report (--diff, --view read it)
        ++snapshots;
        continue;
      }
      text += stackwalk::leakcheck::dump::RenderDumpReport(dump, request, places);
    }
    if (snapshots != 0 && snapshots == decoded.dumps.size()) {
      std::fprintf(stderr,
                   "stackwalk-report: %s holds %zu snapshot(s) and no leak report: see --diff "
                   "or --view\n", path, snapshots);
    }
  } else if (!decoded.dumps.empty()) {
    std::string missing;
    text = RenderView(decoded.dumps.back(), view, format, top, request, places, &missing);
    if (!missing.empty()) {
      std::fprintf(stderr, "stackwalk-report: %s: %s\n", path, missing.c_str());
      if (decoded.error.empty()) view_failed = true;
    }
  }
  if (!WriteOutput(output, text)) return 1;
  if (!decoded.error.empty()) {
    std::fprintf(stderr, "stackwalk-report: %s: %s%s\n", path, decoded.error.c_str(),
                 decoded.dumps.empty() ? "" : " (what could be read is reported)");
    return 1;
  }
  return view_failed ? 1 : 0;
}
