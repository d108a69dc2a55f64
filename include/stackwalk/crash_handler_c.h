/*
 * crash_handler_c.h — the crash handler's C entry points (valid C99 and C++; crash_handler.h, the
 * C++ API, includes it). What a report contains is described in crash_handler.h.
 *
 * Example, early in main():
 *
 *   int err = stackwalk_install_crash_handler(2);   // reports to stderr
 *   if (err != 0) fprintf(stderr, "no crash handler: %s\n", strerror(-err));
 */
#ifndef STACKWALK_CRASH_HANDLER_C_H_
#define STACKWALK_CRASH_HANDLER_C_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stack bytes a crash snapshot holds unless told otherwise: 64 KiB from the SP. */
#define STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES ((size_t)64 * 1024)

/* stackwalk_install_crash_handler()
 *
 * Installs the crash handler with the default options (crash_handler.h: up to 64 frames, the
 * STACKWALK_AUTO method, an alternate signal stack for the calling thread), the report written
 * to `fd`. Returns 0, or a negative errno and installs nothing:
 *   -EBADF   `fd` is negative, not open, or open read-only;
 *   other    -errno of sigaltstack/mmap/sigaction.
 * Calling it again replaces the options.
 *
 * Signal safety: NOT async-signal-safe (installs handlers, maps the alternate stack). */
int stackwalk_install_crash_handler(int fd);

/* stackwalk_install_crash_handler_with_snapshot()
 *
 * As stackwalk_install_crash_handler(fd), and at a crash also writes a snapshot to
 * `snapshot_path` (created or truncated then) holding the crashing thread's registers, up to
 * `stack_bytes` of its stack from SP (STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES is 64 KiB; at most
 * 16 MiB), the loaded objects, and every other thread with its registers and up to 16 KiB of
 * its stack (4 MiB over all), captured by the signal SIGRTMIN + 6, whose handler this installs
 * (a thread that does not answer within 1 s is listed with the reason), for
 * `stackwalk-dump --snapshot FILE` to unwind and name later, elsewhere too
 * (docs/snapshot-format.md). Returns 0 or a negative errno and installs nothing: as above, and
 * -EINVAL for an empty path or stack_bytes above 16 MiB, -ENAMETOOLONG for a path of 4096 bytes
 * or more, -EBUSY when SIGRTMIN + 6 already has a handler (the C++ options choose another).
 *
 * Signal safety: NOT async-signal-safe. */
int stackwalk_install_crash_handler_with_snapshot(int fd, const char* snapshot_path,
                                                  size_t stack_bytes);

/* stackwalk_prepare_thread_for_crashes()
 *
 * Gives the calling thread an alternate signal stack, so that a stack overflow in it can be
 * reported too. Returns 0 or a negative errno.
 *
 * Signal safety: NOT async-signal-safe. */
int stackwalk_prepare_thread_for_crashes(void);

/* stackwalk_uninstall_crash_handler()
 *
 * Restores the signal handlers that were installed before stackwalk's.
 *
 * Signal safety: NOT async-signal-safe. */
void stackwalk_uninstall_crash_handler(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STACKWALK_CRASH_HANDLER_C_H_ */
