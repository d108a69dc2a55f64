// The lock of reports and checks (leakcheck/fair_lock.h): served in the order asked, so a thread
// that reports without pause cannot starve a fork() or another thread's check; and a fork child
// can take it though its parent's threads were queued for it when it forked (the checker's
// fork handlers, leakcheck/session.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "leakcheck/fair_lock.h"
#include "leakcheck/session.h"
#include "leakcheck/state.h"

namespace stackwalk::leakcheck {
namespace {

void WaitUntilQueued(const FairLock& lock, uint32_t threads) {
  while (lock.queued() < threads) std::this_thread::yield();
}

TEST(FairLock, AWaiterGoesBeforeTheHolderAsksAgain) {
  // The holder releases and asks again at once, as a thread that reports without pause does:
  // the thread that was waiting gets the lock first, every time.
  FairLock lock;
  std::vector<std::string> order;  // under the lock
  for (int round = 0; round < 200; ++round) {
    order.clear();
    lock.Lock();
    order.push_back("holder");
    std::thread waiter([&] {
      FairLockHolder hold(lock);
      order.push_back("waiter");
    });
    WaitUntilQueued(lock, 2);
    lock.Unlock();
    lock.Lock();
    order.push_back("holder again");
    lock.Unlock();
    waiter.join();
    ASSERT_EQ(order, (std::vector<std::string>{"holder", "waiter", "holder again"}))
        << "round " << round;
  }
  EXPECT_EQ(lock.queued(), 0u);
}

TEST(FairLock, ThreadsAreServedInTheOrderTheyAsked) {
  FairLock lock;
  std::vector<int> order;  // under the lock
  lock.Lock();
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      FairLockHolder hold(lock);
      order.push_back(i);
    });
    WaitUntilQueued(lock, static_cast<uint32_t>(i + 2));  // thread i holds its ticket
  }
  lock.Unlock();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// Waits for `child` at most `seconds`; a child still running then is killed (a hang fails fast).
std::string ChildEnd(pid_t child, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    const pid_t got = waitpid(child, &status, WNOHANG);
    if (got == child) {
      return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                               : "signal " + std::to_string(WTERMSIG(status));
    }
    if (got < 0) return "waitpid failed";
    usleep(10000);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return "hung (killed)";
}

TEST(FairLock, AForkChildTakesTheReportLockItsParentsThreadsWereQueuedFor) {
  // The checker's fork handlers: fork() waits for ReportLock behind the holder; a second thread
  // queues behind the fork. The child has no such thread, but its copy of the lock has that
  // thread's ticket: it must still get the lock (its first report or check takes it).
  InstallForkHandlers();
  FairLock& lock = ReportLock();
  ASSERT_EQ(lock.queued(), 0u);
  lock.Lock();
  std::atomic<pid_t> child{0};
  std::thread forker([&] {
    const pid_t pid = fork();
    if (pid == 0) {
      ReportLock().Lock();
      ReportLock().Unlock();
      _exit(0);
    }
    child.store(pid);
  });
  WaitUntilQueued(lock, 2);  // the fork's prepare handler waits
  std::thread queued_behind([&] { FairLockHolder hold(lock); });
  WaitUntilQueued(lock, 3);
  lock.Unlock();
  forker.join();
  queued_behind.join();
  ASSERT_GT(child.load(), 0);
  EXPECT_EQ(ChildEnd(child.load(), 60), "exit 0");
  EXPECT_EQ(lock.queued(), 0u);
}

}  // namespace
}  // namespace stackwalk::leakcheck
