// The program's forked children's record regions, as the launcher keeps them (issue 17). Each
// child the checker forks hands the launcher its own region through a unix socket
// (leakcheck/record_handover.h), with a pidfd of itself and its /proc directory. The launcher is
// not the children's parent: it learns that one ended when its pidfd says so, and how it ended
// only where the kernel tells a non-parent (PIDFD_GET_INFO's exit code, Linux 6.15; or the
// zombie's /proc/PID/stat before its parent reaps it); otherwise it does not know whether a
// child that left no report at exit was killed by a signal or ended by a raw exit.
#ifndef STACKWALK_TOOLS_LEAKCHECK_CHILDREN_H_
#define STACKWALK_TOOLS_LEAKCHECK_CHILDREN_H_

#include <poll.h>
#include <sys/types.h>

#include <functional>
#include <vector>

namespace stackwalk::leakcheck {

class ForkedChildren {
 public:
  ForkedChildren() = default;
  ~ForkedChildren();
  ForkedChildren(const ForkedChildren&) = delete;
  ForkedChildren& operator=(const ForkedChildren&) = delete;

  // Makes the socket; false if it could not (the children then keep private tables, unreported).
  bool Open();
  // In the program's process, before its exec: its end of the socket at the descriptor the
  // preload looks for (record_format.h), named in the environment.
  void HandToProgram() const;
  // In the launcher after the fork: the program's end closed.
  void AfterFork();

  // The descriptors to wait on: the socket, and each child's pidfd.
  void AddPollFds(std::vector<pollfd>* fds) const;

  struct Ended {
    pid_t pid;
    int region;            // the child's record region (a memfd)
    bool status_known;     // whether the kernel told how it ended
    int status;            // as waitpid gives it, if known
  };
  // Takes the children handed over since (never blocks), then calls `ended` for each child that
  // has ended (its pidfd readable) and forgets it.
  void Collect(const std::function<void(const Ended&)>& ended);
  // Forgets the children whose record says they exec'd (record::kExecuted) and keeps no report
  // of them: without --follow-exec the program a forked child execs is not checked, so its end
  // would report nothing and waiting for it would wait for nothing (a shell's `sleep 60 &`). An
  // exec that fails after the launcher looked loses the child's record should it then be killed;
  // its report at exit still comes through the dump pipe.
  void ForgetExecuted();
  // Whether a child handed over has not been seen to end, or one may still hand one over (the
  // socket has a writer left).
  bool Waiting() const { return !children_.empty() || socket_[0] >= 0; }

 private:
  struct Child {
    pid_t pid;
    int region;
    int pidfd;
    int proc;  // its /proc directory: its stat while a zombie, nothing once reaped
  };
  void Receive();
  static bool EndStatus(const Child& child, int* status);
  int socket_[2] = {-1, -1};
  std::vector<Child> children_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_TOOLS_LEAKCHECK_CHILDREN_H_
