// .debug_frame loading in a forked child: a fork while another thread of the parent loads
// (holds the registry's load lock) must leave the child able to load, since the thread that held
// the lock does not exist there. A child that waits for it dies of its alarm.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "ehframe/debug_frame.h"

namespace stackwalk::internal {
namespace {

TEST(DebugFrameRegistry, AChildForkedWhileAnotherThreadLoadsCanLoad) {
  std::atomic<int> state{0};  // 1: the lock is held; 2: let go
  std::thread loader([&state] {
    DebugFrameRegistry::WithLoadLock(
        [](void* arg) {
          auto* s = static_cast<std::atomic<int>*>(arg);
          s->store(1);
          while (s->load() != 2) usleep(1000);
        },
        &state);
  });
  while (state.load() != 1) usleep(1000);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    const int added = DebugFrameRegistry::Global().LoadForLoadedObjects();
    _exit(added >= 0 ? 0 : 1);
  }
  int status = 0;
  const pid_t waited = waitpid(pid, &status, 0);
  state.store(2);
  loader.join();
  ASSERT_EQ(waited, pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child waited for the load lock another thread of its parent held at the fork";
}

}  // namespace
}  // namespace stackwalk::internal
