#include "leakcheck/report_collect.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "leakcheck/scan/own_mappings.h"

namespace stackwalk::leakcheck {

LiveSnapshot::LiveSnapshot(AllocationTable& table) {
  // Room for more than are live now (other threads may still be allocating), and more again
  // if they were faster.
  for (uint64_t room = table.live_count() * 2 + 4096;; room *= 2) {
    // Own memory (scan/own_mappings.h): a copy of every block's address must not be a root.
    void* mem = OwnMap(room * sizeof(Allocation));
    if (mem == nullptr) return;
    items_ = static_cast<Allocation*>(mem);
    capacity_ = room;
    size_ = 0;
    if (table.ForEach(room, [this](const Allocation& a) { items_[size_++] = a; })) return;
    OwnUnmap(items_, capacity_ * sizeof(Allocation));
    items_ = nullptr;
    size_ = 0;
  }
}

LiveSnapshot::~LiveSnapshot() {
  if (items_ != nullptr) OwnUnmap(items_, capacity_ * sizeof(Allocation));
}

std::vector<uint64_t> EarliestBlocks(const Allocation* blocks, size_t n, const StackTable& stacks) {
  std::vector<uint64_t> out(stacks.size() + 1, UINT64_MAX);
  for (size_t i = 0; i < n; ++i) {
    const Allocation& a = blocks[i];
    if (a.stack_id >= out.size()) out.resize(a.stack_id + 1, UINT64_MAX);
    out[a.stack_id] = std::min(out[a.stack_id], a.sequence);
  }
  return out;
}

std::vector<NamedStack> CollectStacks(const std::vector<uint64_t>& earliest,
                                      const StackTable& stacks) {
  std::vector<NamedStack> out(earliest.size());
  for (uint32_t id = 0; id < out.size(); ++id) {
    out[id].earliest = earliest[id];
    if (earliest[id] == UINT64_MAX) continue;
    void* pcs[StackTable::kMaxFrames];
    const int count = stacks.Frames(id, pcs);
    out[id].pcs = ProgramFrames(pcs, count);
  }
  return out;
}

void CollectHeader(State& state, const char* occasion, int number, LeakReport* out) {
  LeakReport& report = *out;
  report.occasion = occasion;
  report.at_exit = std::strcmp(occasion, "exit") == 0;
  report.number = number;
  report.pid = static_cast<int>(getpid());
  char exe[4096];
  if (const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe)); n > 0) {
    report.program.assign(exe, static_cast<size_t>(n));
  }
  report.sample_bytes = state.options.sample_bytes;
  ReportSummary& s = report.summary;
  s.peak_bytes = state.live_bytes.peak.load();
  s.live_allocations = state.allocations.live_count();
  s.distinct_stacks = state.stacks.size();
  s.table_bytes = state.allocations.table_bytes();
  s.stack_bytes = state.stacks.bytes();
  s.untracked = state.allocations.untracked();
}

void LabelThreads(const ThreadRegistry& threads, LeakReport* report) {
  ThreadRegistry::Thread t;
  auto label = [&](uint32_t serial, std::string* name, int* tid) {
    if (!threads.Lookup(serial, &t)) return false;
    *name = t.name[0] != '\0' ? t.name : "?";
    *tid = t.tid;
    return true;
  };
  for (ThreadEntry& thread : report->threads) {
    if (label(thread.serial, &thread.name, &thread.tid)) thread.peak_bytes = t.peak_bytes;
  }
  for (ReportEntry& entry : report->entries) label(entry.thread, &entry.thread_name, &entry.tid);
}

}  // namespace stackwalk::leakcheck
