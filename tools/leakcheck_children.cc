#include "leakcheck_children.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "leakcheck/record_format.h"
#include "leakcheck/record_handover.h"

namespace stackwalk::leakcheck {
namespace {

// PIDFD_GET_INFO (linux/pidfd.h, Linux 6.15), which Debian 12's headers lack: a pidfd's process,
// and with PIDFD_INFO_EXIT its exit status once it was reaped, to anyone holding the pidfd.
struct PidfdInfo {
  uint64_t mask;
  uint64_t cgroupid;
  uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  int32_t exit_code;
};
static_assert(sizeof(PidfdInfo) == 64, "PIDFD_INFO_SIZE_VER0");
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);
constexpr uint64_t kPidfdInfoExit = 1u << 3;

bool ExitFromPidfd(int pidfd, int* status) {
  PidfdInfo info = {};
  info.mask = kPidfdInfoExit;
  if (ioctl(pidfd, kPidfdGetInfo, &info) != 0 || (info.mask & kPidfdInfoExit) == 0) return false;
  *status = info.exit_code;
  return true;
}

// A zombie's /proc/PID/stat: its last field is its exit status (Linux 3.5).
bool ExitFromStat(int proc, int* status) {
  const int fd = openat(proc, "stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* end_of_name = std::strrchr(text, ')');
  const char* last = std::strrchr(text, ' ');
  if (end_of_name == nullptr || last == nullptr || last < end_of_name ||
      std::strstr(end_of_name, ") Z ") != end_of_name) {
    return false;  // not a zombie (yet): its status is not there
  }
  *status = std::atoi(last + 1);
  return true;
}

}  // namespace

ForkedChildren::~ForkedChildren() {
  for (const Child& c : children_) {
    close(c.region);
    close(c.pidfd);
    close(c.proc);
  }
  for (int fd : socket_) {
    if (fd >= 0) close(fd);
  }
}

bool ForkedChildren::Open() {
  return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, socket_) == 0 &&
         fcntl(socket_[0], F_SETFL, O_NONBLOCK) == 0;
}

void ForkedChildren::HandToProgram() const {
  if (socket_[1] < 0 || dup2(socket_[1], record::kChildrenDescriptor) != record::kChildrenDescriptor) {
    return;
  }
  setenv(record::kChildrenVariable, std::to_string(record::kChildrenDescriptor).c_str(), 1);
}

void ForkedChildren::AfterFork() {
  if (socket_[1] >= 0) close(socket_[1]);
  socket_[1] = -1;
  // Three descriptors per child alive: the launcher's own limit raised as far as it may go (the
  // program's is left as it was). A handover past it is dropped (recvmsg truncates it).
  rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

void ForkedChildren::AddPollFds(std::vector<pollfd>* fds) const {
  if (socket_[0] >= 0) fds->push_back({socket_[0], POLLIN, 0});
  for (const Child& c : children_) fds->push_back({c.pidfd, POLLIN, 0});
}

void ForkedChildren::Receive() {
  while (socket_[0] >= 0) {
    HandoverMessage in;
    msghdr& message = in.message;
    const ssize_t n = recvmsg(socket_[0], &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // no writer is left: no child will hand one over any more
      close(socket_[0]);
      socket_[0] = -1;
    }
    if (n <= 0) return;
    int fds[kHandoverDescriptors] = {-1, -1, -1};
    size_t got = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      std::memcpy(fds, CMSG_DATA(c), sizeof(int) * std::min<size_t>(got, kHandoverDescriptors));
    }
    if (n != sizeof(in.what) || got != kHandoverDescriptors || in.what.pid <= 0) {
      for (int fd : fds) {
        if (fd >= 0) close(fd);
      }
      continue;  // not a child's handover: nothing to keep
    }
    children_.push_back({in.what.pid, fds[0], fds[1], fds[2]});
  }
}

bool ForkedChildren::EndStatus(const Child& child, int* status) {
  // The pidfd's answer once it is reaped, the zombie's before: one of the two, whichever comes
  // first (the stat read between them fails once the parent has reaped it).
  return ExitFromPidfd(child.pidfd, status) || ExitFromStat(child.proc, status) ||
         ExitFromPidfd(child.pidfd, status);
}

void ForkedChildren::Collect(const std::function<void(const Ended&)>& ended) {
  Receive();
  for (size_t i = 0; i < children_.size();) {
    const Child c = children_[i];
    pollfd done = {c.pidfd, POLLIN, 0};
    if (poll(&done, 1, 0) != 1 || (done.revents & (POLLIN | POLLHUP)) == 0) {
      ++i;
      continue;
    }
    Ended end = {c.pid, c.region, false, 0};
    end.status_known = EndStatus(c, &end.status);
    ended(end);
    close(c.region);
    close(c.pidfd);
    close(c.proc);
    children_.erase(children_.begin() + static_cast<long>(i));
  }
}

void ForkedChildren::ForgetExecuted() {
  for (size_t i = 0; i < children_.size();) {
    const Child c = children_[i];
    uint64_t end = record::kNotEnded;
    const off_t at = static_cast<off_t>(offsetof(record::Header, exit_reported));
    if (pread(c.region, &end, sizeof(end), at) != static_cast<ssize_t>(sizeof(end)) ||
        end != record::kExecuted) {
      ++i;
      continue;
    }
    close(c.region);
    close(c.pidfd);
    close(c.proc);
    children_.erase(children_.begin() + static_cast<long>(i));
  }
}

}  // namespace stackwalk::leakcheck
