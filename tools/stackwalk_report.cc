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
// page of the last dump's whole profile (leakcheck/dump/profile_page.h). Exit status: 0 when every dump was read whole; 1 when DUMP cannot be read or
// a dump is truncated or corrupt (the error names the byte, and what could be read is still
// rendered); 2 for a bad command line.
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "leakcheck/dump/dump_decode.h"
#include "leakcheck/dump/dump_report.h"
#include "leakcheck/dump/profile_page.h"
#include "leakcheck/dump/profile_render.h"
#include "leakcheck/dump/profile_view.h"

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

}  // namespace

int main(int argc, char** argv) {
  enum { kFormat = 256, kSuppressions, kShowReachable, kDebugDir, kSysroot, kView, kTop };
  static const option kLong[] = {
      {"format", required_argument, nullptr, kFormat},
      {"view", required_argument, nullptr, kView},
      {"top", required_argument, nullptr, kTop},
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
  const DecodedDumps decoded = stackwalk::leakcheck::dump::DecodeDumps(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (format == "text" || format == "json") request.json = format == "json";
  std::string text;
  bool view_failed = false;
  if (view == ViewKind::kLeaks && (format.empty() || format == "text" || format == "json")) {
    for (const auto& dump : decoded.dumps) {
      text += stackwalk::leakcheck::dump::RenderDumpReport(dump, request, places);
    }
  } else if (!decoded.dumps.empty()) {
    std::string missing;
    text = RenderView(decoded.dumps.back(), view, format, top, request, places, &missing);
    if (!missing.empty()) {
      std::fprintf(stderr, "stackwalk-report: %s: %s\n", path, missing.c_str());
      if (decoded.error.empty()) view_failed = true;
    }
  }
  FILE* out = stdout;
  if (!output.empty() && (out = std::fopen(output.c_str(), "w")) == nullptr) {
    std::fprintf(stderr, "stackwalk-report: cannot write %s: %s\n", output.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::fwrite(text.data(), 1, text.size(), out);
  if (out != stdout) std::fclose(out);
  if (!decoded.error.empty()) {
    std::fprintf(stderr, "stackwalk-report: %s: %s%s\n", path, decoded.error.c_str(),
                 decoded.dumps.empty() ? "" : " (what could be read is reported)");
    return 1;
  }
  return view_failed ? 1 : 0;
}
