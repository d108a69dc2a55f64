#include "core/readable_pages.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace stackwalk::internal {

uint64_t ReadablePages(uint64_t first, uint64_t count) {
  const int saved_errno = errno;
  uint64_t readable = 0;
  for (; readable < count; ++readable) {
    const long r = syscall(SYS_rt_sigprocmask, ~0L,
                           static_cast<uintptr_t>(first + readable * kProbePage), nullptr,
                           sizeof(uint64_t));
    if (r != -1 || errno != EINVAL) break;
  }
  errno = saved_errno;
  return readable;
}

}  // namespace stackwalk::internal
