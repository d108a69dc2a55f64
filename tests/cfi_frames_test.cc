// The CFI unwinder on hand-written frames (fixtures/cfi_frames_<arch>.S): a CFA computed from a
// callee-saved register, which the compact-rule cache cannot express, a call that is its
// function's last instruction (its return address the next function's first byte), and wrong CFI
// that must end the walk cleanly with the frames before it.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>
#include <unwind.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <string>
#include <vector>

#include "fixtures/chain_lib.h"
#include "frame_names.h"
#include "stackwalk/capture.h"
#include "stackwalk/stackwalk.h"
#if defined(CFI_FRAMES_TEST_SYMBOLIZER)
#include "stackwalk/symbolizer.h"
#endif

using stackwalk::testing::ContainsInOrder;
using stackwalk::testing::FrameNames;
using stackwalk::testing::Join;

extern "C" {
typedef void (*cfi_callback)(void*);
void cfi_cfa_from_rbx(cfi_callback fn, void* arg);
void cfi_huge_frame(cfi_callback fn, void* arg);
void cfi_bad_expression(cfi_callback fn, void* arg);
void cfi_return_address_in_register(cfi_callback fn, void* arg);
[[noreturn]] void cfi_call_last(cfi_callback fn, void* arg);
void cfi_after_call_last();
}

namespace {

constexpr int kMax = 64;

struct Traces {
  void* cold[kMax];
  int n_cold = 0;
  void* warm[kMax];
  int n_warm = 0;
  void* libgcc[kMax];
  int n_libgcc = 0;
};

_Unwind_Reason_Code CollectIp(_Unwind_Context* ctx, void* arg) {
  auto* t = static_cast<Traces*>(arg);
  if (t->n_libgcc == kMax) return _URC_END_OF_STACK;
  t->libgcc[t->n_libgcc++] = reinterpret_cast<void*>(_Unwind_GetIP(ctx));
  return _URC_NO_REASON;
}

}  // namespace

extern "C" {

// Clobbers the register the fixture's CFA depends on, so the callee's CFI must restore it.
__attribute__((noinline)) void cfi_capture_clobbering(void* arg) {
  auto* t = static_cast<Traces*>(arg);
#if defined(__x86_64__)
  __asm__ volatile("mov $0x1234, %%rbx" ::: "rbx");
#elif defined(__aarch64__)
  __asm__ volatile("mov x19, #0x1234" ::: "x19");
#endif
  t->n_cold = stackwalk_backtrace(t->cold, kMax, STACKWALK_EHFRAME);
  t->n_warm = stackwalk_backtrace(t->warm, kMax, STACKWALK_EHFRAME);  // through the rule cache
  _Unwind_Backtrace(CollectIp, t);
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void cfi_capture(void* arg) {
  auto* t = static_cast<Traces*>(arg);
  t->n_cold = stackwalk_backtrace(t->cold, kMax, STACKWALK_EHFRAME);
  t->n_warm = stackwalk_backtrace(t->warm, kMax, STACKWALK_AUTO);
  __asm__ volatile("" ::: "memory");
}

}  // extern "C"

TEST(CfiFrames, CfaFromACalleeSavedRegisterMatchesLibgcc) {
  Traces t;
  cfi_cfa_from_rbx(cfi_capture_clobbering, &t);
  auto names = FrameNames(t.cold, t.n_cold, false);
  ASSERT_GE(t.n_cold, 3) << Join(names);
  EXPECT_EQ(names[0], "cfi_capture_clobbering");
  EXPECT_EQ(names[1], "cfi_cfa_from_rbx") << Join(names);
  EXPECT_NE(names[2].find("TestBody"), std::string::npos) << Join(names);
  // Cached or not, the trace is libgcc's from the caller of the capture on.
  if (t.n_libgcc > 1 && t.libgcc[t.n_libgcc - 1] == nullptr) --t.n_libgcc;
  ASSERT_EQ(t.n_cold, t.n_libgcc);
  ASSERT_EQ(t.n_warm, t.n_libgcc);
  for (int i = 1; i < t.n_cold; ++i) {
    EXPECT_EQ(t.cold[i], t.libgcc[i]) << i;
    EXPECT_EQ(t.warm[i], t.libgcc[i]) << i;
  }
}

// A call to a function that never returns may be its caller's last instruction: the return
// address is then the next function's first byte, and only a lookup at ra - 1 (inside the call)
// finds the caller's rule and name. Each method, and EHFRAME again through its rule cache (keyed
// by the same lookup address).
namespace {
struct LastCallTraces {
  void* ehframe[kMax];
  int n_ehframe = 0;
  void* cached[kMax];
  int n_cached = 0;
  void* automatic[kMax];
  int n_automatic = 0;
};
std::jmp_buf g_after_last_call;
}  // namespace

extern "C" [[noreturn]] __attribute__((noinline)) void cfi_capture_and_leave(void* arg) {
  auto* t = static_cast<LastCallTraces*>(arg);
  t->n_ehframe = stackwalk_backtrace(t->ehframe, kMax, STACKWALK_EHFRAME);
  t->n_cached = stackwalk_backtrace(t->cached, kMax, STACKWALK_EHFRAME);
  t->n_automatic = stackwalk_backtrace(t->automatic, kMax, STACKWALK_AUTO);
  std::longjmp(g_after_last_call, 1);
}

TEST(CfiFrames, ACallThatEndsItsFunctionUnwindsByItsCallersRule) {
  LastCallTraces t;
  if (setjmp(g_after_last_call) == 0) cfi_call_last(cfi_capture_and_leave, &t);
  for (auto [pcs, n] : {std::pair<void**, int>{t.ehframe, t.n_ehframe},
                        {t.cached, t.n_cached},
                        {t.automatic, t.n_automatic}}) {
    auto names = FrameNames(pcs, n, false);
    ASSERT_GE(n, 3) << Join(names);
    EXPECT_EQ(names[0], "cfi_capture_and_leave") << Join(names);
    ASSERT_EQ(pcs[1], reinterpret_cast<void*>(&cfi_after_call_last))
        << "the fixture's call is not its function's last instruction";
    EXPECT_EQ(names[1], "cfi_call_last") << Join(names);
    EXPECT_NE(names[2].find("TestBody"), std::string::npos) << Join(names);
  }
#if defined(CFI_FRAMES_TEST_SYMBOLIZER)
  // The symbolizer names a return address by its call too (dladdr above was given ra - 1).
  stackwalk::Symbolizer symbolizer;
  bool named = false;
  const auto frames = symbolizer.SymbolizeTrace(t.ehframe, t.n_ehframe);
  for (const stackwalk::SymbolizedFrame& frame : frames) {
    if (frame.index != 1) continue;
    EXPECT_EQ(frame.function, "cfi_call_last");
    EXPECT_EQ(frame.pc, reinterpret_cast<uint64_t>(&cfi_after_call_last));
    named = true;
  }
  EXPECT_TRUE(named);
#endif
}

class WrongCfi : public ::testing::TestWithParam<int> {};

TEST_P(WrongCfi, EndsTheWalkAtTheBadFrame) {
  static void (*const kFixtures[])(cfi_callback, void*) = {
      cfi_huge_frame, cfi_bad_expression, cfi_return_address_in_register};
  static const char* const kNames[] = {"cfi_huge_frame", "cfi_bad_expression",
                                       "cfi_return_address_in_register"};
  Traces t;
  kFixtures[GetParam()](cfi_capture, &t);
  for (auto [pcs, n] : {std::pair<void**, int>{t.cold, t.n_cold}, {t.warm, t.n_warm}}) {
    auto names = FrameNames(pcs, n, false);
    ASSERT_GE(n, 2) << Join(names);
    EXPECT_EQ(names[0], "cfi_capture") << Join(names);
    EXPECT_EQ(names[1], kNames[GetParam()]) << Join(names);
    // Nothing invented past the bad frame (AUTO may fall back to the frame pointer, which
    // these fixtures do not keep either).
    EXPECT_LE(n, 3) << Join(names);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WrongCfi, ::testing::Values(0, 1, 2));

// An object whose .eh_frame_hdr has no search table (the linker leaves it out when it cannot
// sort the FDEs): the unwinder walks .eh_frame instead. Made by patching a copy of a fixture
// library: table and FDE-count encodings set to DW_EH_PE_omit.
extern "C" __attribute__((noinline)) int cfi_capture_from_library(void* arg) {
  auto* t = static_cast<Traces*>(arg);
  t->n_cold = stackwalk_backtrace(t->cold, kMax, STACKWALK_EHFRAME);
  __asm__ volatile("" ::: "memory");
  return t->n_cold;
}

TEST(CfiFrames, LibraryWithoutSearchTableUsesALinearWalk) {
  std::ifstream in(CHAIN_LIB_EH_PATH, std::ios::binary);
  ASSERT_TRUE(in);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ElfW(Ehdr) eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  bool patched = false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
    if (ph.p_type != PT_GNU_EH_FRAME) continue;
    ASSERT_EQ(bytes[ph.p_offset], 1);  // version
    bytes[ph.p_offset + 2] = static_cast<char>(0xff);  // fde_count_enc: omit
    bytes[ph.p_offset + 3] = static_cast<char>(0xff);  // table_enc: omit
    patched = true;
  }
  ASSERT_TRUE(patched);
  char path[] = "/tmp/stackwalk_no_table_XXXXXX.so";
  int fd = mkstemps(path, 3);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  ASSERT_NE(entry, nullptr);
  Traces t;
  entry(cfi_capture_from_library, &t);
  auto names = FrameNames(t.cold, t.n_cold, false);
  ASSERT_GE(t.n_cold, 4) << Join(names);
  EXPECT_EQ(names[0], "cfi_capture_from_library");
  EXPECT_EQ(names[1], "chain_lib_middle") << Join(names);
  EXPECT_EQ(names[2], "chain_lib_entry") << Join(names);
  EXPECT_NE(names[3].find("TestBody"), std::string::npos) << Join(names);
  dlclose(lib);
}

// A library whose unwind information is only in .debug_frame: invisible to the capture path
// until stackwalk_load_debug_frames() indexes it, exact afterwards.
TEST(CfiFrames, DebugFrameOnlyLibraryAfterLoadingItsTables) {
  void* lib = dlopen(CHAIN_LIB_DEBUG_FRAME_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  // An earlier test may have unloaded a copy of this code from the same address, its compiled
  // rules still cached: code reloaded in place needs a refresh (docs/limits.md).
  stackwalk_refresh_modules();
  auto entry = reinterpret_cast<chain_lib_entry_fn>(dlsym(lib, "chain_lib_entry"));
  ASSERT_NE(entry, nullptr);

  Traces before;
  entry(cfi_capture_from_library, &before);
  auto names = FrameNames(before.cold, before.n_cold, false);
  ASSERT_GE(before.n_cold, 2) << Join(names);
  EXPECT_EQ(names[1], "chain_lib_middle") << Join(names);
  EXPECT_EQ(before.n_cold, 2) << "no .eh_frame covers the library: the walk must stop there, "
                              << Join(names);

  EXPECT_GE(stackwalk_load_debug_frames(), 1);
  EXPECT_EQ(stackwalk_load_debug_frames(), 0) << "loading twice must not add tables";
  Traces after;
  entry(cfi_capture_from_library, &after);
  names = FrameNames(after.cold, after.n_cold, false);
  ASSERT_GE(after.n_cold, 4) << Join(names);
  EXPECT_EQ(names[1], "chain_lib_middle");
  EXPECT_EQ(names[2], "chain_lib_entry") << Join(names);
  EXPECT_NE(names[3].find("TestBody"), std::string::npos) << Join(names);
  dlclose(lib);
}
