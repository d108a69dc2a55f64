// Differential test: every allocation of a libstdc++-heavy workload (containers, regex,
// iostreams, std::function, threads) is unwound at the same point by stackwalk's .eh_frame
// unwinder and by the peers: libgcc's _Unwind_Backtrace (linked), nongnu libunwind's
// unw_backtrace and LLVM libunwind's _Unwind_Backtrace (each loaded with dlopen(RTLD_LOCAL),
// since they define the same symbols). The traces must agree frame by frame. Built -O2
// -fomit-frame-pointer, so frame pointers cannot help anyone.
#include <dlfcn.h>
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

#include "frame_names.h"
#include "stackwalk/stackwalk.h"
#if defined(__arm__)
#include "exidx/exidx_table.h"
#include "exidx/native_exidx_locator.h"
#endif

// stackwalk's table method: .eh_frame, or the EHABI index on 32-bit ARM, where libgcc's
// _Unwind_Backtrace is EHABI-based too.

using stackwalk::testing::kTableMethod;

namespace {

constexpr int kMax = 128;
constexpr int kDistinctCapacity = 1 << 16;

enum Peer { kLibgcc, kNongnu, kLlvm, kPeers };
const char* const kPeerNames[kPeers] = {"libgcc", "nongnu libunwind", "LLVM libunwind"};

struct Stats {
  std::atomic<long> compared{0};
  std::atomic<long> mismatched{0};
  std::atomic<long> peer_compared[kPeers] = {};
  std::atomic<long> peer_mismatched[kPeers] = {};
  // libgcc's ARM __gnu_Unwind_Backtrace looks a frame's index entry up before reporting it and
  // stops without reporting it when the entry is EXIDX_CANTUNWIND (_start, clone): stackwalk
  // reports that outermost frame, as every unwinder does on x86_64 and aarch64.
  std::atomic<long> cantunwind_tail{0};
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

using UnwBacktraceFn = int (*)(void**, int);
using UnwindBacktraceFn = _Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void*);
using UnwindGetIpFn = uintptr_t (*)(_Unwind_Context*);
UnwBacktraceFn g_nongnu_backtrace;
UnwindBacktraceFn g_llvm_backtrace;
UnwindGetIpFn g_llvm_get_ip;

void LoadPeers() {
  if (void* h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL)) {
    g_nongnu_backtrace = reinterpret_cast<UnwBacktraceFn>(dlsym(h, "unw_backtrace"));
  }
  if (void* h = dlopen("libunwind.so.1", RTLD_NOW | RTLD_LOCAL)) {
    g_llvm_backtrace = reinterpret_cast<UnwindBacktraceFn>(dlsym(h, "_Unwind_Backtrace"));
    g_llvm_get_ip = reinterpret_cast<UnwindGetIpFn>(dlsym(h, "_Unwind_GetIP"));
  }
}

_Unwind_Reason_Code CollectLlvm(_Unwind_Context* ctx, void* arg) {
  auto* t = static_cast<LibgccTrace*>(arg);
  if (t->n == kMax) return _URC_END_OF_STACK;
  t->pcs[t->n++] = reinterpret_cast<void*>(g_llvm_get_ip(ctx));
  return _URC_NO_REASON;
}

// Compares return addresses from index 1 on (index 0 of each trace is its own call site in
// CompareHere) and keeps the first disagreement for the report.
// Whether the return address `pc` lies in a function whose EHABI entry is EXIDX_CANTUNWIND.
bool InCantUnwindFunction(void* pc) {
#if defined(__arm__)
  using namespace stackwalk::internal;
  uint64_t lookup = (reinterpret_cast<uintptr_t>(pc) & ~uintptr_t{1}) - 2;
  ExidxSection section;
  uint64_t entry, start, personality;
  EhabiOpcodes ops;
  return NativeExidxLocator(nullptr).FindExidx(lookup, &section) &&
         FindExidxEntry(section, lookup, &entry, &start) == ExidxError::kOk &&
         DecodeExidxEntry(section, entry, &personality, &ops) == ExidxError::kCantUnwind;
#else
  (void)pc;
  return false;
#endif
}

bool SameTrace(Peer peer, void* const* ours, int n, LibgccTrace& theirs) {
  // The outermost frame's undefined return address shows up as a last IP of 0 in the
  // _Unwind_Backtrace peers, which glibc's backtrace() drops too.
  if (theirs.n > 1 && theirs.pcs[theirs.n - 1] == nullptr) --theirs.n;
  if (peer == kLibgcc && n == theirs.n + 1 && InCantUnwindFunction(ours[n - 1])) {
    g_stats.cantunwind_tail.fetch_add(1);
    --n;  // compare the rest; the difference is libgcc's, explained above
  }
  bool same = n == theirs.n && n > 1;
  for (int i = 1; same && i < n; ++i) same = ours[i] == theirs.pcs[i];
  g_stats.peer_compared[peer].fetch_add(1);
  if (same) return true;
  g_stats.peer_mismatched[peer].fetch_add(1);
  bool expected = false;
  if (g_stats.has_mismatch.compare_exchange_strong(expected, true)) {
    int len = std::snprintf(g_stats.first_mismatch, sizeof(g_stats.first_mismatch),
                            "stackwalk %d frames, %s %d frames\n", n, kPeerNames[peer], theirs.n);
    for (int i = 0; i < kMax && (i < n || i < theirs.n) && len < 3900; ++i) {
      len += std::snprintf(g_stats.first_mismatch + len, sizeof(g_stats.first_mismatch) - len,
                           "%3d %18p %18p\n", i, i < n ? ours[i] : nullptr,
                           i < theirs.n ? theirs.pcs[i] : nullptr);
    }
  }
  return false;
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

// Every unwinder from this one frame. pcs[0] of each is a different spot in this function; from
// index 1 on all must list the same return addresses.
__attribute__((noinline)) void CompareHere() {
  void* ours[kMax];
  int n = stackwalk_backtrace(ours, kMax, kTableMethod);
  LibgccTrace libgcc, nongnu, llvm;
  _Unwind_Backtrace(Collect, &libgcc);
  if (g_nongnu_backtrace != nullptr) nongnu.n = g_nongnu_backtrace(nongnu.pcs, kMax);
  if (g_llvm_backtrace != nullptr) g_llvm_backtrace(CollectLlvm, &llvm);
  __asm__ volatile("" ::: "memory");
  g_stats.compared.fetch_add(1);
  bool same = SameTrace(kLibgcc, ours, n, libgcc);
  if (g_nongnu_backtrace != nullptr) same &= SameTrace(kNongnu, ours, n, nongnu);
  if (g_llvm_backtrace != nullptr) same &= SameTrace(kLlvm, ours, n, llvm);
  if (same) {
    NoteDistinct(ours + 1, n - 1);
  } else {
    g_stats.mismatched.fetch_add(1);
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

TEST(Differential, EveryAllocationStackAgreesWithEveryPeer) {
  LoadPeers();
  g_stats.recording = true;
  size_t sink = Containers(2000) + Regexes() + Streams(500);
  for (int d = 1; d < 12; ++d) sink += Recurse(d);
  for (unsigned p = 0; p < 512; ++p) sink += MixA(9, p);
  std::thread worker([&sink] { sink += Containers(300) + Regexes(); });
  worker.join();
  g_stats.recording = false;
  std::printf("differential: %ld stacks compared, %ld distinct, %ld mismatched (sink %zu)\n",
              g_stats.compared.load(), g_stats.distinct.load(), g_stats.mismatched.load(), sink);
  if (g_stats.cantunwind_tail.load() > 0) {
    std::printf("  of which %ld end in an EXIDX_CANTUNWIND frame libgcc does not report\n",
                g_stats.cantunwind_tail.load());
  }
  for (int p = 0; p < kPeers; ++p) {
    std::printf("  vs %-17s %ld compared, %ld mismatched%s\n", kPeerNames[p],
                g_stats.peer_compared[p].load(), g_stats.peer_mismatched[p].load(),
                g_stats.peer_compared[p].load() == 0 ? " (not installed for this target)" : "");
  }
  EXPECT_GT(g_stats.compared.load(), 5000);
  EXPECT_GT(g_stats.distinct.load(), 1000);
  EXPECT_EQ(g_stats.mismatched.load(), 0) << g_stats.first_mismatch;
}

}  // namespace
