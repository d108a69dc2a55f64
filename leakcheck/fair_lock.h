// FairLock: the leak checker's lock for reports and checks (ReportLock()), which fork()'s prepare
// handler takes too. A ticket lock: threads get it in the order they asked for it. The spin lock
// it replaces went to whichever thread swapped first after a release, and a thread asking for
// reports without pause asks again within a microsecond of its release: a fork() (or another
// thread's check) waited behind tens of reports, 44 s for one fork with a 16-thread program
// beside it, with no bound under more load. Here a waiter is served after those ahead of it.
// Waiters sleep on a futex (a report holds the lock for milliseconds to seconds). A waiter's
// ticket must be served, or every later Lock() (fork()'s too) waits for ever: a signal handler
// that ran while it waited and never returned (_exit, whose hook writes the exit report through
// this lock; siglongjmp) would abandon it, so a waiter blocks every signal but the one a leak
// check parks threads with (whose handler returns) until it is served. Allocates nothing; not
// recursive; not for signal handlers.
#ifndef STACKWALK_LEAKCHECK_FAIR_LOCK_H_
#define STACKWALK_LEAKCHECK_FAIR_LOCK_H_

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "leakcheck/scan/stop_world.h"  // ParkingSignal

namespace stackwalk::leakcheck {

class FairLock {
 public:
  void Lock() {
    sigset_t blocked, before;
    sigfillset(&blocked);
    sigdelset(&blocked, ParkingSignal());
    pthread_sigmask(SIG_BLOCK, &blocked, &before);
    const uint32_t ticket = next_.fetch_add(1, std::memory_order_seq_cst);
    for (;;) {
      const uint32_t serving = serving_.load(std::memory_order_acquire);
      if (serving == ticket) break;
      // Sleeps only while serving_ still holds what was read (the kernel compares first).
      syscall(SYS_futex, FutexWord(), FUTEX_WAIT_PRIVATE, serving, nullptr, nullptr, 0);
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  void Unlock() {
    serving_.fetch_add(1, std::memory_order_release);
    // Every sleeper wakes and looks at its ticket: few threads ever wait here.
    syscall(SYS_futex, FutexWord(), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
  // In a fork() child, on its one thread, which holds the lock (the prepare handler took it):
  // the threads queued behind it were not copied, and their tickets would never be served.
  void UnlockInForkChild() {
    const uint32_t next = serving_.load(std::memory_order_relaxed) + 1;
    next_.store(next, std::memory_order_relaxed);
    serving_.store(next, std::memory_order_release);
  }
  // Threads holding or waiting for the lock (a snapshot).
  uint32_t queued() const {
    return next_.load(std::memory_order_acquire) - serving_.load(std::memory_order_acquire);
  }

 private:
  uint32_t* FutexWord() { return reinterpret_cast<uint32_t*>(&serving_); }

  std::atomic<uint32_t> next_{0};     // the ticket the next Lock() takes
  std::atomic<uint32_t> serving_{0};  // the ticket that holds the lock
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word");
};

class FairLockHolder {
 public:
  explicit FairLockHolder(FairLock& lock) : lock_(lock) { lock_.Lock(); }
  ~FairLockHolder() { lock_.Unlock(); }
  FairLockHolder(const FairLockHolder&) = delete;
  FairLockHolder& operator=(const FairLockHolder&) = delete;

 private:
  FairLock& lock_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_FAIR_LOCK_H_
