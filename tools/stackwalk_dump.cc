// stackwalk-dump: every thread of a running process, unwound from outside it by stackwalk's own
// unwinders (CFI from the objects' files, the frame-pointer step where no table covers a PC) and
// named by the symbolizer (function, file:line:column, inline frames).
//
//   stackwalk-dump [--json] [--no-names] [--max-frames N] PID
//   stackwalk-dump [--json] [--no-names] [--max-frames N] --snapshot FILE [--sysroot DIR]
//                  [--debug-dir DIR]
//
// --snapshot unwinds and names a crash snapshot the crash handler wrote
// (CrashHandlerOptions::snapshot_path, docs/snapshot-format.md) instead of a live process: the
// crashing thread first ("crashed"), then each other thread it lists, by tid and name, each
// walked from its registers over its own stack bytes (a read anywhere else fails) or listed as
// not captured with the reason (--json: docs/schema/snapshot_dump.schema.json), with the objects
// it lists, each file found at DIR + its path under --sysroot (else at its path),
// or by build-id under --debug-dir (DIR/.build-id/xx/rest[.debug]); a file whose build-id is not
// the snapshot's is not used. A snapshot of any of x86_64, aarch64 and arm32 unwinds on any
// host (an aarch64 crash on an x86_64 workstation: --sysroot /usr/aarch64-linux-gnu finds its
// libc). Exit status 1, after the best partial answer, when the snapshot is cut short, corrupt,
// or of another architecture.
//
// The process's maps and object files are read first, while it runs; then each thread in turn is
// stopped (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal reaches the program), its registers and
// stack are read and walked, and it is resumed at once: a thread is stopped only for its own walk,
// and the output says for how long. Frames are named after every thread has run on again.
//
// Output, per thread, with frames numbered as stackwalk-symbolize and the crash handler number
// them:
//
//   Thread 4242 (worker):  stopped 38 us, 5 frames, end of stack
//   #0 0x00007f... in __libc_read at ../sysdeps/unix/sysv/linux/read.c:26:10 (/lib/x86_64-linux-gnu/libc.so.6+0x10e98d)
//
// --json writes one object: {"pid", "name", "threads": [{"tid", "name", "stopped_us", "end",
// "error", "frame_trust", "frames": [...]}], "stopped_us_total", "stopped_us_max"}, each frame as
// docs/schema/frame.schema.json defines it; frame_trust[i] says how trace frame i was found:
// "context" (the registers), "cfi" (a CFI step) or "fp" (the frame record: no table covered the
// frame below).
//
// Exit status: 0 when every thread was read (a thread that exited meanwhile is reported, not an
// error), 1 when the process cannot be read or traced (the reason on stderr: no such process,
// ptrace refused and why), 2 for a usage error.

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "format/frame_json.h"
#include "remote/remote_memory.h"
#include "remote/remote_walk.h"
#include "remote/snapshot_memory.h"
#include "remote/snapshot_reader.h"
#include "remote/target_modules.h"
#include "remote/thread_stop.h"
#include "stackwalk/symbolizer.h"

namespace {

using stackwalk::SymbolizedFrame;
using stackwalk::Symbolizer;
using namespace stackwalk::internal;

struct Options {
  bool json = false;
  bool names = true;
  int max_frames = 256;
  pid_t pid = 0;
  std::string snapshot;   // --snapshot FILE, instead of a PID
  std::string sysroot;
  std::string debug_dir;
};

constexpr int kMaxFramesLimit = 65536;

void Usage(FILE* to) {
  std::fprintf(to,
               "usage: stackwalk-dump [--json] [--no-names] [--max-frames N] PID\n"
               "       stackwalk-dump [--json] [--no-names] [--max-frames N] --snapshot FILE\n"
               "                      [--sysroot DIR] [--debug-dir DIR]\n"
               "  every thread of process PID: its tid and name, how long it was stopped, its\n"
               "  frames unwound from outside (CFI, frame pointers) and named (file:line, inlines);\n"
               "  or every thread of a crash snapshot, the crashed one first, its objects' files found under\n"
               "  --sysroot by path or under --debug-dir by build-id\n");
}

bool ParseNumber(const char* text, long lo, long hi, long* out) {
  char* end;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// 0 on success, else the exit status.
int ParseArgs(int argc, char** argv, Options* o) {
  bool have_pid = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    long v;
    if (arg == "--json") {
      o->json = true;
    } else if (arg == "--no-names") {
      o->names = false;
    } else if (arg == "--max-frames" && i + 1 < argc) {
      if (!ParseNumber(argv[++i], 1, kMaxFramesLimit, &v)) {
        std::fprintf(stderr, "stackwalk-dump: --max-frames takes 1..%d\n", kMaxFramesLimit);
        return 2;
      }
      o->max_frames = static_cast<int>(v);
    } else if ((arg == "--snapshot" || arg == "--sysroot" || arg == "--debug-dir") &&
               i + 1 < argc) {
      std::string& to = arg == "--snapshot" ? o->snapshot : arg == "--sysroot" ? o->sysroot
                                                                              : o->debug_dir;
      to = argv[++i];
      if (to.empty()) {
        std::fprintf(stderr, "stackwalk-dump: %s takes a non-empty path\n", arg.c_str());
        return 2;
      }
    } else if (arg == "--help" || arg == "-h") {
      Usage(stdout);
      std::exit(0);
    } else if (!have_pid && ParseNumber(argv[i], 1, 0x7fffffff, &v)) {
      o->pid = static_cast<pid_t>(v);
      have_pid = true;
    } else {
      std::fprintf(stderr, "stackwalk-dump: unexpected argument '%s'\n", argv[i]);
      Usage(stderr);
      return 2;
    }
  }
  if (have_pid == !o->snapshot.empty() ||
      (o->snapshot.empty() && (!o->sysroot.empty() || !o->debug_dir.empty()))) {
    if (have_pid) std::fprintf(stderr, "stackwalk-dump: a PID or --snapshot FILE, not both\n");
    Usage(stderr);
    return 2;
  }
  return 0;
}

struct ThreadDump {
  TargetThread thread;
  std::string error;        // why it could not be read, if it could not
  bool exited = false;      // it exited between the listing and its stop: not a failure
  int64_t stopped_us = 0;   // from the stop request to the resume
  TargetWalk walk;
  std::vector<SymbolizedFrame> frames;
};

// Names one walk: each frame through its object's file (SymbolizeFile at the link-time address,
// pc - 1 for a return address), or bare where no file is known.
std::vector<SymbolizedFrame> NameFrames(const TargetWalk& walk, const TargetModules& modules,
                                        Symbolizer* symbolizer) {
  std::vector<SymbolizedFrame> out;
  for (size_t i = 0; i < walk.frames.size(); ++i) {
    const TargetFrame& f = walk.frames[i];
    const TargetModule* m = modules.Find(f.pc);
    SymbolizedFrame bare;
    bare.pc = f.pc;
    bare.index = static_cast<int>(i);
    if (m != nullptr) {
      bare.module = m->path;
      bare.module_offset = m->LinkTimeAddress(f.pc);
    }
    if (symbolizer != nullptr && m != nullptr && !m->file.empty() && m->error.empty()) {
      const uint64_t lookup = bare.module_offset - (f.exact ? 0 : 1);
      auto named = symbolizer->SymbolizeFile(m->file, lookup);
      if (named.ok() && !named->empty()) {
        for (SymbolizedFrame& frame : *named) {
          frame.pc = bare.pc;
          frame.index = bare.index;
          frame.module = bare.module;
          frame.module_offset = bare.module_offset;
          out.push_back(std::move(frame));
        }
        continue;
      }
    }
    out.push_back(std::move(bare));
  }
  return out;
}

void PrintText(const Options& o, const std::string& name, const std::vector<ThreadDump>& dumps,
               int64_t total_us, int64_t max_us) {
  std::printf("Process %d (%s): %zu threads, each stopped only for its own walk: %lld us in all, "
              "%lld us at most\n",
              static_cast<int>(o.pid), name.c_str(), dumps.size(),
              static_cast<long long>(total_us), static_cast<long long>(max_us));
  for (const ThreadDump& d : dumps) {
    std::printf("\nThread %d (%s):", static_cast<int>(d.thread.tid), d.thread.name.c_str());
    if (!d.error.empty()) {
      std::printf("  not read: %s\n", d.error.c_str());
      continue;
    }
    std::printf("  stopped %lld us, %zu frames, %s\n", static_cast<long long>(d.stopped_us),
                d.walk.frames.size(), EndName(d.walk.end));
    std::fputs(stackwalk::FormatFrames(d.frames).c_str(), stdout);
  }
}

// A thread's "end", "error", "frame_trust" and "frames".
void AddWalkJson(const ThreadDump& d, nlohmann::ordered_json* t) {
  (*t)["end"] = d.error.empty() ? EndName(d.walk.end) : "";
  (*t)["error"] = d.error;
  // How each trace frame was found (by index; inline frames share their index's).
  (*t)["frame_trust"] = nlohmann::ordered_json::array();
  for (const TargetFrame& f : d.walk.frames) (*t)["frame_trust"].push_back(TrustName(f.trust));
  (*t)["frames"] = nlohmann::ordered_json::array();
  for (const SymbolizedFrame& f : d.frames) (*t)["frames"].push_back(FrameJson(f));
}

void PrintJson(const Options& o, const std::string& name, const std::vector<ThreadDump>& dumps,
               int64_t total_us, int64_t max_us) {
  nlohmann::ordered_json out;
  out["pid"] = o.pid;
  out["name"] = name;
  out["threads"] = nlohmann::ordered_json::array();
  for (const ThreadDump& d : dumps) {
    nlohmann::ordered_json t;
    t["tid"] = d.thread.tid;
    t["name"] = d.thread.name;
    t["stopped_us"] = d.stopped_us;
    AddWalkJson(d, &t);
    out["threads"].push_back(std::move(t));
  }
  out["stopped_us_total"] = total_us;
  out["stopped_us_max"] = max_us;
  std::printf("%s\n", DumpJson(out).c_str());
}

const char* SignalAbbrev(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    default: return "signal";
  }
}

// One thread of a snapshot as stackwalk-dump --snapshot prints it.
struct SnapshotThreadDump {
  ThreadDump dump;
  bool crashed = false;      // the thread the crash handler ran in
  std::string not_captured;  // why its registers and stack are not in the snapshot, if not
  int crash_signal = 0;      // it crashed too, of this signal, while the crashed thread reported
  size_t stack_bytes = 0;
};

// Walks one thread's registers over its own stack bytes (a read anywhere else fails), or says
// which of them the snapshot lacks.
void WalkSnapshotStack(const Snapshot& snap, const SnapshotThreadContext& context,
                       const TargetModules& modules, int max_frames, ThreadDump* d) {
  if (!context.has_registers || !context.has_stack) {
    d->error = context.has_registers ? "the snapshot holds no stack" : "the snapshot holds no registers";
    return;
  }
  SnapshotMemory memory(context.stack_address, context.stack);
  WalkSnapshotThread(snap.machine, snap.word_size, context.registers, context.register_mask,
                     memory, modules, max_frames, &d->walk, &d->error);
}

// The objects a frame of any thread lies in whose files were not found or not usable: those
// frames are neither unwound through by CFI nor named.
std::vector<const TargetModule*> MissingModules(const std::vector<SnapshotThreadDump>& dumps,
                                                const TargetModules& modules) {
  std::vector<const TargetModule*> missing;
  for (const SnapshotThreadDump& d : dumps) {
    for (const TargetFrame& f : d.dump.walk.frames) {
      const TargetModule* m = modules.Find(f.pc);
      if (m != nullptr && !m->error.empty() &&
          std::find(missing.begin(), missing.end(), m) == missing.end()) {
        missing.push_back(m);
      }
    }
  }
  return missing;
}

void PrintSnapshotJson(const Options& o, const Snapshot& snap,
                       const std::vector<SnapshotThreadDump>& dumps, const TargetModules& modules) {
  nlohmann::ordered_json out;
  out["snapshot"] = o.snapshot;
  out["machine"] = MachineName(snap.machine);
  out["version"] = snap.version;
  out["complete"] = snap.complete;
  out["error"] = snap.error;
  out["pid"] = snap.pid;
  out["signal"] = snap.signal;
  out["code"] = snap.code;
  out["fault_address"] = snap.fault_address;
  out["stack_bytes"] = snap.stack.size();
  out["threads"] = nlohmann::ordered_json::array();
  for (const SnapshotThreadDump& d : dumps) {
    nlohmann::ordered_json t;
    t["tid"] = d.dump.thread.tid;
    t["name"] = d.dump.thread.name;
    t["crashed"] = d.crashed;
    t["captured"] = d.not_captured.empty();
    t["not_captured"] = d.not_captured;
    t["crash_signal"] = d.crash_signal;
    t["stack_bytes"] = d.stack_bytes;
    AddWalkJson(d.dump, &t);
    out["threads"].push_back(std::move(t));
  }
  out["modules"] = nlohmann::ordered_json::array();
  for (const TargetModule& m : modules.modules()) {
    out["modules"].push_back({{"path", m.path}, {"build_id", m.build_id},
                              {"load_bias", m.load_bias}, {"file", m.file}, {"error", m.error}});
  }
  std::printf("%s\n", DumpJson(out).c_str());
}

void PrintSnapshotText(const Options& o, const Snapshot& snap,
                       const std::vector<SnapshotThreadDump>& dumps, const TargetModules& modules) {
  int captured = 0;
  for (const SnapshotThreadDump& d : dumps) captured += !d.crashed && d.not_captured.empty();
  std::printf("Snapshot %s: %s, process %d, %s (signal %d), code %d, fault address 0x%llx, "
              "%zu stack bytes, %zu objects, %zu threads (%d others captured)\n",
              o.snapshot.c_str(), MachineName(snap.machine).c_str(), snap.pid,
              SignalAbbrev(snap.signal), snap.signal, snap.code,
              static_cast<unsigned long long>(snap.fault_address), snap.stack.size(),
              snap.modules.size(), dumps.size(), captured);
  for (const SnapshotThreadDump& d : dumps) {
    std::printf("\nThread %d (%s): %s", d.dump.thread.tid, d.dump.thread.name.c_str(),
                d.crashed ? "crashed, " : "");
    if (d.crash_signal != 0) {
      std::printf("crashed too (%s) while the report was written, ", SignalAbbrev(d.crash_signal));
    }
    if (!d.not_captured.empty()) {
      std::printf("not captured: %s\n", d.not_captured.c_str());
    } else if (!d.dump.error.empty()) {
      std::printf("not unwound: %s\n", d.dump.error.c_str());
    } else {
      std::printf("%zu frames, %s\n", d.dump.walk.frames.size(), EndName(d.dump.walk.end));
      std::fputs(stackwalk::FormatFrames(d.dump.frames).c_str(), stdout);
    }
  }
  for (const TargetModule* m : MissingModules(dumps, modules)) {
    std::printf("  (object %s: %s)\n", m->path.c_str(), m->error.c_str());
  }
}

// stackwalk-dump --snapshot FILE: 0, or 1 after the best partial answer.
int RunSnapshot(const Options& o) {
  std::string bytes;
  {
    FILE* f = std::fopen(o.snapshot.c_str(), "rb");
    if (f == nullptr) {
      std::fprintf(stderr, "stackwalk-dump: cannot open %s: %s\n", o.snapshot.c_str(),
                   std::strerror(errno));
      return 1;
    }
    // Bounded: a snapshot holds at most 16 MiB of stack; /dev/zero is not read for ever.
    constexpr size_t kMaxSnapshotFile = size_t{64} << 20;
    char buf[65536];
    for (size_t n; bytes.size() <= kMaxSnapshotFile &&
                   (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) {
      bytes.append(buf, n);
    }
    const bool failed = std::ferror(f) != 0;
    std::fclose(f);
    if (failed || bytes.size() > kMaxSnapshotFile) {
      std::fprintf(stderr, "stackwalk-dump: cannot read %s%s\n", o.snapshot.c_str(),
                   failed ? "" : ": larger than any snapshot (64 MiB)");
      return 1;
    }
  }
  const Snapshot snap =
      ReadSnapshot(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  std::vector<std::string> problems;
  if (!snap.error.empty()) problems.push_back(snap.error);
  // The objects' files are read as the snapshot's architecture, whatever this host's.
  std::unique_ptr<TargetModules> modules =
      TargetModules::FromSnapshot(snap.modules, snap.machine, o.sysroot, o.debug_dir);
  // The crashing thread first, then the others in the order written.
  std::vector<SnapshotThreadDump> dumps(1 + snap.threads.size());
  dumps[0].dump.thread.tid = snap.tid;
  dumps[0].dump.thread.name = snap.thread_name;
  dumps[0].crashed = true;
  dumps[0].stack_bytes = snap.stack.size();
  WalkSnapshotStack(snap, snap, *modules, o.max_frames, &dumps[0].dump);
  if (!dumps[0].dump.error.empty()) problems.push_back(dumps[0].dump.error);
  for (size_t i = 0; i < snap.threads.size(); ++i) {
    const SnapshotOtherThread& t = snap.threads[i];
    SnapshotThreadDump& d = dumps[1 + i];
    d.dump.thread.tid = t.tid;
    d.dump.thread.name = t.name;
    d.not_captured = NotCapturedReason(t);
    if (d.not_captured.empty()) d.crash_signal = t.detail;
    d.stack_bytes = t.stack.size();
    // One not captured is said in the output: not the snapshot's fault.
    if (d.not_captured.empty()) WalkSnapshotStack(snap, t, *modules, o.max_frames, &d.dump);
  }
  std::unique_ptr<Symbolizer> symbolizer;
  if (o.names) symbolizer = std::make_unique<Symbolizer>();
  for (SnapshotThreadDump& d : dumps) d.dump.frames = NameFrames(d.dump.walk, *modules, symbolizer.get());
  if (o.json) {
    PrintSnapshotJson(o, snap, dumps, *modules);
  } else {
    PrintSnapshotText(o, snap, dumps, *modules);
  }
  for (const std::string& p : problems) {
    std::fprintf(stderr, "stackwalk-dump: %s: %s\n", o.snapshot.c_str(), p.c_str());
  }
  if (std::fflush(stdout) != 0) return 1;
  return problems.empty() ? 0 : 1;
}

int Run(const Options& o) {
  if (o.pid == getpid()) {
    std::fprintf(stderr, "stackwalk-dump: process %d is stackwalk-dump itself: a process cannot "
                         "trace its own threads (capture in-process with stackwalk_backtrace)\n",
                 static_cast<int>(o.pid));
    return 1;
  }
  // Everything that reads files or allocates much happens before any thread stops.
  auto modules_or = TargetModules::Read(o.pid);
  if (!modules_or.ok()) {
    std::string why(modules_or.status().message());
    // Reading another process's maps takes the same permission as tracing it.
    if (absl::IsPermissionDenied(modules_or.status())) {
      why = absl::StrCat(ExplainPtraceRefusal(o.pid), " (", why, ")");
    }
    std::fprintf(stderr, "stackwalk-dump: %s\n", why.c_str());
    return 1;
  }
  TargetModules& modules = **modules_or;
  RemoteMemory memory(o.pid, modules.readable());
  modules.set_memory(&memory);
  modules.LoadVdso(memory);  // its tables are in the target's memory only
  std::vector<TargetThread> threads;
  if (absl::Status s = ListThreads(o.pid, &threads); !s.ok()) {
    std::fprintf(stderr, "stackwalk-dump: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<ThreadDump> dumps;
  dumps.reserve(threads.size());
  int refused = 0;
  std::string refusal;
  for (const TargetThread& thread : threads) {
    ThreadDump d;
    d.thread = thread;
    const auto begin = std::chrono::steady_clock::now();
    {
      ThreadStop stop(o.pid, thread.tid);
      if (stop.status().ok()) {
        NativeRegs regs;
        absl::Status s = stop.ReadRegisters(&regs);
        if (s.ok()) {
          memory.Invalidate();  // the target ran since the last thread's reads
          d.walk = WalkTarget(regs, memory, modules, o.max_frames);
        } else {
          d.error = std::string(s.message());
        }
      } else {
        d.error = std::string(stop.status().message());
        d.exited = absl::IsNotFound(stop.status());
        if (absl::IsPermissionDenied(stop.status())) {
          ++refused;
          refusal = d.error;
        }
      }
    }  // resumed here
    d.stopped_us = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - begin).count();
    if (!d.error.empty()) d.stopped_us = 0;
    dumps.push_back(std::move(d));
  }
  if (refused > 0 && refused == static_cast<int>(dumps.size())) {
    std::fprintf(stderr, "stackwalk-dump: %s\n", refusal.c_str());
    return 1;
  }
  int64_t total_us = 0, max_us = 0;
  for (const ThreadDump& d : dumps) {
    total_us += d.stopped_us;
    max_us = std::max(max_us, d.stopped_us);
  }
  std::unique_ptr<Symbolizer> symbolizer;
  if (o.names) symbolizer = std::make_unique<Symbolizer>();
  for (ThreadDump& d : dumps) d.frames = NameFrames(d.walk, modules, symbolizer.get());
  const std::string name = ProcessName(o.pid);
  if (o.json) {
    PrintJson(o, name, dumps, total_us, max_us);
  } else {
    PrintText(o, name, dumps, total_us, max_us);
  }
  int failed = 0;
  for (const ThreadDump& d : dumps) {
    if (!d.error.empty() && !d.exited) ++failed;
  }
  if (failed > 0) {
    std::fprintf(stderr, "stackwalk-dump: %d of %zu threads could not be read\n", failed,
                 dumps.size());
  }
  if (std::fflush(stdout) != 0) return 1;
  return failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int status = ParseArgs(argc, argv, &o); status != 0) return status;
  return o.snapshot.empty() ? Run(o) : RunSnapshot(o);
}
