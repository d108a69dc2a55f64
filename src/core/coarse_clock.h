// CoarseNowNs(): CLOCK_MONOTONIC_COARSE in nanoseconds, for what needs a cheap clock on the capture
// and allocation paths (the vDSO answers it without a system call). Async-signal-safe.
#ifndef STACKWALK_SRC_CORE_COARSE_CLOCK_H_
#define STACKWALK_SRC_CORE_COARSE_CLOCK_H_

#include <errno.h>
#include <time.h>

#include <cstdint>

namespace stackwalk::internal {

// 0 if the clock cannot be read (a seccomp filter, an old kernel); errno is kept either way (a
// signal handler or an allocation hook may be the caller).
inline uint64_t CoarseNowNs() {
  timespec now{};
  const int saved_errno = errno;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &now) != 0) {
    errno = saved_errno;
    return 0;
  }
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_COARSE_CLOCK_H_
