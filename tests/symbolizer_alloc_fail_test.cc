// Allocation-failure sweep of the public Symbolizer (as libbacktrace's allocfail.sh): this
// binary interposes malloc, calloc, realloc and the aligned allocators (operator new comes
// through them), and fails the Nth allocation after arming, for N = 1, 2, 3, ... until a run
// ends before its Nth allocation. Each run, in a forked child, opens a -O2 -g fixture library,
// names addresses of it with file:line and inline frames (SymbolizeFile, and Symbolize on the
// loaded copy), and destroys the Symbolizer. Every call must give a clean error (an
// absl::Status, or Symbolize's documented empty answer) or exactly the answer of a run without
// failures; never a crash, abort, std::terminate or exit; and nothing allocated while armed may
// be live once the Symbolizer is gone.
//
// Whose allocation failed is read from the stack (captured with stackwalk, which allocates
// nothing): the innermost frame in libdw, libelf, libstackwalk_symbolize or this test decides;
// libc (libdw's tsearch), libstdc++ (operator new) and abseil act for their caller.
//
// Exclusions (elfutils 0.188), each counted and printed, and only where the failed allocation
// was libdw's or libelf's own:
// - the process may end: libdw's internal allocator does not return NULL, it ends the process
//   with exit(1) and "libdw: Cannot allocate memory"; a failure in its abbreviation hash table
//   (lib/dynamicsizehash_concurrent.c) crashes it (SIGSEGV) or fails its assertion
//   `htab->table` (SIGABRT);
// - blocks libdw or libelf allocated may stay live (libdw loses the CU it was reading when
//   tsearch cannot add it to its tree).
// Nothing is excluded for allocations of ours, abseil's or the C++ runtime's, and the answers of
// every run that ends must be right or a clean error whoever's allocation failed. A run without
// failures must leak nothing at all (so libdw and libelf keep no global cache here).
// Runtime: every N up to kFullSweep, then a deterministic stride so that at most kMaxRuns runs
// cover the rest (the totals and the stride are printed). Today a run makes about 130
// allocations: every N is run, a few seconds in all.
//
// To debug one N: SYMBOLIZER_ALLOC_FAIL_ONLY=N runs it in this process (under a debugger).
#include <dlfcn.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "stackwalk/stackwalk.h"
#include "stackwalk/symbolizer.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);
}

namespace {

// ---- The interposer ------------------------------------------------------------------------

// Where a caller's code lies, to say whose allocation failed or leaked.
struct CodeRange {
  uintptr_t lo = 0, hi = 0;
  bool Contains(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= lo && a < hi;
  }
};
CodeRange g_libdw, g_libelf;

CodeRange g_symbolizer, g_test;

// Whose allocation it is: the innermost caller in libdw, libelf, libstackwalk_symbolize or this
// test, from a stack captured with stackwalk itself (no allocation). Frames of libc (tsearch),
// libstdc++ (operator new) and abseil act for their caller and are skipped.
enum Owner : int { kOther = 0, kLibdw = 1, kLibelf = 2 };
Owner OwnerOfStack() {
  void* pcs[48];
  int n = stackwalk_backtrace(pcs, 48, STACKWALK_AUTO);
  int i = 0;
  while (i < n && g_test.Contains(pcs[i])) ++i;  // the interposer's own frames
  for (; i < n; ++i) {
    if (g_libdw.Contains(pcs[i])) return kLibdw;
    if (g_libelf.Contains(pcs[i])) return kLibelf;
    if (g_symbolizer.Contains(pcs[i]) || g_test.Contains(pcs[i])) return kOther;
  }
  return kOther;
}

const char* OwnerName(int owner) {
  return owner == kLibdw ? "libdw" : owner == kLibelf ? "libelf" : "stackwalk, abseil or the C++ runtime";
}

// Blocks allocated while tracking, by address (open addressing; no allocation of its own).
constexpr size_t kSlots = size_t{1} << 20;
struct Slot {
  void* ptr;     // nullptr: empty; kTombstone: deleted
  void* caller;
  Owner owner;
};
void* const kTombstone = reinterpret_cast<void*>(1);
Slot g_slots[kSlots];
long g_live = 0;

std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
bool g_tracking = false;
long g_count = 0;     // allocations since arming
long g_fail_at = 0;   // 0: fail none
void* g_failed_caller = nullptr;
Owner g_failed_owner = kOther;
bool g_failed = false;
int g_report_fd = -1;  // the child's pipe: the failed allocation's owner is written at once

struct Lock {
  Lock() {
    while (g_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Lock() { g_lock.clear(std::memory_order_release); }
};

size_t SlotOf(const void* p) { return (reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 44; }

void Track(void* p, void* caller) {
  const Owner owner = OwnerOfStack();
  for (size_t i = SlotOf(p);; i = (i + 1) & (kSlots - 1)) {
    if (g_slots[i].ptr == nullptr || g_slots[i].ptr == kTombstone) {
      g_slots[i] = {p, caller, owner};
      ++g_live;
      return;
    }
  }
}

bool Untrack(void* p) {
  for (size_t i = SlotOf(p);; i = (i + 1) & (kSlots - 1)) {
    if (g_slots[i].ptr == nullptr) return false;
    if (g_slots[i].ptr == p) {
      g_slots[i].ptr = kTombstone;
      --g_live;
      return true;
    }
  }
}

// True if this allocation is to fail; counts it when tracking.
bool ShouldFail(void* caller) {
  if (!g_tracking) return false;
  if (++g_count != g_fail_at) return false;
  g_failed = true;
  g_failed_caller = caller;
  g_failed_owner = OwnerOfStack();
  if (g_report_fd >= 0) {
    int owner = g_failed_owner;
    ssize_t ignored = write(g_report_fd, &owner, sizeof(owner));
    (void)ignored;
  }
  return true;
}

void* Allocated(void* p, void* caller) {
  if (p != nullptr && g_tracking) Track(p, caller);
  return p;
}

}  // namespace

extern "C" {

void* malloc(size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (ShouldFail(caller)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Allocated(__libc_malloc(size), caller);
}

void* calloc(size_t n, size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (ShouldFail(caller)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Allocated(__libc_calloc(n, size), caller);
}

void* realloc(void* p, size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (p != nullptr && size == 0) {
    Untrack(p);
    __libc_free(p);
    return nullptr;
  }
  if (ShouldFail(caller)) {
    errno = ENOMEM;
    return nullptr;  // the old block stays as it was
  }
  // A block from before arming stays untracked when it moves: it is not a new allocation.
  const bool tracked = p != nullptr && Untrack(p);
  void* q = __libc_realloc(p, size);
  if (q == nullptr) {
    if (tracked) Track(p, caller);
    return nullptr;
  }
  if (tracked || p == nullptr) return Allocated(q, caller);
  return q;
}

void free(void* p) noexcept {
  if (p == nullptr) return;
  {
    Lock lock;
    Untrack(p);
  }
  __libc_free(p);
}

void* memalign(size_t alignment, size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (ShouldFail(caller)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Allocated(__libc_memalign(alignment, size), caller);
}

void* aligned_alloc(size_t alignment, size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (ShouldFail(caller)) {
    errno = ENOMEM;
    return nullptr;
  }
  return Allocated(__libc_memalign(alignment, size), caller);
}

int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  void* caller = __builtin_return_address(0);
  Lock lock;
  if (ShouldFail(caller)) return ENOMEM;
  void* p = Allocated(__libc_memalign(alignment, size), caller);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace {

void Arm(long fail_at) {
  Lock lock;
  g_count = 0;
  g_fail_at = fail_at;
  g_failed = false;
  g_failed_caller = nullptr;
  g_tracking = true;
}

void Disarm() {
  Lock lock;
  g_tracking = false;
}

// ---- The scenario --------------------------------------------------------------------------

struct Query {
  bool in_process;     // Symbolize(pc) on the loaded copy, else SymbolizeFile(path, address)
  uint64_t address;    // link-time address, or the PC
  std::vector<stackwalk::SymbolizedFrame> expected;
};

// The last query's PC as a one-frame trace from a signal context, and its text.
std::vector<stackwalk::SymbolizedFrame> g_expected_trace;
std::string g_expected_text;

bool SameFrames(const std::vector<stackwalk::SymbolizedFrame>& a,
                const std::vector<stackwalk::SymbolizedFrame>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].function != b[i].function || a[i].file != b[i].file || a[i].line != b[i].line ||
        a[i].column != b[i].column || a[i].inlined != b[i].inlined || a[i].module != b[i].module ||
        a[i].module_offset != b[i].module_offset || a[i].pc != b[i].pc) {
      return false;
    }
  }
  return true;
}

// What a child tells its parent (plain bytes through a pipe).
struct RunResult {
  long allocations = 0;     // made while armed
  bool reached = false;     // the Nth allocation happened (and failed)
  int failed_owner = kOther;
  int correct = 0;          // answers equal to the reference
  int errors = 0;           // clean errors
  int wrong = 0;            // anything else: a different answer, or an error of the wrong kind
  long live = 0;            // blocks allocated while armed and not freed
  int live_owner_mask = 0;  // 1 << Owner of each live block
  char first_wrong[160] = {};
  void* leak_caller = nullptr;
};

const char* kLibPath = ALLOC_FAIL_LIB_PATH;
std::string g_lib_path;  // made before arming: the scenario's own allocations are not the library's

void RunScenario(const std::vector<Query>& queries, RunResult* r) {
  stackwalk::Symbolizer* symbolizer = new (std::nothrow) stackwalk::Symbolizer();
  if (symbolizer == nullptr) {  // the Nth allocation was the object itself: not the library's
    ++r->errors;
    return;
  }
  for (const Query& q : queries) {
    if (q.in_process) {
      std::vector<stackwalk::SymbolizedFrame> frames =
          symbolizer->Symbolize(reinterpret_cast<const void*>(q.address), false);
      if (frames.empty()) {
        ++r->errors;  // documented: memory ran out
      } else if (SameFrames(frames, q.expected)) {
        ++r->correct;
      } else if (++r->wrong == 1) {
        std::snprintf(r->first_wrong, sizeof(r->first_wrong), "Symbolize(0x%llx): %s at %s:%d",
                      static_cast<unsigned long long>(q.address), frames[0].function.c_str(),
                      frames[0].file.c_str(), frames[0].line);
      }
      continue;
    }
    absl::StatusOr<std::vector<stackwalk::SymbolizedFrame>> frames =
        symbolizer->SymbolizeFile(g_lib_path, q.address);
    if (!frames.ok()) {
      if (absl::IsResourceExhausted(frames.status())) {
        ++r->errors;
      } else if (++r->wrong == 1) {
        std::snprintf(r->first_wrong, sizeof(r->first_wrong), "SymbolizeFile(0x%llx): %s",
                      static_cast<unsigned long long>(q.address),
                      std::string(frames.status().message()).c_str());
      }
    } else if (SameFrames(*frames, q.expected)) {
      ++r->correct;
    } else if (++r->wrong == 1) {
      const auto& f = frames->empty() ? stackwalk::SymbolizedFrame() : (*frames)[0];
      std::snprintf(r->first_wrong, sizeof(r->first_wrong),
                    "SymbolizeFile(0x%llx): %zu frames, %s at %s:%d",
                    static_cast<unsigned long long>(q.address), frames->size(),
                    f.function.c_str(), f.file.c_str(), f.line);
    }
  }
  void* pc = reinterpret_cast<void*>(queries.back().address);
  std::vector<stackwalk::SymbolizedFrame> trace = symbolizer->SymbolizeTrace(&pc, 1, true);
  if (trace.empty()) {
    ++r->errors;  // documented: memory ran out
  } else if (!SameFrames(trace, g_expected_trace)) {
    if (++r->wrong == 1) std::snprintf(r->first_wrong, sizeof(r->first_wrong), "SymbolizeTrace");
  } else {
    ++r->correct;
    std::string text = stackwalk::FormatFrames(trace);
    if (text.empty()) {
      ++r->errors;  // documented: memory ran out
    } else if (text == g_expected_text) {
      ++r->correct;
    } else if (++r->wrong == 1) {
      std::snprintf(r->first_wrong, sizeof(r->first_wrong), "FormatFrames: %s", text.c_str());
    }
  }
  delete symbolizer;
}

void FillAndSend(RunResult* r) {
  r->allocations = g_count;
  r->reached = g_failed;
  r->failed_owner = g_failed_owner;
  r->live = g_live;
  for (const Slot& s : g_slots) {
    if (s.ptr == nullptr || s.ptr == kTombstone) continue;
    r->live_owner_mask |= 1 << s.owner;
    if (r->leak_caller == nullptr) r->leak_caller = s.caller;
  }
  ssize_t ignored = write(g_report_fd, r, sizeof(*r));
  (void)ignored;
}

// An exception escaping it ends the child with std::terminate (SIGABRT), as in a program.
void RunArmed(const std::vector<Query>& queries, long fail_at, RunResult* r) noexcept {
  Arm(fail_at);
  RunScenario(queries, r);
  Disarm();
}

enum class Ending { kReturned, kExited, kOther };

// Runs the scenario in a child with the Nth allocation failing. kExited: exit() was called
// during the scenario. *owner: whose allocation failed (kOther if none did).
Ending RunChild(const std::vector<Query>& queries, long fail_at, RunResult* out, int* owner,
                int* status) {
  int fds[2];
  if (pipe(fds) != 0) return Ending::kOther;
  std::fflush(nullptr);  // a child that exits must not write the parent's buffers again
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    g_report_fd = fds[1];
    static RunResult r;
    atexit([] {
      Disarm();
      r.wrong = -1;  // marks "exit() during the scenario"
      FillAndSend(&r);
    });
    RunArmed(queries, fail_at, &r);
    FillAndSend(&r);
    _exit(0);
  }
  close(fds[1]);
  // [the owner, if an allocation failed] then the result, if the child got that far.
  char buf[sizeof(int) + sizeof(RunResult)];
  size_t got = 0;
  for (ssize_t n; got < sizeof(buf) && (n = read(fds[0], buf + got, sizeof(buf) - got)) > 0;) {
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  waitpid(pid, status, 0);
  *owner = kOther;
  size_t at = 0;
  if (got == sizeof(int) || got == sizeof(buf)) {
    std::memcpy(owner, buf, sizeof(int));
    at = sizeof(int);
  }
  if (got - at != sizeof(RunResult)) return Ending::kOther;
  std::memcpy(static_cast<void*>(out), buf + at, sizeof(RunResult));
  if (out->wrong == -1 && WIFEXITED(*status)) return Ending::kExited;
  return WIFEXITED(*status) && WEXITSTATUS(*status) == 0 ? Ending::kReturned : Ending::kOther;
}

// The executable segment of a loaded object (nullptr: the program).
CodeRange CodeOf(const char* soname) {
  CodeRange range;
  void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return range;
  link_map* map = nullptr;
  dlinfo(handle, RTLD_DI_LINKMAP, &map);
  struct Args {
    link_map* map;
    CodeRange* range;
  } args{map, &range};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* a = static_cast<Args*>(data);
        if (info->dlpi_addr != a->map->l_addr || std::strcmp(info->dlpi_name, a->map->l_name) != 0) {
          return 0;
        }
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          a->range->lo = info->dlpi_addr + ph.p_vaddr;
          a->range->hi = a->range->lo + ph.p_memsz;
        }
        return 1;
      },
      &args);
  dlclose(handle);
  return range;
}

TEST(SymbolizerAllocFail, EveryAllocationFailingGivesACleanErrorOrTheRightAnswer) {
  g_libdw = CodeOf("libdw.so.1");
  g_libelf = CodeOf("libelf.so.1");
  g_symbolizer = CodeOf("libstackwalk_symbolize.so.0");
  g_test = CodeOf(nullptr);
  ASSERT_NE(g_libdw.lo, 0u);
  ASSERT_NE(g_libelf.lo, 0u);
  ASSERT_NE(g_symbolizer.lo, 0u);
  ASSERT_NE(g_test.lo, 0u);
  g_lib_path = kLibPath;
  void* warm[4];
  stackwalk_backtrace(warm, 4, STACKWALK_AUTO);  // this thread's stack bounds, read once

  // The fixture, loaded: its bias turns PCs into link-time addresses.
  void* lib = dlopen(kLibPath, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(lib, RTLD_DI_LINKMAP, &map), 0);
  const auto entry = reinterpret_cast<uintptr_t>(dlsym(lib, "ImplementationName"));
  ASSERT_NE(entry, 0u);
  stackwalk_refresh_modules();  // the module map is built before arming (mmap, not malloc)

  // The reference answers, without failures: the entry, and the first address (scanning from
  // it) with two inlined frames, as an offline address and as a PC of the loaded copy.
  std::vector<Query> queries;
  {
    stackwalk::Symbolizer reference;
    auto at_entry = reference.SymbolizeFile(kLibPath, entry - map->l_addr);
    ASSERT_TRUE(at_entry.ok()) << at_entry.status();
    ASSERT_GE(at_entry->size(), 1u);
    EXPECT_EQ(at_entry->back().function, "ImplementationName");
    EXPECT_GT(at_entry->back().line, 0);
    queries.push_back({false, entry - map->l_addr, *at_entry});
    for (uintptr_t pc = entry; pc < entry + 256; ++pc) {
      auto frames = reference.SymbolizeFile(kLibPath, pc - map->l_addr);
      ASSERT_TRUE(frames.ok());
      if (frames->size() < 3) continue;
      EXPECT_EQ((*frames)[0].function, "Square");
      EXPECT_EQ((*frames)[1].function, "SumSquares");
      EXPECT_EQ((*frames)[2].function, "ImplementationName");
      EXPECT_TRUE((*frames)[0].inlined && (*frames)[1].inlined && !(*frames)[2].inlined);
      EXPECT_NE((*frames)[0].file.find("inline_c.c"), std::string::npos);
      queries.push_back({false, pc - map->l_addr, *frames});
      queries.push_back({true, pc, reference.Symbolize(reinterpret_cast<const void*>(pc), false)});
      break;
    }
    ASSERT_EQ(queries.size(), 3u) << "no address with two inlined frames";
    ASSERT_EQ(queries[2].expected.size(), 3u);
    void* pc = reinterpret_cast<void*>(queries.back().address);
    g_expected_trace = reference.SymbolizeTrace(&pc, 1, true);
    ASSERT_EQ(g_expected_trace.size(), 3u);
    g_expected_text = stackwalk::FormatFrames(g_expected_trace);
    ASSERT_NE(g_expected_text.find("Square (inlined) at "), std::string::npos) << g_expected_text;
  }

  if (const char* only = getenv("SYMBOLIZER_ALLOC_FAIL_ONLY")) {
    RunResult r;
    RunArmed(queries, atol(only), &r);
    std::printf("N=%s: correct %d, errors %d, wrong %d (%s), live %ld\n", only, r.correct,
                r.errors, r.wrong, r.first_wrong, g_live);
    return;
  }

  // A run that fails nothing: the number of allocations to sweep, and no leak.
  RunResult clean;
  int status = 0, owner = kOther;
  ASSERT_EQ(RunChild(queries, 0, &clean, &owner, &status), Ending::kReturned) << status;
  ASSERT_EQ(clean.correct, 5) << clean.first_wrong;  // 3 queries, the trace and its text
  ASSERT_EQ(clean.live, 0) << "leaked without failures; first from " << clean.leak_caller;
  const long total = clean.allocations;

  constexpr long kFullSweep = 2000;
  constexpr long kMaxRuns = 3000;
  const long stride = total <= kMaxRuns ? 1 : (total - kFullSweep) / (kMaxRuns - kFullSweep) + 1;
  long runs = 0, errors = 0, correct_after_failure = 0, third_party_leaks = 0;
  long failed_by[3] = {};
  std::map<std::string, long> third_party_deaths;  // how libdw/libelf ended the process
  int reported = 0;
  for (long n = 1;; n += n < kFullSweep ? 1 : stride) {
    RunResult r;
    ++runs;
    const Ending ending = RunChild(queries, n, &r, &owner, &status);
    const bool third_party = owner == kLibdw || owner == kLibelf;
    if (ending != Ending::kReturned) {
      const std::string how =
          WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status));
      if (third_party) {  // libdw's own allocator or hash tables (see the top of this file)
        ++failed_by[owner];
        ++third_party_deaths[std::string(OwnerName(owner)) + " " + how];
        continue;
      }
      ADD_FAILURE() << "allocation " << n << " failing (made by " << OwnerName(owner)
                    << "): the child ended by " << how;
      if (++reported > 20) break;
      continue;
    }
    if (!r.reached) break;  // the run ended before its Nth allocation: done
    ++failed_by[owner];
    errors += r.errors;
    correct_after_failure += r.correct;
    bool leak_ok = r.live == 0;
    if (!leak_ok && third_party &&
        (r.live_owner_mask & ~((1 << kLibdw) | (1 << kLibelf))) == 0) {
      ++third_party_leaks;
      leak_ok = true;
    }
    if (r.wrong != 0 || !leak_ok) {
      ADD_FAILURE() << "allocation " << n << " of " << total << " failing (made by "
                    << OwnerName(owner) << "): " << r.wrong << " wrong answers (" << r.first_wrong
                    << "), " << r.live << " blocks leaked (first from " << r.leak_caller << ")";
      if (++reported > 20) break;
    }
  }
  std::printf("allocations per run %ld; runs %ld (every N up to %ld, then every %ld); failed "
              "allocations made by stackwalk/abseil/C++ runtime %ld, libdw %ld, libelf %ld; clean "
              "errors %ld; correct answers after a failure %ld; runs leaking only libdw/libelf "
              "blocks after their own allocation failed %ld\n",
              total, runs, kFullSweep, stride, failed_by[kOther], failed_by[kLibdw],
              failed_by[kLibelf], errors, correct_after_failure, third_party_leaks);
  for (const auto& [how, count] : third_party_deaths) {
    std::printf("  the process ended by %s: %ld runs\n", how.c_str(), count);
  }
  dlclose(lib);
}

}  // namespace
