// Capture from a call site: the walk starts at the frame that made a call, given what the called
// function knows of it (its own return address, its CFA and the frame pointer it saved), instead
// of at the capturing function's own frame. An allocation hook captures this way so that none
// of its own frames is stepped through: on a CFI walk each costs a rule lookup and a step, and
// the hook's frames are at a new depth whenever the program's allocation site is, so the frame
// log rarely serves them. x86_64 and aarch64 (a frame record at the frame pointer: psABI §3.6.2,
// AAPCS64 §6.2.3; aarch64 with GCC only, below); elsewhere the hook captures from its own frame
// (stackwalk::Capture).
#ifndef STACKWALK_SRC_API_CALL_SITE_CAPTURE_H_
#define STACKWALK_SRC_API_CALL_SITE_CAPTURE_H_

#include <cstdint>

namespace stackwalk::internal {

// What a called function knows of its caller's frame.
struct CallSite {
  uintptr_t return_address;  // where the call returns to: the caller's pc, not exact
  uintptr_t cfa;             // the caller's sp at the call (the callee's CFA)
  uintptr_t fp;              // the caller's frame pointer, as the callee saved it
};

// Not with clang on aarch64: its __builtin_dwarf_cfa() there is x29, the frame record's address,
// not the caller's sp at the call (clang 14; GCC's is the CFA on both, clang's on x86_64 too).
#if defined(__x86_64__) || (defined(__aarch64__) && !defined(__clang__))
#define STACKWALK_HAS_CALL_SITE_CAPTURE 1
// The call site of the function this expands in, which must keep a frame record (built with
// -fno-omit-frame-pointer, as the library is): a macro, since the builtins describe the function
// they are evaluated in.
#define STACKWALK_CALL_SITE()                                                         \
  (::stackwalk::internal::CallSite{                                                   \
      reinterpret_cast<uintptr_t>(__builtin_return_address(0)),                       \
      reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa()),                             \
      *static_cast<const uintptr_t*>(__builtin_frame_address(0))})
#else
#define STACKWALK_HAS_CALL_SITE_CAPTURE 0
#define STACKWALK_CALL_SITE() (::stackwalk::internal::CallSite{0, 0, 0})
#endif

// Writes the call site's pc (its return address) and then the pc of each caller into
// pcs[0..max); returns how many, or a negative STACKWALK_ERROR_* code (as stackwalk::Capture;
// STACKWALK_ERROR_METHOD_UNAVAILABLE where STACKWALK_HAS_CALL_SITE_CAPTURE is 0).
// Signal safety: async-signal-safe.
int CaptureFromCallSite(const CallSite& site, void** pcs, int max, int method);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_API_CALL_SITE_CAPTURE_H_
