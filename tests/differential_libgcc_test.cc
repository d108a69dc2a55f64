// Differential test: every allocation of a libstdc++-heavy workload (containers, regex,
// iostreams, std::function, threads) is unwound twice at the same point, by stackwalk's
// .eh_frame unwinder and by libgcc's _Unwind_Backtrace, and the two traces must agree frame by
// frame. Built -O2 -fomit-frame-pointer, so frame pointers cannot help either side.
#include <gtest/gtest.h>
#include <unwind.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <map>
#include <new>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "stackwalk/stackwalk.h"

namespace {

constexpr int kMax = 128;
constexpr int kDistinctCapacity = 1 << 16;

struct Stats {
  std::atomic<long> compared{0};
  std::atomic<long> mismatched{0};
  std::atomic<long> distinct{0};
  std::atomic<bool> recording{false};
  std::atomic<uint64_t> seen[kDistinctCapacity];  // open-addressed set of trace hashes
  char first_mismatch[4096];
  std::atomic<bool> has_mismatch{false};
};
Stats g_stats;
thread_local bool t_in_hook = false;

struct LibgccTrace {
  void* pcs[kMax];
  int n = 0;
};

_Unwind_Reason_Code Collect(_Unwind_Context* ctx, void* arg) {
  auto* t = static_cast<LibgccTrace*>(arg);
  if (t->n == kMax) return _URC_END_OF_STACK;
  t->pcs[t->n++] = reinterpret_cast<void*>(_Unwind_GetIP(ctx));
  return _URC_NO_REASON;
}

void NoteDistinct(void* const* pcs, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; ++i) h = (h ^ reinterpret_cast<uintptr_t>(pcs[i])) * 1099511628211ull;
  if (h == 0) h = 1;
  for (uint64_t i = 0; i < kDistinctCapacity; ++i) {
    std::atomic<uint64_t>& slot = g_stats.seen[(h + i) % kDistinctCapacity];
    uint64_t cur = slot.load();
    if (cur == h) return;
    if (cur == 0 && slot.compare_exchange_strong(cur, h)) {
      g_stats.distinct.fetch_add(1);
      return;
    }
    if (cur == h) return;
  }
}

// Both unwinders from this one frame. pcs[0] of each is a different spot in this function; from
// index 1 on both must list the same return addresses.
__attribute__((noinline)) void CompareHere() {
  void* ours[kMax];
  int n = stackwalk_backtrace(ours, kMax, STACKWALK_EHFRAME);
  LibgccTrace theirs;
  _Unwind_Backtrace(Collect, &theirs);
  __asm__ volatile("" ::: "memory");
  // libgcc reports the outermost frame's undefined return address as a last IP of 0, which
  // glibc's backtrace() drops too.
  if (theirs.n > 1 && theirs.pcs[theirs.n - 1] == nullptr) --theirs.n;
  g_stats.compared.fetch_add(1);
  bool same = n == theirs.n && n > 1;
  for (int i = 1; same && i < n; ++i) same = ours[i] == theirs.pcs[i];
  if (same) {
    NoteDistinct(ours + 1, n - 1);
    return;
  }
  g_stats.mismatched.fetch_add(1);
  bool expected = false;
  if (g_stats.has_mismatch.compare_exchange_strong(expected, true)) {
    int len = std::snprintf(g_stats.first_mismatch, sizeof(g_stats.first_mismatch),
                            "stackwalk %d frames, libgcc %d frames\n", n, theirs.n);
    for (int i = 0; i < kMax && (i < n || i < theirs.n) && len < 3900; ++i) {
      len += std::snprintf(g_stats.first_mismatch + len, sizeof(g_stats.first_mismatch) - len,
                           "%3d %18p %18p\n", i, i < n ? ours[i] : nullptr,
                           i < theirs.n ? theirs.pcs[i] : nullptr);
    }
  }
}

void* Allocate(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  if (g_stats.recording.load(std::memory_order_relaxed) && !t_in_hook) {
    t_in_hook = true;
    CompareHere();
    t_in_hook = false;
  }
  return p;
}

}  // namespace

void* operator new(size_t size) { return Allocate(size); }
void* operator new[](size_t size) { return Allocate(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace {

__attribute__((noinline)) size_t Containers(int scale) {
  std::map<int, std::string> m;
  std::unordered_map<std::string, std::vector<int>> u;
  for (int i = 0; i < scale; ++i) {
    m[i * 7 % 1013] = std::to_string(i) + "-value-long-enough-to-allocate";
    u[std::to_string(i % 97)].push_back(i);
  }
  std::vector<std::function<int(int)>> fs;
  for (int i = 0; i < 64; ++i) {
    std::string big(64, 'x');
    fs.emplace_back([big, i](int x) { return static_cast<int>(big.size()) + i + x; });
  }
  size_t total = m.size() + u.size();
  for (auto& f : fs) total += f(1);
  return total;
}

__attribute__((noinline)) size_t Regexes() {
  size_t found = 0;
  std::regex words("([a-z]+)([0-9]*)");
  std::regex dates("(\\d{4})-(\\d{2})-(\\d{2})");
  const char* texts[] = {"alpha12 beta gamma345", "2026-11-22 and 1999-01-01", "x y z w9"};
  for (const char* t : texts) {
    std::string s(t);
    for (std::sregex_iterator it(s.begin(), s.end(), words), end; it != end; ++it) ++found;
    std::smatch m;
    if (std::regex_search(s, m, dates)) found += m.size();
  }
  return found;
}

__attribute__((noinline)) size_t Streams(int scale) {
  std::ostringstream out;
  for (int i = 0; i < scale; ++i) {
    out << std::setw(8) << std::hex << i << ' ' << std::fixed << std::setprecision(3) << i / 7.0
        << '\n';
  }
  std::istringstream in(out.str());
  std::string word;
  size_t words = 0;
  while (in >> word) ++words;
  return words;
}

__attribute__((noinline)) size_t Recurse(int depth) {
  if (depth == 0) return Containers(50) + Streams(20);
  std::vector<std::string> keep(depth, std::string(40, 'r'));
  size_t r = Recurse(depth - 1);
  __asm__ volatile("" ::: "memory");
  return r + keep.size();
}

size_t MixB(int depth, unsigned pattern);

// Two functions chosen by the bits of `pattern`: 2^depth distinct call paths to the workload.
__attribute__((noinline)) size_t MixA(int depth, unsigned pattern) {
  std::string tag(24 + depth, 'a');
  size_t r = depth == 0 ? Containers(8) + Streams(2)
                        : ((pattern & 1) ? MixA : MixB)(depth - 1, pattern >> 1);
  __asm__ volatile("" ::: "memory");
  return r + tag.size();
}

__attribute__((noinline)) size_t MixB(int depth, unsigned pattern) {
  std::vector<int> tag(depth + 3, 1);
  size_t r = depth == 0 ? Containers(8) : ((pattern & 1) ? MixA : MixB)(depth - 1, pattern >> 1);
  __asm__ volatile("" ::: "memory");
  return r + tag.size();
}

TEST(DifferentialLibgcc, EveryAllocationStackAgrees) {
  g_stats.recording = true;
  size_t sink = Containers(2000) + Regexes() + Streams(500);
  for (int d = 1; d < 12; ++d) sink += Recurse(d);
  for (unsigned p = 0; p < 512; ++p) sink += MixA(9, p);
  std::thread worker([&sink] { sink += Containers(300) + Regexes(); });
  worker.join();
  g_stats.recording = false;
  std::printf("differential vs libgcc: %ld stacks compared, %ld distinct, %ld mismatched (sink %zu)\n",
              g_stats.compared.load(), g_stats.distinct.load(), g_stats.mismatched.load(), sink);
  EXPECT_GT(g_stats.compared.load(), 5000);
  EXPECT_GT(g_stats.distinct.load(), 1000);
  EXPECT_EQ(g_stats.mismatched.load(), 0) << g_stats.first_mismatch;
}

}  // namespace
