// The roots of a leak check (leakcheck/scan/roots.h) over real threads: each blocks in read() on
// a pipe after publishing its SP and thread pointer, and the test builds the StoppedThread records
// a stopped world would (WP1's StoppedWorld is tested on its own). A RootRange of the right kind
// must cover what a thread holds (its locals, its static and dynamic TLS, its registers), the
// objects' writable segments and the program's anonymous mappings; never the allocator's or the
// checker's own mappings. Also MapsSnapshot against a plain parse of /proc/self/maps, and the
// SafeReader's three methods on readable, unmapped and PROT_NONE memory.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collect_modules.h"
#include "gtest/gtest.h"
#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/roots.h"
#include "leakcheck/scan/safe_reader.h"
#include "leakcheck/scan/tls_roots.h"

thread_local void* t_static_slot;  // the test binary's static TLS
void* g_bss_slot;                  // its .bss

namespace stackwalk::leakcheck {
namespace {

uintptr_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

uintptr_t ThreadPointer() {
#if defined(__x86_64__)
  return Address(reinterpret_cast<void*>(pthread_self()));  // glibc: the TCB is fs_base
#else
  return Address(__builtin_thread_pointer());
#endif
}

// A plain parse of /proc/self/maps (the oracle).
struct PlainMapping {
  uintptr_t lo, hi;
  std::string perms, path;
  bool operator==(const PlainMapping& o) const {
    return lo == o.lo && hi == o.hi && perms == o.perms && path == o.path;
  }
};
std::vector<PlainMapping> ParseMaps() {
  std::vector<PlainMapping> out;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode;
    std::getline(fields >> std::ws, path);
    PlainMapping m;
    m.lo = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    m.hi = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    m.perms = perms;
    m.path = path;
    out.push_back(m);
  }
  return out;
}

// The first root of `kind` (any kind if kind is empty) holding [address, address + size).
const RootRange* Covering(const RootSet& roots, uintptr_t address, const RootKind* kind = nullptr,
                          size_t size = sizeof(void*)) {
  for (size_t i = 0; i < roots.size(); ++i) {
    const RootRange& r = roots[i];
    if ((kind == nullptr || r.kind == *kind) && r.lo <= address && address + size <= r.hi) {
      return &r;
    }
  }
  return nullptr;
}
const RootRange* Covering(const RootSet& roots, uintptr_t address, RootKind kind) {
  return Covering(roots, address, &kind);
}
// Any root overlapping [lo, hi).
const RootRange* Overlapping(const RootSet& roots, uintptr_t lo, uintptr_t hi) {
  for (size_t i = 0; i < roots.size(); ++i) {
    if (roots[i].lo < hi && lo < roots[i].hi) return &roots[i];
  }
  return nullptr;
}

using TlsAddressFn = void* (*)();

// A thread that touches its TLS (and the library's, if given), publishes what it holds and
// blocks in read() until released.
class BlockedThread {
 public:
  explicit BlockedThread(TlsAddressFn library_tls) {
    if (pipe(pipe_) != 0) std::abort();
    thread_ = std::thread([this, library_tls] { Body(library_tls); });
    while (!ready_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  ~BlockedThread() {
    char c = 1;
    (void)!write(pipe_[1], &c, 1);
    thread_.join();
    close(pipe_[0]);
    close(pipe_[1]);
  }

  StoppedThread Record() const {
    StoppedThread t;
    t.tid = tid_;
    t.state = StoppedThread::State::kStopped;
    t.sp = sp_;
    t.thread_pointer = tp_;
    t.reg_bytes = 27 * 8;
    std::memset(t.regs, 0x5e, t.reg_bytes);
    return t;
  }

  pid_t tid_ = 0;
  uintptr_t sp_ = 0, tp_ = 0, local_ = 0, static_tls_ = 0, dynamic_tls_ = 0;

 private:
  __attribute__((noinline)) void Park() {
    volatile char here = 0;
    sp_ = Address(const_cast<char*>(&here));
    ready_.store(true, std::memory_order_release);
    char c;
    while (read(pipe_[0], &c, 1) < 0) {
    }
    (void)here;
  }
  void Body(TlsAddressFn library_tls) {
    void* volatile local = &g_bss_slot;
    local_ = Address(const_cast<void**>(&local));
    t_static_slot = &g_bss_slot;
    static_tls_ = Address(&t_static_slot);
    if (library_tls != nullptr) {
      void** slot = static_cast<void**>(library_tls());
      *slot = &g_bss_slot;
      dynamic_tls_ = Address(slot);
    }
    tid_ = gettid();
    tp_ = ThreadPointer();
    Park();
    (void)local;
  }

  int pipe_[2];
  std::thread thread_;
  std::atomic<bool> ready_{false};
};

class RootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = dlopen(ROOTS_TLS_LIB_PATH, RTLD_NOW);
    ASSERT_NE(library_, nullptr) << dlerror();
    library_tls_ = reinterpret_cast<TlsAddressFn>(dlsym(library_, "roots_tls_address"));
    ASSERT_NE(library_tls_, nullptr);
  }
  void TearDown() override {
    if (library_ != nullptr) dlclose(library_);
  }

  // Collects the roots of `threads` as the check would, the test thread the caller.
  void Collect(const std::vector<StoppedThread>& threads, const RootOptions& options,
               RootSet* roots, const Allocation* blocks = nullptr, size_t block_count = 0,
               const internal::AddressRange* excluded = nullptr, size_t excluded_count = 0) {
    timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    ASSERT_TRUE(CollectModules(&modules_));
    ASSERT_TRUE(maps_.Read());
    ucontext_t caller;
    getcontext(&caller);
    volatile char caller_local = 0;
    caller_local_ = Address(const_cast<char*>(&caller_local));
    RootInputs inputs;
    inputs.threads = threads.data();
    inputs.thread_count = threads.size();
    inputs.maps = &maps_;
    inputs.blocks = blocks;
    inputs.block_count = block_count;
    inputs.caller_sp = caller_local_;
    inputs.caller = &caller;
    inputs.excluded = excluded;
    inputs.excluded_count = excluded_count;
    inputs.modules = &modules_;
    CollectRoots(inputs, options, roots);
    clock_gettime(CLOCK_MONOTONIC, &end);
    collect_ns_ = (end.tv_sec - start.tv_sec) * 1000000000ll + (end.tv_nsec - start.tv_nsec);
    caller_context_ = Address(&caller);  // only compared, after
  }

  void* library_ = nullptr;
  TlsAddressFn library_tls_ = nullptr;
  LoadedModules modules_;
  MapsSnapshot maps_;
  uintptr_t caller_local_ = 0, caller_context_ = 0;
  long long collect_ns_ = 0;
};

TEST_F(RootsTest, ThreadsStacksTlsAndRegisters) {
  BlockedThread blocked(library_tls_);
  t_static_slot = &g_bss_slot;  // the main thread's
  std::vector<StoppedThread> threads{blocked.Record()};
  RootSet roots;
  Collect(threads, RootOptions{}, &roots);
  ASSERT_FALSE(roots.overflowed());

  const RootRange* r = Covering(roots, blocked.local_, RootKind::kStack);
  ASSERT_NE(r, nullptr) << "a local of the blocked thread";
  EXPECT_EQ(r->tid, blocked.tid_);
  EXPECT_LE(r->lo, blocked.sp_);

  r = Covering(roots, blocked.static_tls_, RootKind::kStaticTls);
  ASSERT_NE(r, nullptr) << "the blocked thread's __thread variable";
  EXPECT_EQ(r->tid, blocked.tid_);
  r = Covering(roots, Address(&t_static_slot), RootKind::kStaticTls);
  ASSERT_NE(r, nullptr) << "the main thread's __thread variable";
  EXPECT_EQ(r->tid, gettid());

  r = Covering(roots, blocked.dynamic_tls_, RootKind::kDynamicTls);
  ASSERT_NE(r, nullptr) << "the dlopen'ed library's TLS variable in the blocked thread";
  EXPECT_EQ(r->tid, blocked.tid_);
  EXPECT_TRUE(r->copy);

  const uintptr_t regs = Address(threads[0].regs);
  r = Covering(roots, regs, RootKind::kRegisters);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->lo, regs);
  EXPECT_EQ(r->hi, regs + threads[0].reg_bytes);
  EXPECT_EQ(r->tid, blocked.tid_);

  r = Covering(roots, caller_local_, RootKind::kCallerStack);
  ASSERT_NE(r, nullptr) << "the caller's stack";
  EXPECT_EQ(r->tid, gettid());
  EXPECT_NE(Covering(roots, caller_context_, RootKind::kCallerStack), nullptr);

  EXPECT_NE(Covering(roots, Address(&g_bss_slot), RootKind::kGlobals), nullptr)
      << "the test binary's .bss";
  // ld.so's writable mapping (.data, past its RELRO) per a plain read of the maps.
  int ld_so = 0;
  for (const PlainMapping& m : ParseMaps()) {
    if (m.path.find("/ld-linux") == std::string::npos || m.perms[1] != 'w') continue;
    ++ld_so;
    EXPECT_NE(Covering(roots, m.lo, RootKind::kGlobals), nullptr)
        << m.path << " " << std::hex << m.lo;
  }
  EXPECT_GT(ld_so, 0);
  // Byte counts per kind follow the ranges.
  EXPECT_GT(roots.bytes(RootKind::kStack), 0u);
  EXPECT_GT(roots.bytes(RootKind::kGlobals), 0u);
  // For the record (not asserted): what a check of this process would scan, and what listing
  // it cost.
  std::printf("roots: %zu ranges in %.1f us (maps read and roots collected);", roots.size(),
              collect_ns_ / 1000.0);
  for (int k = 0; k < kRootKindCount; ++k) {
    std::printf(" %s %llu", RootKindName(static_cast<RootKind>(k)),
                static_cast<unsigned long long>(roots.bytes(static_cast<RootKind>(k))));
  }
  std::printf(" bytes\n");
}

TEST_F(RootsTest, AnonymousMappingsButNotTheAllocatorsNorOwnNorExcluded) {
  BlockedThread blocked(nullptr);
  std::vector<StoppedThread> threads{blocked.Record()};
  // A program's arena the size of Python's obmalloc arenas, holding a pointer, between PROT_NONE
  // pages: qemu-user's maps merge it with a neighbouring thread stack otherwise (the kernel's
  // merges with own or excluded mappings or whole chunks are taken apart: see roots.cc).
  const size_t arena_bytes = 256 * 1024;
  const size_t page = sysconf(_SC_PAGESIZE);
  char* reserved = static_cast<char*>(mmap(nullptr, arena_bytes + 2 * page, PROT_NONE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(reserved, MAP_FAILED);
  void* arena = mmap(reserved + page, arena_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_NE(arena, MAP_FAILED);
  static_cast<void**>(arena)[100] = &g_bss_slot;
  // The checker's own mapping.
  void* own = OwnMap(arena_bytes);
  ASSERT_NE(own, nullptr);
  static_cast<void**>(own)[100] = &g_bss_slot;
  // An excluded range (a checker thread's stack).
  void* excluded_map = mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(excluded_map, MAP_FAILED);
  static_cast<void**>(excluded_map)[100] = &g_bss_slot;
  const internal::AddressRange excluded{Address(excluded_map), Address(excluded_map) + arena_bytes};
  // A 1 MiB block (its own mmap'ed chunk), given as a recorded block.
  std::unique_ptr<char[]> big(new char[1 << 20]);
  std::memset(big.get(), 0, 1 << 20);
  Allocation block{Address(big.get()), 1 << 20, 1, 0, 0};
  // Another thread's glibc arena heap.
  void* arena_block = nullptr;
  std::thread([&arena_block] {
    arena_block = malloc(200);
    std::memset(arena_block, 0, 200);
  }).join();

  RootSet roots;
  Collect(threads, RootOptions{}, &roots, &block, 1, &excluded, 1);
  const RootRange* r = Covering(roots, Address(arena) + 100 * sizeof(void*), RootKind::kAnonymous);
  ASSERT_NE(r, nullptr) << "the program's anonymous arena " << std::hex << Address(arena) << " in "
                        << maps_.Find(Address(arena))->range.lo << "-"
                        << maps_.Find(Address(arena))->range.hi << " kind "
                        << static_cast<int>(maps_.Find(Address(arena))->kind);
  EXPECT_LE(r->lo, Address(arena));  // (the kernel may have merged it with a neighbour)
  EXPECT_TRUE(r->copy);
  EXPECT_EQ(Overlapping(roots, Address(own), Address(own) + arena_bytes), nullptr) << "own mapping";
  EXPECT_EQ(Overlapping(roots, excluded.lo, excluded.hi), nullptr) << "excluded";
  EXPECT_EQ(Covering(roots, Address(big.get())), nullptr) << "the 1 MiB block's mapping";
  EXPECT_EQ(Covering(roots, Address(big.get()) + (1 << 19)), nullptr);
  // The blocked thread's stack is a kStack root from its SP up, never a kAnonymous one whole.
  EXPECT_EQ(Covering(roots, blocked.sp_ - 4096, RootKind::kAnonymous), nullptr);
  EXPECT_NE(Covering(roots, blocked.local_, RootKind::kStack), nullptr);
  // The arena heap: aligned to HEAP_MAX_SIZE where glibc gave the thread an arena of its own
  // (not if it reused main_arena, whose memory is [heap] or mmap'ed chunks: none roots either).
  // (Not in a sanitizer build: malloc is the sanitizer's allocator there, not glibc's arenas.)
#if !defined(STACKWALK_SANITIZE_BUILD)
  const MapsEntry* heap = maps_.Find(Address(arena_block));
  ASSERT_NE(heap, nullptr);
  const uintptr_t heap_align = sizeof(void*) == 8 ? uintptr_t{64} << 20 : uintptr_t{1} << 20;
  if (heap->kind == MapsEntry::Kind::kAnonymous) {
    EXPECT_EQ(heap->range.lo % heap_align, 0u) << std::hex << heap->range.lo;
  }
  EXPECT_EQ(Covering(roots, Address(arena_block)), nullptr) << "another thread's arena heap";
#endif

  // LeakSanitizer's rule: no anonymous mapping is a root.
  RootSet lsan;
  RootOptions no_anonymous;
  no_anonymous.anonymous_mappings = false;
  Collect(threads, no_anonymous, &lsan, &block, 1, &excluded, 1);
  EXPECT_EQ(Covering(lsan, Address(arena) + 100 * sizeof(void*)), nullptr);
  EXPECT_EQ(lsan.bytes(RootKind::kAnonymous), 0u);
  EXPECT_NE(Covering(lsan, blocked.local_, RootKind::kStack), nullptr);

  free(arena_block);
  munmap(excluded_map, arena_bytes);
  OwnUnmap(own, arena_bytes);
  munmap(reserved, arena_bytes + 2 * page);
}

// One anonymous mapping (as the kernel merges neighbours into one) holding an excluded range and
// a whole mmap'ed chunk: only the rest of it is a root. A mapping holding a small block is the
// allocator's, all of it.
TEST_F(RootsTest, AnonymousMappingLessExcludedRangesAndWholeChunks) {
  const uintptr_t page = sysconf(_SC_PAGESIZE);
  char* reserved = static_cast<char*>(mmap(nullptr, 12 * page, PROT_NONE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(reserved, MAP_FAILED);
  char* merged = static_cast<char*>(mmap(reserved + page, 6 * page, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
  char* arena = static_cast<char*>(mmap(reserved + 8 * page, 3 * page, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
  ASSERT_NE(merged, MAP_FAILED);
  ASSERT_NE(arena, MAP_FAILED);
  std::memset(merged, 1, 6 * page);
  std::memset(arena, 1, 3 * page);
  const uintptr_t m = Address(merged);
  const internal::AddressRange excluded{m + page, m + 2 * page};
  // Sorted by address: a chunk over pages 3-4 of `merged` (header, then the block), and a small
  // block on the first page of `arena`.
  Allocation blocks[2] = {{m + 3 * page + 16, page, 1, 0, 0}, {Address(arena) + 160, 48, 2, 0, 0}};
  RootSet roots;
  Collect({}, RootOptions{}, &roots, blocks, 2, &excluded, 1);
  for (uintptr_t p = 0; p < 6; ++p) {
    const bool root = p == 0 || p == 2 || p == 5;
    const RootKind anonymous = RootKind::kAnonymous;
    EXPECT_EQ(Covering(roots, m + p * page, &anonymous, page) != nullptr, root) << p;
    if (!root) EXPECT_EQ(Overlapping(roots, m + p * page, m + (p + 1) * page), nullptr) << p;
  }
  // A small block in another allocator's arena: its page is cut, the rest stays the program's
  // (a merged neighbour must not lose its roots to one recorded block).
  EXPECT_EQ(Overlapping(roots, Address(arena), Address(arena) + page), nullptr);
  const RootKind anonymous = RootKind::kAnonymous;
  EXPECT_NE(Covering(roots, Address(arena) + page, &anonymous, 2 * page), nullptr);
  munmap(reserved, 12 * page);
}

// The end of the test program's writable segment, at the end of its page (its .bss past the
// file's last page is an anonymous mapping).
uintptr_t ProgramSegmentEnd() {
  uintptr_t end = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) != 0) {
            const uintptr_t page = sysconf(_SC_PAGESIZE);
            *static_cast<uintptr_t*>(out) =
                (info->dlpi_addr + ph.p_vaddr + ph.p_memsz + page - 1) & ~(page - 1);
          }
        }
        return 1;  // the program comes first
      },
      &end);
  return end;
}

char g_large_bss[1 << 16];  // so that the .bss goes on past the file's last page

TEST_F(RootsTest, AnAnonymousMappingMergedWithASegmentsBssIsARootPastIt) {
  // The kernel merges an anonymous mapping placed right after a .bss with it (as it merged ld.so's
  // early allocations, the main thread's TLS among them, with the preloaded checker's .bss): past
  // the segment, that mapping is the program's, a root.
  g_large_bss[sizeof g_large_bss - 1] = 1;
  const uintptr_t end = ProgramSegmentEnd();
  ASSERT_NE(end, 0u);
  const size_t bytes = 64 * 1024;
  void* after = mmap(reinterpret_cast<void*>(end), bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (after == MAP_FAILED || Address(after) != end) {
    if (after != MAP_FAILED) munmap(after, bytes);
    GTEST_SKIP() << "the address after the .bss is taken";
  }
  static_cast<void**>(after)[16] = &g_bss_slot;
  RootSet roots;
  Collect({}, RootOptions{}, &roots);
  const MapsEntry* merged = maps_.Find(end);
  ASSERT_NE(merged, nullptr);
  if (!merged->range.Contains(end - 1)) {
    munmap(after, bytes);
    GTEST_SKIP() << "not merged with the .bss here (qemu-user places mappings itself)";
  }
  EXPECT_NE(Covering(roots, end + 16 * sizeof(void*), RootKind::kAnonymous), nullptr);
  EXPECT_NE(Covering(roots, end - sizeof(void*), RootKind::kGlobals), nullptr);
  EXPECT_EQ(Covering(roots, end - sizeof(void*), RootKind::kAnonymous), nullptr)
      << "the segment is a kGlobals root already";
  munmap(after, bytes);
}

TEST_F(RootsTest, UnstoppedGoneAndLostThreads) {
  BlockedThread blocked(library_tls_);
  StoppedThread unstopped = blocked.Record();
  unstopped.state = StoppedThread::State::kUnstopped;
  unstopped.why = "timeout";
  StoppedThread gone = blocked.Record();
  gone.tid = 1;
  gone.state = StoppedThread::State::kGone;
  StoppedThread lost = blocked.Record();  // an SP in no mapping, no thread pointer
  lost.tid = 2;
  lost.sp = 64;
  lost.thread_pointer = 0;
  std::vector<StoppedThread> threads{unstopped, gone, lost};
  RootSet roots;
  Collect(threads, RootOptions{}, &roots);

  const MapsEntry* stack = maps_.Find(blocked.sp_);
  ASSERT_NE(stack, nullptr);
  const RootRange* r = Covering(roots, stack->range.lo, RootKind::kStack);
  ASSERT_NE(r, nullptr) << "an unstopped thread's whole stack mapping";
  EXPECT_EQ(r->hi, stack->range.hi);
  EXPECT_TRUE(r->copy);
  EXPECT_EQ(Covering(roots, Address(threads[0].regs), RootKind::kRegisters), nullptr)
      << "an unstopped thread's registers are not its own";
  r = Covering(roots, blocked.dynamic_tls_, RootKind::kDynamicTls);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->copy);
  for (size_t i = 0; i < roots.size(); ++i) {
    EXPECT_NE(roots[i].tid, 1) << RootKindName(roots[i].kind);  // gone: nothing
    if (roots[i].tid == 2) {  // lost: its registers only (no stack, no TLS)
      EXPECT_EQ(static_cast<int>(roots[i].kind), static_cast<int>(RootKind::kRegisters));
    }
  }
}

TEST(MapsSnapshot, MatchesAPlainParse) {
  MapsSnapshot snapshot;
  std::vector<PlainMapping> plain;
  bool same = false;
  for (int attempt = 0; attempt < 10 && !same; ++attempt) {  // the heap may move between reads
    ASSERT_TRUE(snapshot.Read());
    plain = ParseMaps();
    same = plain.size() == snapshot.size();
    for (size_t i = 0; same && i < plain.size(); ++i) {
      same = plain[i].lo == snapshot[i].range.lo && plain[i].hi == snapshot[i].range.hi;
    }
  }
  ASSERT_TRUE(same) << plain.size() << " vs " << snapshot.size();
  for (size_t i = 0; i < plain.size(); ++i) {
    const PlainMapping& m = plain[i];
    const MapsEntry& e = snapshot[i];
    SCOPED_TRACE(m.path);
    EXPECT_EQ(e.readable, m.perms[0] == 'r');
    EXPECT_EQ(e.writable, m.perms[1] == 'w');
    EXPECT_EQ(e.executable, m.perms[2] == 'x');
    EXPECT_EQ(e.shared, m.perms[3] == 's');
    MapsEntry::Kind want = MapsEntry::Kind::kFile;
    if (m.path.empty() || m.path.rfind("[anon:", 0) == 0) {
      want = MapsEntry::Kind::kAnonymous;
    } else if (m.path == "[heap]") {
      want = MapsEntry::Kind::kHeap;
    } else if (m.path == "[stack]") {
      want = MapsEntry::Kind::kStack;
    } else if (m.path[0] == '[' || (m.path.size() > 10 &&
                                    m.path.compare(m.path.size() - 10, 10, " (deleted)") == 0)) {
      want = MapsEntry::Kind::kSpecial;
    }
    EXPECT_EQ(static_cast<int>(e.kind), static_cast<int>(want));
    EXPECT_EQ(snapshot.Find(m.lo), &e);
    EXPECT_EQ(snapshot.Find(m.hi - 1), &e);
  }
  EXPECT_EQ(snapshot.Find(0), nullptr);
  int local = 0;
  const MapsEntry* stack = snapshot.Find(Address(&local));
  ASSERT_NE(stack, nullptr);
  EXPECT_EQ(static_cast<int>(stack->kind), static_cast<int>(MapsEntry::Kind::kStack));
  EXPECT_TRUE(IsOwnMapping(Address(&snapshot[0]), Address(&snapshot[0]) + 1));
}

class SafeReaderTest : public ::testing::TestWithParam<SafeReader::Method> {};

TEST_P(SafeReaderTest, ReadsWhatIsThereAndFailsWithoutFaulting) {
  const size_t page = sysconf(_SC_PAGESIZE);
  char* memory = static_cast<char*>(mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(memory, MAP_FAILED);
  for (size_t i = 0; i < 3 * page; ++i) memory[i] = static_cast<char>(i * 7);
  ASSERT_EQ(mprotect(memory + page, page, PROT_NONE), 0);  // the middle page
  ASSERT_EQ(munmap(memory + 2 * page, page), 0);           // the last one gone
  MapsSnapshot maps;
  ASSERT_TRUE(maps.Read());
  SafeReader reader(&maps, GetParam());
  if (GetParam() == SafeReader::Method::kProcessVmReadv) {
    SafeReader automatic(&maps);
    if (automatic.method() != SafeReader::Method::kProcessVmReadv) {
      GTEST_SKIP() << "process_vm_readv does not work here (qemu-user, seccomp)";
    }
  }
  EXPECT_NE(static_cast<int>(reader.method()), static_cast<int>(SafeReader::Method::kAuto));

  std::vector<char> out(page);
  ASSERT_TRUE(reader.Read(Address(memory), out.data(), page));
  EXPECT_EQ(std::memcmp(out.data(), memory, page), 0);
  ASSERT_TRUE(reader.Read(Address(memory) + 5, out.data(), 11));
  EXPECT_EQ(std::memcmp(out.data(), memory + 5, 11), 0);
  EXPECT_TRUE(reader.Read(Address(memory), out.data(), 0));
  EXPECT_FALSE(reader.Read(Address(memory) + page, out.data(), 8)) << "PROT_NONE";
  EXPECT_FALSE(reader.Read(Address(memory) + page - 4, out.data(), 8)) << "into PROT_NONE";
  EXPECT_FALSE(reader.Read(Address(memory) + 2 * page, out.data(), 8)) << "unmapped";
  EXPECT_FALSE(reader.Read(~uintptr_t{0} - 3, out.data(), 8)) << "wraps";
  munmap(memory, 2 * page);
}

INSTANTIATE_TEST_SUITE_P(Methods, SafeReaderTest,
                         ::testing::Values(SafeReader::Method::kAuto,
                                           SafeReader::Method::kProcessVmReadv,
                                           SafeReader::Method::kMaps, SafeReader::Method::kPages));

}  // namespace
}  // namespace stackwalk::leakcheck
