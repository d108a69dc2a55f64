// Raw Linux system calls for the stop-the-world code (scan/stop_world*.cc): no libc, no errno.
// Each returns the kernel's result: >= 0 on success, -errno on failure. Used where libc may not
// be: in the tracer task (it shares the caller's TLS, so errno, and a stopped thread may hold any
// libc lock) and in the stop signal's handler. x86_64, aarch64 and arm (EABI, Thumb or ARM).
#ifndef STACKWALK_LEAKCHECK_SCAN_RAW_SYSCALL_H_
#define STACKWALK_LEAKCHECK_SCAN_RAW_SYSCALL_H_

#include <sys/syscall.h>

#include <cstddef>
#include <cstdint>

namespace stackwalk::leakcheck::raw {

#if defined(__x86_64__)
inline long Syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long Syscall6(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#elif defined(__arm__)
// r7 carries the number but may be the frame pointer (Thumb): saved and restored around svc.
inline long Syscall6(long n, long a, long b, long c, long d, long e, long f) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r4 __asm__("r4") = e;
  register long r5 __asm__("r5") = f;
  register long r6 __asm__("r6") = n;
  __asm__ volatile(
      "push {r7}\n\t"
      "mov r7, r6\n\t"
      "svc 0\n\t"
      "pop {r7}"
      : "+r"(r0)
      : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6)
      : "memory");
  return r0;
}
#else
#error "raw_syscall.h: unsupported architecture"
#endif

template <typename A = long, typename B = long, typename C = long, typename D = long,
          typename E = long, typename F = long>
inline long Syscall(long n, A a = 0, B b = 0, C c = 0, D d = 0, E e = 0, F f = 0) {
  return Syscall6(n, (long)a, (long)b, (long)c, (long)d, (long)e, (long)f);
}

inline int GetTid() { return static_cast<int>(Syscall(SYS_gettid)); }
inline int GetPid() { return static_cast<int>(Syscall(SYS_getpid)); }

// clone(2) without libc: the child runs fn(arg) on child_stack_top (16-byte aligned, at least 16
// bytes usable below it) and exits with its result. Returns the child's tid or -errno.
long Clone(int (*fn)(void*), void* arg, void* child_stack_top, unsigned long flags);

}  // namespace stackwalk::leakcheck::raw

#endif  // STACKWALK_LEAKCHECK_SCAN_RAW_SYSCALL_H_
