#include "leakcheck/record_handover.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "leakcheck/record_format.h"

namespace stackwalk::leakcheck {

int HandoverSocket() {
  // The variable is only set by the launcher, to the fixed descriptor; getenv is safe after fork
  // (no allocation), and the number is checked to still be a socket.
  const char* text = getenv(record::kChildrenVariable);
  if (text == nullptr || std::atoi(text) != record::kChildrenDescriptor) return -1;
  struct stat st;
  if (fstat(record::kChildrenDescriptor, &st) != 0 || !S_ISSOCK(st.st_mode)) return -1;
  return record::kChildrenDescriptor;
}

bool HandOverRegion(int socket, int region_fd) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  const int proc = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool sent = false;
  if (pidfd >= 0 && proc >= 0) {
    HandoverMessage out;
    out.what.pid = static_cast<int32_t>(getpid());
    cmsghdr* rights = CMSG_FIRSTHDR(&out.message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * kHandoverDescriptors);
    const int fds[kHandoverDescriptors] = {region_fd, pidfd, proc};
    std::memcpy(CMSG_DATA(rights), fds, sizeof(fds));
    sent = sendmsg(socket, &out.message, MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof(out.what);
  }
  if (pidfd >= 0) close(pidfd);
  if (proc >= 0) close(proc);
  return sent;
}

}  // namespace stackwalk::leakcheck
