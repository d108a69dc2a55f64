// capture.h — the C++ capture API: PCs of the calling thread's stack, into storage the caller
// owns.
//
// Example:
//
//   void* pcs[64];
//   int n = stackwalk::Capture(pcs, 64);                  // pcs[0] is inside this function
//
//   auto trace = stackwalk::StackTrace<32>::Current();   // fixed capacity, no allocation
//   for (void* pc : trace) Log(pc);
//
//   // C++20: the filled prefix of a span
//   std::span<void*> frames = stackwalk::Capture(std::span<void*>(pcs));
//
// Errors are negative STACKWALK_ERROR_* codes (stackwalk.h); stackwalk_strerror() names them.
#ifndef STACKWALK_CAPTURE_H_
#define STACKWALK_CAPTURE_H_

#include <cstddef>

#include "stackwalk/stackwalk.h"

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define STACKWALK_HAS_SPAN 1
#endif

namespace stackwalk {

enum class Method : int {
  kAuto = STACKWALK_AUTO,
  kFramePointer = STACKWALK_FP,
  kEhFrame = STACKWALK_EHFRAME,
  kExidx = STACKWALK_EXIDX,
};

// Capture()
//
// Writes up to `max` PCs of the calling thread's stack into `pcs`, innermost first, skipping
// the `skip_frames` innermost callers. pcs[0] is a PC inside the function that called Capture()
// (with skip_frames == 0). Returns the number written, or a negative STACKWALK_ERROR_* code.
//
// Signal safety: async-signal-safe (no lock, no allocation).
__attribute__((noinline)) int Capture(void** pcs, int max, Method method = Method::kAuto,
                                      int skip_frames = 0);

// CaptureFromContext()
//
// Like Capture(), from the registers of a ucontext_t (the third argument of an SA_SIGINFO
// handler, of the calling thread). pcs[0] is the interrupted PC.
//
// Signal safety: async-signal-safe.
int CaptureFromContext(const void* ucontext, void** pcs, int max, Method method = Method::kAuto);

#ifdef STACKWALK_HAS_SPAN
// Capture() into a span; returns the filled prefix (empty on error).
// Signal safety: async-signal-safe.
__attribute__((always_inline)) inline std::span<void*> Capture(std::span<void*> pcs,
                                                               Method method = Method::kAuto) {
  int n = Capture(pcs.data(), static_cast<int>(pcs.size()), method, 0);
  return pcs.first(n < 0 ? 0 : static_cast<std::size_t>(n));
}
#endif

// StackTrace<N>: up to N PCs held inline; a value type with no allocation.
template <int N>
class StackTrace {
 public:
  static_assert(N > 0, "capacity must be positive");

  // The trace of the calling function: front() is a PC inside it.
  // Signal safety: async-signal-safe.
  __attribute__((always_inline)) static StackTrace Current(Method method = Method::kAuto) {
    StackTrace t;
    int n = Capture(t.pcs_, N, method, 0);
    t.size_ = n < 0 ? 0 : n;
    t.error_ = n < 0 ? n : 0;
    return t;
  }

  // The trace of a signal's interrupted context: front() is the interrupted PC.
  // Signal safety: async-signal-safe.
  static StackTrace FromContext(const void* ucontext, Method method = Method::kAuto) {
    StackTrace t;
    int n = CaptureFromContext(ucontext, t.pcs_, N, method);
    t.size_ = n < 0 ? 0 : n;
    t.error_ = n < 0 ? n : 0;
    return t;
  }

  int size() const { return size_; }
  bool empty() const { return size_ == 0; }
  static constexpr int capacity() { return N; }
  // 0, or the STACKWALK_ERROR_* code of the capture.
  int error() const { return error_; }
  void* operator[](int i) const { return pcs_[i]; }
  void* const* begin() const { return pcs_; }
  void* const* end() const { return pcs_ + size_; }
  void* const* data() const { return pcs_; }

 private:
  void* pcs_[N];
  int size_ = 0;
  int error_ = 0;
};

}  // namespace stackwalk

#endif  // STACKWALK_CAPTURE_H_
