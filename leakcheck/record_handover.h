// A forked child's record region, handed to the launcher (issue 17): the launcher is not the
// child's parent and never learns of it otherwise. The launcher gives the checked program one end
// of a unix socket (record_format.h: kChildrenDescriptor, kChildrenVariable), which forked
// children inherit; each child sends, once, its own region's memfd, a pidfd of itself (the
// launcher learns of its end by it, with no race against a reused pid) and its /proc directory
// (where the launcher may read how it ended, while it is a zombie).
#ifndef STACKWALK_LEAKCHECK_RECORD_HANDOVER_H_
#define STACKWALK_LEAKCHECK_RECORD_HANDOVER_H_

#include <sys/socket.h>

#include <cstdint>

namespace stackwalk::leakcheck {

// What a child sends besides its descriptors (in this order: region, pidfd, /proc directory).
struct ChildHandover {
  int32_t pid;
};
constexpr int kHandoverDescriptors = 3;

// One handover as sent and as received: the payload, and room for the descriptors.
struct HandoverMessage {
  HandoverMessage() {
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
  }
  HandoverMessage(const HandoverMessage&) = delete;  // it points into itself
  HandoverMessage& operator=(const HandoverMessage&) = delete;

  ChildHandover what = {};
  iovec data = {&what, sizeof(what)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kHandoverDescriptors)] = {};
  msghdr message = {};
};

// The launcher's socket in this process, or -1 if there is none (no launcher, a launcher of
// another build, or the descriptor is no longer a socket). Async-signal-safe.
int HandoverSocket();

// Sends `region_fd` to the launcher through `socket` with this process's pidfd and /proc
// directory; false if it could not (the region then stays this process's alone: nothing reads
// it). Never blocks. Async-signal-safe (system calls only): called in a fork handler.
bool HandOverRegion(int socket, int region_fd);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_RECORD_HANDOVER_H_
