// The unwinders on real code: this file is compiled several ways and checks the exact chain of
// function names through its own code, through a library opened with dlopen after start-up
// and a callback from it, and from a signal handler and its ucontext_t. CHAIN_METHOD picks the
// method: the frame-pointer variants are built with frame pointers at -O0 and -O2 (and on
// arm32 as ARM and as Thumb code), the CFI variants at -O2 -fomit-frame-pointer.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixtures/chain_lib.h"
#include "frame_names.h"
#include "stackwalk/capture.h"
#include "stackwalk/cursor.h"
#include "stackwalk/stackwalk.h"

using stackwalk::testing::ContainsInOrder;
using stackwalk::testing::FrameNames;
using stackwalk::testing::Join;

#ifndef CHAIN_METHOD
#define CHAIN_METHOD STACKWALK_FP
#endif

namespace {

constexpr int kMax = 64;
constexpr stackwalk_method kMethod = CHAIN_METHOD;
constexpr stackwalk::Method kCppMethod = static_cast<stackwalk::Method>(CHAIN_METHOD);
// The frame-pointer method cannot see the function a signal interrupted from inside the
// handler (it never got a return address); CFI can, through the signal frame.
constexpr bool kUsesCfi = CHAIN_METHOD != STACKWALK_FP;

struct Captured {
  void* pcs[kMax];
  int n = 0;
  void* from_context[kMax];
  int n_from_context = 0;
};

bool IsTestBody(const std::string& name) { return name.find("TestBody") != std::string::npos; }

}  // namespace

// The functions whose names the tests expect. extern "C" for plain dladdr names; the empty asm
// after each call keeps it a real call rather than a tail call.
extern "C" {

__attribute__((noinline)) int chain_level3(Captured* c) {
  c->n = stackwalk_backtrace(c->pcs, kMax, kMethod);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int chain_level2(Captured* c) {
  int r = chain_level3(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int chain_level1(Captured* c) {
  int r = chain_level2(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int chain_capture_cpp(Captured* c) {
  c->n = stackwalk::Capture(c->pcs, kMax, kCppMethod);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int chain_skip_level3(Captured* c) {
  c->n = stackwalk::Capture(c->pcs, 2, kCppMethod, 1);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int chain_skip_level2(Captured* c) {
  int r = chain_skip_level3(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int chain_skip_level1(Captured* c) {
  int r = chain_skip_level2(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int chain_cursor(Captured* c) {
  stackwalk::Cursor cursor = stackwalk::Cursor::Here(kCppMethod);
  c->n = 0;
  if (!cursor.ok()) return -1;
  do {
    c->pcs[c->n++] = reinterpret_cast<void*>(cursor.pc());
  } while (c->n < kMax && cursor.Step());
  __asm__ volatile("" ::: "memory");
  return c->n;
}

__attribute__((noinline)) int chain_capture_callback(void* arg) {
  auto* c = static_cast<Captured*>(arg);
  c->n = stackwalk_backtrace(c->pcs, kMax, kMethod);
  __asm__ volatile("" ::: "memory");
  return c->n;
}

// ---- a fault three calls deep, caught by a handler that unwinds ----

static Captured* g_fault_capture;
static sigjmp_buf g_fault_return;
static volatile uintptr_t g_bad_address = 16;

void chain_on_fault(int, siginfo_t*, void* ucontext) {
  Captured* c = g_fault_capture;
  c->n = stackwalk_backtrace(c->pcs, kMax, kMethod);
  c->n_from_context = stackwalk_backtrace_from_context(ucontext, c->from_context, kMax,
                                                       kMethod);
  siglongjmp(g_fault_return, 1);
}

static int (*volatile g_opaque)(Captured*) = nullptr;

// Not a leaf: compilers set up no frame record in a leaf that needs no stack, even with
// -fno-omit-frame-pointer, and the frame-pointer method cannot see such a frame's caller.
__attribute__((noinline)) int chain_fault_level3(Captured* c) {
  int v = *reinterpret_cast<volatile int*>(g_bad_address);
  __asm__ volatile("" ::: "memory");
  if (g_opaque != nullptr) v += g_opaque(c);
  return v;
}

__attribute__((noinline)) int chain_fault_level2(Captured* c) {
  int r = chain_fault_level3(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int chain_fault_level1(Captured* c) {
  int r = chain_fault_level2(c);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

}  // extern "C"

// The tests stay outside the anonymous namespace: their TestBody symbols must be exported
// (-rdynamic) for dladdr to name the frame below the chain.

// GCC's Thumb frames keep r7 below the locals, so finding the record is a heuristic scan
// (fp_step_arm.h): there the fixture chain must be exact, the frames past it may not be.
#if defined(__thumb__) && CHAIN_METHOD == STACKWALK_FP
constexpr bool kHeuristicFramePointer = true;
#else
constexpr bool kHeuristicFramePointer = false;
#endif

static void ExpectChain(const std::vector<std::string>& names, const std::vector<std::string>& want) {
  ASSERT_GE(names.size(), want.size()) << Join(names);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(names[i], want[i]) << Join(names);
  if (kHeuristicFramePointer) return;
  ASSERT_GT(names.size(), want.size()) << Join(names);
  EXPECT_TRUE(IsTestBody(names[want.size()])) << Join(names);
}

TEST(Chain, OwnCodeThroughCApi) {
  Captured c;
  chain_level1(&c);
  ASSERT_GT(c.n, 0) << stackwalk_strerror(c.n);
  ExpectChain(FrameNames(c.pcs, c.n, false), {"chain_level3", "chain_level2", "chain_level1"});
}

TEST(Chain, CppCaptureStartsInCaller) {
  Captured c;
  chain_capture_cpp(&c);
  ASSERT_GT(c.n, 0);
  ExpectChain(FrameNames(c.pcs, c.n, false), {"chain_capture_cpp"});
}

TEST(Chain, CursorMatchesCapture) {
  Captured c;
  chain_cursor(&c);
  ASSERT_GT(c.n, 0);
  auto names = FrameNames(c.pcs, c.n, false);
  if (kHeuristicFramePointer) {
    // The Cursor object itself, a local of chain_cursor, holds {stack address, code address}
    // pairs that the Thumb scan may take for the record: only the first frame is certain.
    EXPECT_EQ(names[0], "chain_cursor") << Join(names);
    return;
  }
  ExpectChain(names, {"chain_cursor"});
}

TEST(Chain, SkipFramesAndMaxAreHonoured) {
  Captured c;
  chain_skip_level1(&c);  // captures 2 frames, skipping chain_skip_level3
  ASSERT_EQ(c.n, 2);
  auto names = FrameNames(c.pcs, c.n, false);
  EXPECT_EQ(names, (std::vector<std::string>{"chain_skip_level2", "chain_skip_level1"}));
  void* one[1];
  EXPECT_EQ(stackwalk::Capture(one, 1, kCppMethod), 1);
  EXPECT_EQ(stackwalk::Capture(one, 1, kCppMethod, -1),
            STACKWALK_ERROR_INVALID_ARGUMENT);
}

TEST(Chain, ThroughLibraryOpenedAfterStartup) {
  void* lib = dlopen(CHAIN_LIB_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  ASSERT_NE(entry, nullptr);
  Captured c;
  entry(chain_capture_callback, &c);
  ASSERT_GT(c.n, 0);
  ExpectChain(FrameNames(c.pcs, c.n, false),
              {"chain_capture_callback", "chain_lib_middle", "chain_lib_entry"});
  dlclose(lib);
}

class Signal : public ::testing::TestWithParam<bool> {};

TEST_P(Signal, FromHandlerAndFromItsContext) {
  const bool on_altstack = GetParam();
  std::vector<char> altstack(64 * 1024);
  stack_t ss{}, old_ss{};
  if (on_altstack) {
    ss.ss_sp = altstack.data();
    ss.ss_size = altstack.size();
    ASSERT_EQ(sigaltstack(&ss, &old_ss), 0);
  }
  struct sigaction sa {}, old_sa{};
  sa.sa_sigaction = chain_on_fault;
  sa.sa_flags = SA_SIGINFO | (on_altstack ? SA_ONSTACK : 0);
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGSEGV, &sa, &old_sa), 0);

  Captured c;
  g_fault_capture = &c;
  if (sigsetjmp(g_fault_return, 1) == 0) chain_fault_level1(&c);
  sigaction(SIGSEGV, &old_sa, nullptr);
  if (on_altstack) {
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }

  // From the context: the interrupted PC first, then the exact chain.
  ASSERT_GT(c.n_from_context, 0) << stackwalk_strerror(c.n_from_context);
  ExpectChain(FrameNames(c.from_context, c.n_from_context, true),
              {"chain_fault_level3", "chain_fault_level2", "chain_fault_level1"});

  // From inside the handler: the handler first. The frame-pointer chain crosses the kernel's
  // signal frame on x86_64 and aarch64 (the handler's saved frame pointer is the interrupted
  // one), losing only the interrupted function itself, which never got a return address.
  ASSERT_GT(c.n, 0) << stackwalk_strerror(c.n);
  auto names = FrameNames(c.pcs, c.n, false);
  EXPECT_EQ(names[0], "chain_on_fault") << Join(names);
  if (kUsesCfi) {
    EXPECT_TRUE(ContainsInOrder(names, {"chain_on_fault", "chain_fault_level3",
                                        "chain_fault_level2", "chain_fault_level1"}))
        << Join(names);
  }
#if defined(__x86_64__) || defined(__aarch64__)
  EXPECT_TRUE(ContainsInOrder(names, {"chain_on_fault", "chain_fault_level2", "chain_fault_level1"}))
      << Join(names);
#endif
}

INSTANTIATE_TEST_SUITE_P(Stacks, Signal, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "OnAltStack" : "OnThreadStack"; });
