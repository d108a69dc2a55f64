// The leak report: the allocations still live, grouped by the stack that made them, largest
// total first, each stack symbolized (demangled names, file:line, inline frames).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <cstring>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "format/frame_json.h"
#include "format/json_string.h"
#include "leakcheck/closed_modules.h"
#include "leakcheck/frame_namer.h"
#include "leakcheck/reachability.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/recording.h"
#include "leakcheck/state.h"
#include "leakcheck/thread_registry.h"

namespace stackwalk::leakcheck {
namespace {

struct Leak {
  uint32_t stack_id;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t first_sequence = UINT64_MAX;
  uint32_t thread = 0;  // serial of the thread of the earliest allocation
  std::vector<SymbolizedFrame> frames;
};

struct ThreadLive {
  uint32_t serial = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
};

// A copy of the live allocations, in mmap'ed memory: the table's shard locks are held while it
// is taken, so nothing here may call malloc (whose hook would take them again).
class Snapshot {
 public:
  explicit Snapshot(AllocationTable& table) {
    // Room for more than are live now (other threads may still be allocating), and more again
    // if they were faster.
    for (uint64_t room = table.live_count() * 2 + 4096;; room *= 2) {
      void* mem = mmap(nullptr, room * sizeof(Allocation), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED) return;
      items_ = static_cast<Allocation*>(mem);
      capacity_ = room;
      size_ = 0;
      if (table.ForEach(room, [this](const Allocation& a) { items_[size_++] = a; })) return;
      munmap(items_, capacity_ * sizeof(Allocation));
      items_ = nullptr;
    }
  }
  ~Snapshot() {
    if (items_ != nullptr) munmap(items_, capacity_ * sizeof(Allocation));
  }
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  Allocation* begin() { return items_; }
  Allocation* end() { return items_ + size_; }
  size_t size() const { return size_; }

 private:
  Allocation* items_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t size_ = 0;
};

// The frames a report shows: from the program's call of the allocator outwards, without the
// hooks' own frames (the capture starts inside this library).
std::vector<void*> ProgramFrames(void* const* pcs, int n) {
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&WriteReport), &self);
  int first = 0;
  while (first < n) {
    Dl_info info{};
    if (dladdr(pcs[first], &info) == 0 || info.dli_fbase != self.dli_fbase) break;
    ++first;
  }
  return std::vector<void*>(pcs + first, pcs + n);
}

// One leak's frames as JSON objects (format/frame_json.h: docs/schema/frame.schema.json).
std::string FramesJson(const std::vector<SymbolizedFrame>& frames) {
  return internal::DumpJson(internal::FramesJsonArray(frames));
}

// "NAME (tid N)" for a thread serial.
struct ThreadLabel {
  std::string name;
  int tid = 0;
  uint64_t peak_bytes = 0;  // the most the thread's allocations held live at once
};
ThreadLabel LabelOf(const ThreadRegistry& threads, uint32_t serial) {
  ThreadRegistry::Thread t;
  if (!threads.Lookup(serial, &t)) return {"?", 0, 0};
  return {t.name[0] != '\0' ? t.name : "?", t.tid, t.peak_bytes};
}

// The frames of one stack, named: through the objects loaded now, except for PCs in an object
// unloaded after the allocation was made, which are looked up in its file.
std::vector<SymbolizedFrame> NameFrames(FrameNamer& symbolizer, const std::vector<void*>& pcs,
                                        uint64_t allocated_at, const ClosedModules* closed) {
  std::vector<SymbolizedFrame> live =
      pcs.empty() ? std::vector<SymbolizedFrame>()
                  : symbolizer.SymbolizeTrace(pcs.data(), static_cast<int>(pcs.size()));
  if (closed == nullptr) return live;
  std::vector<SymbolizedFrame> named;
  size_t next = 0;
  for (int i = 0; i < static_cast<int>(pcs.size()); ++i) {
    size_t group_end = next;
    while (group_end < live.size() && live[group_end].index == i) ++group_end;
    const uintptr_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
    LoadedObject object;
    if (closed->Find(pc, allocated_at, &object)) {
      // Every frame here is a return address: looked up one byte back, as the symbolizer does.
      std::vector<SymbolizedFrame> found;
      if (symbolizer.SymbolizeFile(object.path, pc - object.bias - 1, &found) && !found.empty()) {
        for (SymbolizedFrame f : found) {
          f.pc = pc;
          f.index = i;
          f.module = object.path;
          f.module_offset = pc - object.bias;
          named.push_back(f);
        }
        next = group_end;
        continue;
      }
    }
    named.insert(named.end(), live.begin() + next, live.begin() + group_end);
    next = group_end;
  }
  return named;
}

// The exit report runs inside exit(), from one of its exit handlers: the blocks of glibc's list
// of exit handlers (__new_exitfn adds one per 32 atexit/__cxa_atexit registrations, which a C++
// program with many static destructors reaches) are still allocated then, and exit() frees them
// once the handlers have run. Not the program's leaks (valgrind, checking later, never sees them).
bool FreedByExitAfterTheReport(const std::vector<SymbolizedFrame>& frames) {
  return !frames.empty() && frames[0].function == "__new_exitfn";
}

// Whether a leak is shown under the library filters: with a frame in a selected object (when
// some are selected) and none in an ignored one.
bool PassesFilters(const Options& options, const std::vector<SymbolizedFrame>& frames) {
  bool selected = options.libraries[0] == '\0';
  for (const SymbolizedFrame& f : frames) {
    if (f.module.empty()) continue;
    if (MatchesAnyPattern(options.ignore_libraries, f.module.c_str())) return false;
    if (!selected && MatchesAnyPattern(options.libraries, f.module.c_str())) selected = true;
  }
  return selected;
}

std::string FormatBytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
  return text;
}

std::string FormatCount(uint64_t count) {
  char text[40];
  std::snprintf(text, sizeof(text), "%" PRIu64 " allocation%s", count, count == 1 ? "" : "s");
  return text;
}

}  // namespace

SpinLock& ReportLock() {
  static SpinLock lock;  // constant-initialized
  return lock;
}

ReportTotals WriteReport(State& state, const char* occasion) {
  // Where the reachability scan starts on this thread's stack: above this frame's callees, which
  // hold the scan's own copies of block addresses.
  const int stack_mark = 0;
  static int reports_written = 0;
  SpinLockHolder hold(ReportLock());

  const bool at_exit = std::strcmp(occasion, "exit") == 0;
  // The symbolizer is loaded only when there are stacks to name.
  std::unique_ptr<FrameNamer> symbolizer;
  const ClosedModules* closed = state.closed.load(std::memory_order_acquire);
  std::vector<std::vector<SymbolizedFrame>> names;  // by stack id
  std::vector<Leak> leaks;
  std::vector<ThreadLive> threads;
  uint64_t reachable_bytes = 0, reachable_count = 0;
  {
    Snapshot live(state.allocations);
    std::vector<uint8_t> reachable;
    if (state.options.unreachable_only) {
      std::sort(live.begin(), live.end(),
                [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
      reachable = MarkReachable(live.begin(), live.size(), state.threads, KnownThreadSerial(),
                                reinterpret_cast<uintptr_t>(&stack_mark));
    }
    std::vector<Leak> by_stack(state.stacks.size() + 1);
    // Every stack is named once, before the tallies: at exit some are not the program's. The
    // earliest block of a stack decides what an unloaded object in it was.
    std::vector<uint64_t> earliest(by_stack.size(), UINT64_MAX);
    for (size_t index = 0; index < live.size(); ++index) {
      const Allocation& a = live.begin()[index];
      if (a.stack_id >= earliest.size()) earliest.resize(a.stack_id + 1, UINT64_MAX);
      earliest[a.stack_id] = std::min(earliest[a.stack_id], a.sequence);
    }
    names.resize(earliest.size());
    std::vector<bool> excluded(earliest.size());
    for (uint32_t id = 0; id < earliest.size(); ++id) {
      if (earliest[id] == UINT64_MAX) continue;
      if (symbolizer == nullptr) symbolizer = std::make_unique<FrameNamer>();
      void* const* pcs = nullptr;
      const int n = state.stacks.Frames(id, &pcs);
      names[id] = NameFrames(*symbolizer, ProgramFrames(pcs, n), earliest[id], closed);
      excluded[id] = at_exit && FreedByExitAfterTheReport(names[id]);
    }
    auto add_to_group = [&by_stack](const Allocation& a) {
      if (a.stack_id >= by_stack.size()) by_stack.resize(a.stack_id + 1);
      Leak& leak = by_stack[a.stack_id];
      leak.stack_id = a.stack_id;
      leak.bytes += a.size;
      ++leak.count;
      if (a.sequence < leak.first_sequence) {
        leak.first_sequence = a.sequence;
        leak.thread = static_cast<uint32_t>(a.thread);
      }
    };
    for (size_t index = 0; index < live.size(); ++index) {
      const Allocation& a = live.begin()[index];
      if (excluded[a.stack_id]) continue;
      add_to_group(a);
      const uint32_t serial = static_cast<uint32_t>(a.thread);
      if (serial >= threads.size()) threads.resize(serial + 1);
      threads[serial].serial = serial;
      threads[serial].bytes += a.size;
      ++threads[serial].count;
    }
    if (!reachable.empty()) {  // a second pass: the leak groups of unreachable blocks only
      for (Leak& leak : by_stack) leak = Leak();
      for (size_t index = 0; index < live.size(); ++index) {
        const Allocation& a = live.begin()[index];
        if (excluded[a.stack_id]) continue;
        if (reachable[index]) {
          reachable_bytes += a.size;
          ++reachable_count;
          continue;
        }
        add_to_group(a);
      }
    }
    for (Leak& leak : by_stack) {
      if (leak.count > 0) leaks.push_back(std::move(leak));
    }
  }
  threads.erase(std::remove_if(threads.begin(), threads.end(),
                               [](const ThreadLive& t) { return t.count == 0; }),
                threads.end());
  std::sort(threads.begin(), threads.end(), [](const ThreadLive& a, const ThreadLive& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.serial < b.serial;
  });

  // Keep the leaks the library filters let through.
  for (Leak& leak : leaks) leak.frames = std::move(names[leak.stack_id]);
  leaks.erase(std::remove_if(leaks.begin(), leaks.end(),
                             [&](const Leak& leak) { return !PassesFilters(state.options, leak.frames); }),
              leaks.end());
  std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.first_sequence < b.first_sequence;
  });

  ReportTotals totals;
  for (const Leak& leak : leaks) {
    totals.bytes += leak.bytes;
    totals.allocations += leak.count;
  }
  const uint64_t live = state.allocations.live_count();
  const uint64_t own = state.allocations.table_bytes() + state.stacks.bytes();

  // Which process this is: several checked processes may report to one stderr.
  const std::string pid = std::to_string(getpid());
  std::string program = "?";
  char exe[4096];
  if (const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe)); n > 0) program.assign(exe, n);

  std::string text;
  if (state.options.json) {
    using internal::JsonString;
    text = "{\"occasion\":" + JsonString(occasion) + ",\"pid\":" + pid +
           ",\"program\":" + JsonString(program) + ",\"summary\":{\"bytes\":" +
           std::to_string(totals.bytes) + ",\"allocations\":" + std::to_string(totals.allocations) +
           ",\"peak_bytes\":" + std::to_string(state.live_bytes.peak.load()) +
           ",\"own_bytes\":" + std::to_string(own);
    if (state.options.unreachable_only) {
      text += ",\"reachable_bytes\":" + std::to_string(reachable_bytes) +
              ",\"reachable_allocations\":" + std::to_string(reachable_count);
    }
    text += "},\"threads\":[";
    for (size_t i = 0; i < threads.size(); ++i) {
      ThreadLabel label = LabelOf(state.threads, threads[i].serial);
      text += std::string(i ? "," : "") + "{\"thread\":" + JsonString(label.name) +
              ",\"tid\":" + std::to_string(label.tid) + ",\"bytes\":" +
              std::to_string(threads[i].bytes) + ",\"allocations\":" +
              std::to_string(threads[i].count) + ",\"peak_bytes\":" +
              std::to_string(label.peak_bytes) + "}";
    }
    text += "],\"leaks\":[";
    for (size_t i = 0; i < leaks.size(); ++i) {
      ThreadLabel label = LabelOf(state.threads, leaks[i].thread);
      text += std::string(i ? "," : "") + "{\"bytes\":" + std::to_string(leaks[i].bytes) +
              ",\"allocations\":" + std::to_string(leaks[i].count) +
              ",\"thread\":" + JsonString(label.name) + ",\"tid\":" + std::to_string(label.tid) +
              ",\"frames\":" + FramesJson(leaks[i].frames) + "}";
    }
    text += "]}\n";
  } else {
    const char* what = at_exit ? "leaks at exit" : "live allocations";
    text += "==stackwalk-leakcheck== " + std::string(what) + " (report " +
            std::to_string(reports_written + 1) + (at_exit ? "" : std::string(", on ") + occasion) +
            ")\n";
    text += "==stackwalk-leakcheck== process " + pid + " (" + program + ")\n";
    text += "==stackwalk-leakcheck== peak " + FormatBytes(state.live_bytes.peak.load()) +
            " live; " + std::to_string(state.stacks.size()) + " distinct allocation stacks\n";
    // What the checker itself holds: its tables, and per live allocation.
    text += "==stackwalk-leakcheck== own memory " + FormatBytes(own) + " (allocation table " +
            FormatBytes(state.allocations.table_bytes()) + ", stacks " +
            FormatBytes(state.stacks.bytes()) + ")";
    if (live > 0) text += ", " + std::to_string(own / live) + " per live allocation";
    text += "\n";
    if (symbolizer != nullptr && !symbolizer->error().empty()) {
      text += "==stackwalk-leakcheck== frames are not named: " + symbolizer->error() + "\n";
    }
    if (state.options.unreachable_only) {
      text += "==stackwalk-leakcheck== " + FormatBytes(reachable_bytes) + " in " +
              FormatCount(reachable_count) + " still reachable (not shown)\n";
    }
    constexpr size_t kThreadLines = 16;
    for (size_t i = 0; i < threads.size() && i < kThreadLines; ++i) {
      ThreadLabel label = LabelOf(state.threads, threads[i].serial);
      text += "==stackwalk-leakcheck== thread " + label.name + " (tid " +
              std::to_string(label.tid) + "): " + FormatBytes(threads[i].bytes) + " live in " +
              FormatCount(threads[i].count) + ", peak " + FormatBytes(label.peak_bytes) + "\n";
    }
    if (threads.size() > kThreadLines) {
      text += "==stackwalk-leakcheck== ... and " + std::to_string(threads.size() - kThreadLines) +
              " more threads\n";
    }
    for (const Leak& leak : leaks) {
      ThreadLabel label = LabelOf(state.threads, leak.thread);
      text += "\nLeak of " + FormatBytes(leak.bytes) + " in " + FormatCount(leak.count) +
              " from thread " + label.name + " (tid " + std::to_string(label.tid) +
              "), allocated at:\n";
      if (leak.frames.empty()) {
        text += "    (no stack)\n";
        continue;
      }
      std::string lines = symbolizer->Format(leak.frames);
      for (size_t start = 0; start < lines.size();) {
        size_t end = lines.find('\n', start);
        if (end == std::string::npos) end = lines.size();
        text += "    " + lines.substr(start, end - start) + "\n";
        start = end + 1;
      }
    }
    text += "\nSUMMARY: stackwalk-leakcheck: " + FormatBytes(totals.bytes) +
            (at_exit ? " leaked in " : " live in ") + FormatCount(totals.allocations) + ".\n";
  }

  const int stderr_fd = StderrForReports();
  int fd = stderr_fd;
  // "%p" in the path becomes the process id: a program's children report to files of their own.
  std::string path = state.options.output;
  for (size_t at; (at = path.find("%p")) != std::string::npos;) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  if (!path.empty()) {
    // The process's first report starts the file; later ones (signals, requests) follow it.
    const int mode = reports_written == 0 ? O_TRUNC : O_APPEND;
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
    if (fd < 0) {
      const std::string complaint =
          "stackwalk-leakcheck: cannot write " + path + "; the report follows here\n";
      fd = stderr_fd;
      if (write(fd, complaint.data(), complaint.size()) < 0) {
        // Nowhere to say it; the report is tried all the same.
      }
    }
  }
  for (size_t done = 0; done < text.size();) {
    ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) break;
    done += static_cast<size_t>(wrote);
  }
  if (fd != stderr_fd) close(fd);
  ++reports_written;
  return totals;
}

}  // namespace stackwalk::leakcheck
