/*
 * stackwalk.h — the C API of stackwalk: capture the PCs of the current call stack, or of the
 * stack interrupted by a signal, with a chosen unwind method.
 *
 * Example:
 *
 *   void *pcs[64];
 *   int n = stackwalk_backtrace(pcs, 64, STACKWALK_AUTO);
 *   if (n < 0) fprintf(stderr, "unwind failed: %s\n", stackwalk_strerror(n));
 *
 * In a SIGSEGV handler installed with SA_SIGINFO:
 *
 *   void on_segv(int sig, siginfo_t *info, void *uc) {
 *     void *pcs[64];
 *     int n = stackwalk_backtrace_from_context(uc, pcs, 64, STACKWALK_AUTO);
 *     ... write pcs[0..n) to an fd ...
 *   }
 *
 * Valid C (C99 and later) and C++.
 */
#ifndef STACKWALK_STACKWALK_H_
#define STACKWALK_STACKWALK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The unwind method. STACKWALK_AUTO picks the best one built for this architecture. */
typedef enum {
  STACKWALK_AUTO = 0,
  STACKWALK_FP = 1,      /* frame-pointer chain (rbp on x86_64, x29 on aarch64, r11/r7 on arm32) */
  STACKWALK_EHFRAME = 2, /* .eh_frame CFI */
  STACKWALK_EXIDX = 3    /* .ARM.exidx (EHABI), 32-bit ARM only */
} stackwalk_method;

/* Negative return values of the capture calls. */
enum {
  /* pcs is NULL while max > 0, max < 0, or ucontext is NULL. */
  STACKWALK_ERROR_INVALID_ARGUMENT = -1,
  /* The method does not exist on this architecture (STACKWALK_EXIDX off 32-bit ARM) or is not a
   * stackwalk_method value. */
  STACKWALK_ERROR_METHOD_UNAVAILABLE = -2,
  /* The method exists for this architecture but this build of stackwalk does not implement it yet. */
  STACKWALK_ERROR_METHOD_NOT_BUILT = -3,
  /* The starting stack pointer is not inside any stack stackwalk can find (thread stack or
   * sigaltstack), so nothing beyond the first PC can be read safely. */
  STACKWALK_ERROR_NO_STACK = -4
};

/* stackwalk_backtrace()
 *
 * Writes up to `max` program counters of the calling thread's stack into `pcs`, innermost first,
 * and returns how many it wrote, or a negative STACKWALK_ERROR_* code. pcs[0] is a PC inside the
 * function that called stackwalk_backtrace (like glibc's backtrace()); every later entry is a
 * return address. A corrupt or unreadable frame ends the walk with the frames found before it.
 * max == 0 returns 0.
 *
 * Signal safety: async-signal-safe. Takes no lock, never allocates, opens no file except
 * /proc/self/maps the first time a thread's stack bounds are needed (open/read/close only). */
int stackwalk_backtrace(void **pcs, int max, stackwalk_method method);

/* stackwalk_backtrace_from_context()
 *
 * Like stackwalk_backtrace(), but starts from the registers saved in `ucontext` (a ucontext_t*,
 * e.g. the third argument of an SA_SIGINFO handler). pcs[0] is the interrupted PC itself; later
 * entries are return addresses. The context must belong to the calling thread (its stack is the
 * one read).
 *
 * Signal safety: async-signal-safe, as stackwalk_backtrace(). */
int stackwalk_backtrace_from_context(const void *ucontext, void **pcs, int max,
                                     stackwalk_method method);

/* stackwalk_strerror()
 *
 * Returns a static, NUL-terminated description of a STACKWALK_ERROR_* code ("unknown error" for
 * other values). The string lives forever.
 *
 * Signal safety: async-signal-safe. */
const char *stackwalk_strerror(int error);

/* stackwalk_method_available()
 *
 * Returns 1 if `method` can capture in this build on this architecture, 0 otherwise.
 *
 * Signal safety: async-signal-safe. */
int stackwalk_method_available(stackwalk_method method);

/* stackwalk_refresh_modules()
 *
 * Brings stackwalk's snapshot of the loaded objects up to date: rebuilds it if a library was
 * loaded or unloaded since the last snapshot (glibc's dlpi_adds/dlpi_subs), and does nothing
 * otherwise. Returns 1 if it rebuilt, 0 if nothing changed or the rebuild could not be completed
 * (no memory for a new snapshot: the previous one stays in use); it returns no error code.
 * Call it after dlopen/dlclose if you want the change seen before the next non-signal lookup.
 *
 * Signal safety: NOT async-signal-safe (calls dl_iterate_phdr, which takes the loader lock).
 * Never call it from a signal handler. */
int stackwalk_refresh_modules(void);

/* stackwalk_prepare()
 *
 * Does now what libstackwalk does when it is loaded: lists the loaded objects (as
 * stackwalk_refresh_modules(), whose return value it gives) and makes the key that gives each
 * thread's unwind caches back when it exits. For a caller that captures before libstackwalk's
 * constructors have run, such as a preloaded allocation hook: the constructors of the program's
 * own libraries run first, and until then every capture steps each frame through the full CFI
 * and reads /proc/self/maps for code it cannot place. Safe to call more than once, and from an
 * allocation hook: it does not wait for another thread's rebuild of the list (returns 0 then).
 *
 * Signal safety: NOT async-signal-safe (calls dl_iterate_phdr and pthread_key_create). */
int stackwalk_prepare(void);

/* stackwalk_private_mappings()
 *
 * The memory stackwalk maps for itself (per-thread unwind caches and frame logs, which hold
 * copies of stack words): writes up to `capacity` mappings into `ranges` as [lo, hi) pairs
 * (ranges[2*i], ranges[2*i+1]) and returns how many there are (more than `capacity` if some
 * did not fit). A conservative leak checker or collector leaves them out of its roots, or a
 * stale copy of a pointer there would keep a leaked block "reachable".
 *
 * Signal safety: async-signal-safe (no lock, no allocation). */
size_t stackwalk_private_mappings(uintptr_t* ranges, size_t capacity);

/* stackwalk_load_debug_frames()
 *
 * Reads the .debug_frame section of every loaded object that has one (code built with
 * -fno-asynchronous-unwind-tables -g, some hand-written assembly) so that STACKWALK_EHFRAME and
 * STACKWALK_AUTO can unwind through code .eh_frame does not cover. Returns how many objects it
 * added. Objects loaded later need another call. Compressed .debug_frame sections are skipped.
 *
 * Signal safety: NOT async-signal-safe (reads files, allocates). The tables it loads are then
 * used by the async-signal-safe capture calls. */
int stackwalk_load_debug_frames(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STACKWALK_STACKWALK_H_ */
