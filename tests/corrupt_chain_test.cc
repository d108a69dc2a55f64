// Broken frame chains on live memory, through the public API: a context whose frame pointer is
// garbage, unmapped, unaligned, off the stack or loops must end the walk cleanly with the frames
// before the damage, never crash.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "stackwalk/cursor.h"
#include "stackwalk/stackwalk.h"
#include "writable_words.h"

namespace {

// Points the context's frame pointer (both of them on arm32, in ARM state) at `fp`.
void SetFramePointer(ucontext_t* uc, uintptr_t fp) {
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(fp);
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[29] = fp;
#elif defined(__arm__)
  uc->uc_mcontext.arm_fp = fp;
  uc->uc_mcontext.arm_r7 = fp;
  uc->uc_mcontext.arm_cpsr &= ~(1u << 5);
  uc->uc_mcontext.arm_pc &= ~1u;
#endif
}

uintptr_t ContextPc(const ucontext_t& uc) {
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return uc.uc_mcontext.pc;
#elif defined(__arm__)
  return uc.uc_mcontext.arm_pc & ~1u;
#endif
}

// A code address to plant as a return address: the walk will accept it as a frame.
uintptr_t SomeCode() { return reinterpret_cast<uintptr_t>(&SomeCode) + 8; }

int WalkFrom(uintptr_t fp, void** pcs, int max, ucontext_t* uc_out = nullptr) {
  ucontext_t uc;
  getcontext(&uc);
  SetFramePointer(&uc, fp);
  if (uc_out) *uc_out = uc;
  return stackwalk_backtrace_from_context(&uc, pcs, max, STACKWALK_FP);
}

TEST(CorruptChain, UnmappedFramePointer) {
  void* pcs[16];
  for (uintptr_t fp : {uintptr_t{0x10}, uintptr_t{0xdead0000}, ~uintptr_t{0} & ~uintptr_t{7}}) {
    ucontext_t uc;
    int n = WalkFrom(fp, pcs, 16, &uc);
    ASSERT_EQ(n, 1) << std::hex << fp;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pcs[0]), ContextPc(uc));
  }
}

TEST(CorruptChain, FramePointerIntoTheHeap) {
  // Readable memory, but not a stack: never followed.
  std::unique_ptr<uintptr_t[]> heap(new uintptr_t[16]);
  for (int i = 0; i < 16; ++i) heap[i] = reinterpret_cast<uintptr_t>(&heap[0]) + 8 * i;
  void* pcs[16];
  EXPECT_EQ(WalkFrom(reinterpret_cast<uintptr_t>(&heap[4]), pcs, 16), 1);
}

TEST(CorruptChain, MisalignedFramePointer) {
  alignas(16) volatile uintptr_t frame[8] = {};
  void* pcs[16];
  EXPECT_EQ(WalkFrom(reinterpret_cast<uintptr_t>(&frame[2]) + 1, pcs, 16), 1);
}

TEST(CorruptChain, SelfLoopingRecordEndsAfterOneFrame) {
  // {saved fp = itself, return address = code}: the record is followed once, then refused.
  alignas(16) volatile uintptr_t frame[8] = {};
  uintptr_t at = reinterpret_cast<uintptr_t>(&frame[2]);
  frame[2] = at;
  frame[3] = SomeCode();
#if defined(__arm__)
  frame[1] = at;  // layout (b): fp at the saved lr, caller fp below it
  frame[2] = SomeCode();
  frame[3] = at;
#endif
  void* pcs[16];
  int n = WalkFrom(at, pcs, 16);
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 2);
}

TEST(CorruptChain, GarbageOnTheStack) {
  // Pseudo-random words, half of them pointing back into the same buffer: every start must end.
  alignas(16) volatile uintptr_t garbage[512];
  uintptr_t base = reinterpret_cast<uintptr_t>(&garbage[0]);
  uint64_t x = 0x2545f4914f6cdd1dull;
  for (int i = 0; i < 512; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    garbage[i] = (x & 1) ? base + (x % (512 * sizeof(uintptr_t))) : static_cast<uintptr_t>(x);
  }
  void* pcs[64];
  for (int i = 0; i < 512; ++i) {
    int n = WalkFrom(base + i * sizeof(uintptr_t), pcs, 64);
    ASSERT_GE(n, 1);
  }
}

// The read() calls this process made so far (/proc/self/io's syscr); -1 if not accounted.
long long ReadCalls() {
  std::FILE* f = std::fopen("/proc/self/io", "r");
  if (f == nullptr) return -1;
  long long n = -1;
  char line[128];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "syscr: %lld", &n) == 1) break;
  }
  std::fclose(f);
  return n;
}

// Return addresses that hold no code: a heap pointer, and an address in no mapping, on every
// target (the middle of three pages mapped and given back: nothing maps there again before the
// walks, which allocate nothing).
struct NotCode {
  std::unique_ptr<uintptr_t[]> heap{new uintptr_t[16]};
  uintptr_t addresses[2] = {};
  bool Make() {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* hole = mmap(nullptr, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED || munmap(hole, 3 * page) != 0) return false;
    addresses[0] = reinterpret_cast<uintptr_t>(&heap[8]);
    addresses[1] = reinterpret_cast<uintptr_t>(hole) + page + 0x234;
    return true;
  }
};

// Walks from a frame record whose return address is `ra`: the context's pc only, `n` 1.
void WalkToReturnAddress(uintptr_t ra, int* n) {
  alignas(16) volatile uintptr_t frame[8] = {};
  frame[3] = ra;  // {saved fp 0, return address}
#if defined(__arm__)
  frame[2] = ra;  // layout (b): fp at the saved lr
#endif
  void* pcs[16];
  *n = WalkFrom(reinterpret_cast<uintptr_t>(&frame[2]), pcs, 16);
}

TEST(CorruptChain, ReturnAddressesIntoDataEndTheWalkWithoutReadingTheMapsEachTime) {
  // Code without frame pointers leaves stack words in the frame-pointer register, whose record
  // then holds a heap pointer or a number as its "return address". Each ends the walk; the
  // range found to hold no code (a data mapping, an unmapped gap) is remembered, so that the
  // next walk does not read /proc/self/maps again (clang under the leak checker: 28,000 reads).
  NotCode not_code;
  ASSERT_TRUE(not_code.Make());
  for (uintptr_t ra : not_code.addresses) {
    int n = 0;
    WalkToReturnAddress(ra, &n);
    ASSERT_EQ(n, 1) << std::hex << ra;  // the context's pc only
    const long long before = ReadCalls();
    if (before < 0) GTEST_SKIP() << "no /proc/self/io";
    constexpr int kWalks = 1000;
    for (int i = 0; i < kWalks; ++i) {
      WalkToReturnAddress(ra, &n);
      ASSERT_EQ(n, 1);
    }
    // The maps text takes many reads; a remembered range needs none (a few where the walks
    // outlast the range's 100 ms).
    EXPECT_LT(ReadCalls() - before, kWalks) << std::hex << ra;
  }
}

// The mapping of /proc/self/maps holding `address`, or the gap around it: [lo, hi).
bool MapsRangeAround(uintptr_t address, uintptr_t* lo, uintptr_t* hi, bool* mapped) {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  uintptr_t below = 0;  // the end of the last mapping below `address`
  bool found = false;
  char line[512];
  while (!found && std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx", &start, &end) != 2) continue;
    if (address >= end) {
      below = end;
    } else {
      *mapped = address >= start;
      *lo = *mapped ? start : below;
      *hi = *mapped ? end : start;
      found = true;
    }
  }
  std::fclose(f);
  return found;
}

// The ranges found to hold no code lie in the thread's static TLS, a root of the leak checker's
// scan, and outlive their 100 ms there: a heap's bounds (its old end inside the blocks it grows
// into) or a gap's (where the next large block is mapped) would keep a leaked block reachable.
// On a thread of its own, whose memo starts empty: the walk adds no word equal to either bound
// (counted before and after: other words of the block may equal one already).
TEST(CorruptChain, TheRangesRememberedToHoldNoCodeAreNotNamedInTheThreadsTls) {
  NotCode not_code;
  ASSERT_TRUE(not_code.Make());
  const auto* libstackwalk = reinterpret_cast<const void*>(&stackwalk_backtrace);
  for (uintptr_t ra : not_code.addresses) {
    std::thread([&] {
      uintptr_t lo = 0, hi = 0;
      bool mapped = false;
      ASSERT_TRUE(MapsRangeAround(ra, &lo, &hi, &mapped)) << std::hex << ra;
      const size_t lo_before = stackwalk::testing::ThreadTlsWordsEqualTo(libstackwalk, lo);
      const size_t hi_before = stackwalk::testing::ThreadTlsWordsEqualTo(libstackwalk, hi);
      int n = 0;
      WalkToReturnAddress(ra, &n);
      ASSERT_EQ(n, 1) << std::hex << ra;
      const char* what = mapped ? "the data mapping's " : "the gap's ";
      // A gap from address 0 up (qemu-user maps low) has a start no block can be named by.
      if (lo >= 4096) {
        EXPECT_EQ(stackwalk::testing::ThreadTlsWordsEqualTo(libstackwalk, lo), lo_before)
            << what << "start";
      }
      EXPECT_EQ(stackwalk::testing::ThreadTlsWordsEqualTo(libstackwalk, hi), hi_before)
          << what << "end";
    }).join();
  }
}

TEST(CorruptChain, CursorReportsGaveUp) {
  ucontext_t uc;
  getcontext(&uc);
  SetFramePointer(&uc, 0xdead0000);
  stackwalk::Cursor c = stackwalk::Cursor::FromContext(&uc, stackwalk::Method::kFramePointer);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.pc(), ContextPc(uc));
  uint64_t sp;
  EXPECT_TRUE(c.GetRegister(stackwalk::Cursor::kStackPointerRegister, &sp));
  EXPECT_EQ(sp, c.sp());
  EXPECT_FALSE(c.Step());
  EXPECT_EQ(c.stop_reason(), stackwalk::Cursor::StopReason::kGaveUp);
  EXPECT_FALSE(c.Step());  // stays stopped
}

TEST(CorruptChain, BadArguments) {
  void* pcs[4];
  ucontext_t uc;
  getcontext(&uc);
  EXPECT_EQ(stackwalk_backtrace(nullptr, 4, STACKWALK_FP), STACKWALK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stackwalk_backtrace(pcs, -1, STACKWALK_FP), STACKWALK_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(stackwalk_backtrace(pcs, 0, STACKWALK_FP), 0);
  EXPECT_EQ(stackwalk_backtrace(pcs, 4, static_cast<stackwalk_method>(42)),
            STACKWALK_ERROR_METHOD_UNAVAILABLE);
  EXPECT_EQ(stackwalk_backtrace_from_context(nullptr, pcs, 4, STACKWALK_FP),
            STACKWALK_ERROR_INVALID_ARGUMENT);
#if !defined(__arm__)
  EXPECT_EQ(stackwalk_backtrace(pcs, 4, STACKWALK_EXIDX), STACKWALK_ERROR_METHOD_UNAVAILABLE);
  EXPECT_EQ(stackwalk_backtrace_from_context(&uc, pcs, 4, STACKWALK_EXIDX),
            STACKWALK_ERROR_METHOD_UNAVAILABLE);
#endif
  EXPECT_STRNE(stackwalk_strerror(STACKWALK_ERROR_NO_STACK), "unknown error");
  EXPECT_STREQ(stackwalk_strerror(-1000), "unknown error");
}

}  // namespace
