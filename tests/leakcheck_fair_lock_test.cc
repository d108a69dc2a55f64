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

std::atomic<int> g_signals_taken{0};
void CountSignal(int) { g_signals_taken.fetch_add(1); }

TEST(FairLock, AWaiterTakesNoSignalUntilServedButTheParkingOne) {
  // A handler run while a thread waited that never returned (_exit, whose hook reports through
  // this lock) would leave its ticket unserved and every later Lock() waiting for ever: a
  // waiter takes its signals once served. The leak check's parking signal stays open.
  struct sigaction action = {}, before_usr1 = {}, before_parking = {};
  action.sa_handler = CountSignal;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &action, &before_usr1), 0);
  ASSERT_EQ(sigaction(ParkingSignal(), &action, &before_parking), 0);
  FairLock lock;
  lock.Lock();
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    lock.Lock();
    served.store(true);
    lock.Unlock();
  });
  WaitUntilQueued(lock, 2);
  g_signals_taken.store(0);
  pthread_kill(waiter.native_handle(), ParkingSignal());
  while (g_signals_taken.load() == 0) std::this_thread::yield();  // taken while waiting
  pthread_kill(waiter.native_handle(), SIGUSR1);
  usleep(50 * 1000);  // time for a handler to run, were it not blocked
  EXPECT_EQ(g_signals_taken.load(), 1) << "SIGUSR1 was taken while the thread waited";
  EXPECT_FALSE(served.load());
  lock.Unlock();
  waiter.join();
  EXPECT_EQ(g_signals_taken.load(), 2) << "SIGUSR1 was not taken once the thread was served";
  sigaction(SIGUSR1, &before_usr1, nullptr);
  sigaction(ParkingSignal(), &before_parking, nullptr);
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
