// The capture entry points of the C and C++ APIs. Each entry captures its own registers and walks
// from there, dropping its own frame, so that pcs[0] is inside its caller.
#include <ucontext.h>

#include "api/call_site_capture.h"
#include "core/arena.h"
#include "core/module_map.h"
#include "core/rule_cache.h"
#include "walk/native_walk.h"
#include "ehframe/debug_frame.h"
#include "stackwalk/capture.h"
#include "stackwalk/stackwalk.h"

namespace stackwalk {
namespace {

using internal::NativeRegs;
using internal::StackMemory;

int ValidateArguments(void** pcs, int max, int method) {
  if (max < 0 || (pcs == nullptr && max > 0)) return STACKWALK_ERROR_INVALID_ARGUMENT;
  return internal::CheckMethod(method);
}

// Walks from the registers of an entry point's own frame, which is dropped.
int WalkFromEntry(NativeRegs& regs, void** pcs, int max, int method, int skip) {
  StackMemory memory;
  if (!internal::InitStackFor(regs, &memory)) return STACKWALK_ERROR_NO_STACK;
  return internal::WalkToArray(method, regs, memory, pcs, max, 1 + skip);
}

int WalkFromContext(const void* ucontext, void** pcs, int max, int method) {
  if (ucontext == nullptr) return STACKWALK_ERROR_INVALID_ARGUMENT;
  int err = ValidateArguments(pcs, max, method);
  if (err != 0 || max == 0) return err;
  NativeRegs regs;
  internal::RegsFromUcontext(static_cast<const ucontext_t*>(ucontext), &regs);
  StackMemory memory;
  if (!internal::InitStackFor(regs, &memory)) {
    // The interrupted PC is known even when its stack is not.
    pcs[0] = reinterpret_cast<void*>(
        static_cast<uintptr_t>(internal::NativeArch::ReportedPc(regs.pc())));
    return 1;
  }
  // The interrupted thread's stack may have changed since its bounds were cached.
  memory.VerifyPages(regs.sp());
  return internal::WalkToArray(method, regs, memory, pcs, max, 0);
}

}  // namespace

STACKWALK_ENTRY int Capture(void** pcs, int max, Method method, int skip_frames) {
  NativeRegs regs;
  STACKWALK_CAPTURE_HERE(regs);
  int err = ValidateArguments(pcs, max, static_cast<int>(method));
  if (err != 0 || max == 0) return err;
  if (skip_frames < 0) return STACKWALK_ERROR_INVALID_ARGUMENT;
  return WalkFromEntry(regs, pcs, max, static_cast<int>(method), skip_frames);
}

int CaptureFromContext(const void* ucontext, void** pcs, int max, Method method) {
  return WalkFromContext(ucontext, pcs, max, static_cast<int>(method));
}

namespace internal {

int CaptureFromCallSite(const CallSite& site, void** pcs, int max, int method) {
  if (STACKWALK_HAS_CALL_SITE_CAPTURE == 0) return STACKWALK_ERROR_METHOD_UNAVAILABLE;
  int err = ValidateArguments(pcs, max, method);
  if (err != 0 || max == 0) return err;
  NativeRegs regs;
  regs.set_pc(site.return_address);
  regs.set_sp(site.cfa);
  regs.set_fp(site.fp);
  StackMemory memory;
  if (!InitStackFor(regs, &memory)) return STACKWALK_ERROR_NO_STACK;
  return WalkToArray(method, regs, memory, pcs, max, 0, /*pc_is_exact=*/false);
}

}  // namespace internal
}  // namespace stackwalk

extern "C" {

STACKWALK_ENTRY int stackwalk_backtrace(void** pcs, int max, stackwalk_method method) {
  stackwalk::internal::NativeRegs regs;
  STACKWALK_CAPTURE_HERE(regs);
  int err = stackwalk::ValidateArguments(pcs, max, method);
  if (err != 0 || max == 0) return err;
  return stackwalk::WalkFromEntry(regs, pcs, max, method, 0);
}

int stackwalk_backtrace_from_context(const void* ucontext, void** pcs, int max,
                                     stackwalk_method method) {
  return stackwalk::WalkFromContext(ucontext, pcs, max, method);
}

const char* stackwalk_strerror(int error) {
  switch (error) {
    case 0:
      return "success";
    case STACKWALK_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case STACKWALK_ERROR_METHOD_UNAVAILABLE:
      return "unwind method not available on this architecture";
    case STACKWALK_ERROR_METHOD_NOT_BUILT:
      return "unwind method not implemented in this build";
    case STACKWALK_ERROR_NO_STACK:
      return "stack pointer is not inside a known stack";
    default:
      return "unknown error";
  }
}

int stackwalk_method_available(stackwalk_method method) {
  return stackwalk::internal::CheckMethod(method) == 0 ? 1 : 0;
}

int stackwalk_load_debug_frames(void) {
  return stackwalk::internal::DebugFrameRegistry::Global().LoadForLoadedObjects();
}

size_t stackwalk_private_mappings(uintptr_t* ranges, size_t capacity) {
  size_t count = 0;
  stackwalk::internal::Arena::Global().ForEachMapping([&](uintptr_t lo, uintptr_t hi) {
    if (count < capacity && ranges != nullptr) {
      ranges[2 * count] = lo;
      ranges[2 * count + 1] = hi;
    }
    ++count;
  });
  return count;
}

int stackwalk_prepare(void) {
  stackwalk::internal::RuleCache::PrepareExitKey();
  // Not waiting for another thread's rebuild: called from an allocation hook inside a
  // dl_iterate_phdr callback (the loader's lock held), waiting for a rebuild that waits for that
  // lock would never end. That thread lists the objects anyway.
  bool busy = false;
  return stackwalk::internal::ModuleMap::Global().RefreshIfChangedUnlessBusy(&busy) ? 1 : 0;
}

int stackwalk_refresh_modules(void) {
  return stackwalk::internal::ModuleMap::Global().RefreshIfChanged() ? 1 : 0;
}

}  // extern "C"
