// The leak report: the allocations still live, grouped by the stack that made them, largest
// total first, each stack symbolized (demangled names, file:line, inline frames).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "format/json_string.h"
#include "leakcheck/state.h"
#include "stackwalk/symbolizer.h"

namespace stackwalk::leakcheck {
namespace {

struct Leak {
  uint32_t stack_id;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t first_sequence = UINT64_MAX;
  int32_t thread = 0;  // of the earliest allocation
};

// A copy of the live allocations, in mmap'ed memory: the table's shard locks are held while it
// is taken, so nothing here may call malloc (whose hook would take them again).
class Snapshot {
 public:
  explicit Snapshot(AllocationTable& table) {
    capacity_ = table.live_count() * 2 + 4096;  // other threads may still be allocating
    void* mem = mmap(nullptr, capacity_ * sizeof(Allocation), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    items_ = static_cast<Allocation*>(mem);
    table.ForEach([this](const Allocation& a) {
      if (size_ < capacity_) items_[size_++] = a;
    });
  }
  ~Snapshot() {
    if (items_ != nullptr) munmap(items_, capacity_ * sizeof(Allocation));
  }
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  const Allocation* begin() const { return items_; }
  const Allocation* end() const { return items_ + size_; }

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

// One leak's frames as JSON objects.
std::string FramesJson(const std::vector<SymbolizedFrame>& frames) {
  using internal::JsonString;
  std::string out = "[";
  char number[40];
  for (size_t i = 0; i < frames.size(); ++i) {
    const SymbolizedFrame& f = frames[i];
    std::snprintf(number, sizeof(number), "0x%" PRIx64, f.pc);
    out += std::string(i ? "," : "") + "{\"pc\":\"" + number + "\",\"module\":" + JsonString(f.module);
    std::snprintf(number, sizeof(number), "0x%" PRIx64, f.module_offset);
    out += std::string(",\"offset\":\"") + number + "\",\"function\":" + JsonString(f.function) +
           ",\"file\":" + JsonString(f.file) + ",\"line\":" + std::to_string(f.line) +
           ",\"column\":" + std::to_string(f.column) +
           ",\"inlined\":" + (f.inlined ? "true" : "false") + "}";
  }
  return out + "]";
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

uint64_t WriteReport(State& state) {
  static SpinLock report_lock;
  SpinLockHolder hold(report_lock);

  std::vector<Leak> leaks;
  {
    Snapshot live(state.allocations);
    std::vector<Leak> by_stack(state.stacks.size() + 1);
    for (const Allocation& a : live) {
      if (a.stack_id >= by_stack.size()) by_stack.resize(a.stack_id + 1);
      Leak& leak = by_stack[a.stack_id];
      leak.stack_id = a.stack_id;
      leak.bytes += a.size;
      ++leak.count;
      if (a.sequence < leak.first_sequence) {
        leak.first_sequence = a.sequence;
        leak.thread = a.thread;
      }
    }
    for (const Leak& leak : by_stack) {
      if (leak.count > 0) leaks.push_back(leak);
    }
  }
  std::sort(leaks.begin(), leaks.end(), [](const Leak& a, const Leak& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return a.first_sequence < b.first_sequence;
  });

  uint64_t total_bytes = 0, total_count = 0;
  for (const Leak& leak : leaks) {
    total_bytes += leak.bytes;
    total_count += leak.count;
  }

  Symbolizer symbolizer;
  auto symbolize = [&](const Leak& leak) {
    void* const* pcs = nullptr;
    int n = state.stacks.Frames(leak.stack_id, &pcs);
    std::vector<void*> frames = ProgramFrames(pcs, n);
    return frames.empty() ? std::vector<SymbolizedFrame>()
                          : symbolizer.SymbolizeTrace(frames.data(), static_cast<int>(frames.size()));
  };
  std::string text;
  if (state.options.json) {
    text = "{\"summary\":{\"bytes\":" + std::to_string(total_bytes) +
           ",\"allocations\":" + std::to_string(total_count) +
           ",\"peak_bytes\":" + std::to_string(state.allocations.peak_bytes()) + "},\"leaks\":[";
    for (size_t i = 0; i < leaks.size(); ++i) {
      text += std::string(i ? "," : "") + "{\"bytes\":" + std::to_string(leaks[i].bytes) +
              ",\"allocations\":" + std::to_string(leaks[i].count) + ",\"thread\":\"" +
              std::to_string(leaks[i].thread) + "\",\"frames\":" + FramesJson(symbolize(leaks[i])) +
              "}";
    }
    text += "]}\n";
  } else {
    text += "==stackwalk-leakcheck== peak " + FormatBytes(state.allocations.peak_bytes()) +
            " live; " + std::to_string(state.stacks.size()) + " distinct allocation stacks\n";
    // What the checker itself holds: its tables, and per live allocation.
    const uint64_t live = state.allocations.live_count();
    const uint64_t own = state.allocations.table_bytes() + state.stacks.bytes();
    text += "==stackwalk-leakcheck== own memory " + FormatBytes(own) + " (allocation table " +
            FormatBytes(state.allocations.table_bytes()) + ", stacks " +
            FormatBytes(state.stacks.bytes()) + ")";
    if (live > 0) text += ", " + std::to_string(own / live) + " per live allocation";
    text += "\n";
    for (const Leak& leak : leaks) {
      text += "\nLeak of " + FormatBytes(leak.bytes) + " in " + FormatCount(leak.count) +
              " from thread " + std::to_string(leak.thread) + ", allocated at:\n";
      std::vector<SymbolizedFrame> named = symbolize(leak);
      if (named.empty()) {
        text += "    (no stack)\n";
        continue;
      }
      std::string lines = FormatFrames(named);
      for (size_t start = 0; start < lines.size();) {
        size_t end = lines.find('\n', start);
        if (end == std::string::npos) end = lines.size();
        text += "    " + lines.substr(start, end - start) + "\n";
        start = end + 1;
      }
    }
    text += "\nSUMMARY: stackwalk-leakcheck: " + FormatBytes(total_bytes) + " leaked in " +
            FormatCount(total_count) + ".\n";
  }

  int fd = 2;
  // "%p" in the path becomes the process id: a program's children report to files of their own.
  std::string path = state.options.output;
  for (size_t at; (at = path.find("%p")) != std::string::npos;) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  if (!path.empty()) {
    fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "stackwalk-leakcheck: cannot write %s; the report follows here\n",
                   path.c_str());
      fd = 2;
    }
  }
  for (size_t done = 0; done < text.size();) {
    ssize_t wrote = write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) break;
    done += static_cast<size_t>(wrote);
  }
  if (fd != 2) close(fd);
  return total_count;
}

}  // namespace stackwalk::leakcheck
