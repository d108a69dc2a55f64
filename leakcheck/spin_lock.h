// SpinLock: the leak checker's lock for its tables' shards and the stack table's arena, which
// must not allocate (pthread mutexes do not either, but a spin lock keeps the allocation hooks'
// path to one atomic exchange when uncontended). Held briefly: not fair (the report's lock, held
// long, is: fair_lock.h). Not recursive.
#ifndef STACKWALK_LEAKCHECK_SPIN_LOCK_H_
#define STACKWALK_LEAKCHECK_SPIN_LOCK_H_

#include <sched.h>

#include <atomic>

namespace stackwalk::leakcheck {

class SpinLock {
 public:
  void Lock() {
    if (__builtin_expect(flag_.exchange(true, std::memory_order_acquire), false)) LockContended();
  }
  // True if it took the lock; false, at once, if another holds it.
  bool TryLock() { return !flag_.exchange(true, std::memory_order_acquire); }
  void Unlock() { flag_.store(false, std::memory_order_release); }

 private:
  // Out of line: the waiting loop's call (sched_yield) would make every caller save and reload
  // its registers around the uncontended exchange too.
  __attribute__((noinline)) void LockContended() {
    do {
      while (flag_.load(std::memory_order_relaxed)) sched_yield();
    } while (flag_.exchange(true, std::memory_order_acquire));
  }

  std::atomic<bool> flag_{false};
};

class SpinLockHolder {
 public:
  enum Adopt { kAdopt };  // the lock is held already: the holder only releases it
  explicit SpinLockHolder(SpinLock& lock) : lock_(lock) { lock_.Lock(); }
  SpinLockHolder(SpinLock& lock, Adopt) : lock_(lock) {}
  ~SpinLockHolder() { lock_.Unlock(); }
  SpinLockHolder(const SpinLockHolder&) = delete;
  SpinLockHolder& operator=(const SpinLockHolder&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SPIN_LOCK_H_
