/* The crash handler from C: stackwalk/crash_handler_c.h compiles as C99 and its entry points work.
 *
 * Without arguments (ctest, every target): the refusals, install and uninstall, then a child that
 * installs the handler on a pipe and dereferences NULL; its report must name the fault and its
 * callers with this program's full path, and the handler must not allocate (malloc, calloc,
 * realloc and free are interposed). Exits non-zero on failure.
 * With "crash" (crash_handler_test's round trip through stackwalk-symbolize, native): prints the
 * source lines of the fault and of the call in its caller to stdout, installs the handler on
 * stderr and crashes. Built -O0 -g so that the statement after the call is on another line. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stackwalk/crash_handler_c.h"

static int failures;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

volatile int *volatile crash_c_null;
volatile int crash_c_side;

/* The handler must not allocate: once the child is about to crash, every malloc, calloc,
 * realloc or free writes a line into the report (write(2) only) and is then served by glibc.
 * Not in sanitizer builds, whose runtime owns malloc (and allocates in its own signal hooks). */
static volatile int forbid_allocation;
static int report_fd = -1;
#if !defined(STACKWALK_SANITIZE_BUILD)
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
static void Allocated(const char *what) {
  if (!forbid_allocation) return;
  static const char kLine[] = "\nALLOCATION IN THE HANDLER: ";
  ssize_t ignored = write(report_fd, kLine, sizeof(kLine) - 1);
  ignored = write(report_fd, what, strlen(what));
  ignored = write(report_fd, "\n", 1);
  (void)ignored;
}
void *malloc(size_t size) {
  Allocated("malloc");
  return __libc_malloc(size);
}
void *calloc(size_t n, size_t size) {
  Allocated("calloc");
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t size) {
  Allocated("realloc");
  return __libc_realloc(p, size);
}
void free(void *p) {
  if (p != NULL) Allocated("free");
  __libc_free(p);
}
#endif

static const int kFaultLine = __LINE__ + 2;
__attribute__((noinline, no_sanitize("undefined"))) void crash_c_leaf(volatile int *p) {
  crash_c_side = *p; /* the fault */
}

__attribute__((noinline)) void crash_c_after(void) { crash_c_side = 2; }

static const int kCallLine = __LINE__ + 2;
__attribute__((noinline)) void crash_c_caller(volatile int *p) {
  crash_c_leaf(p);  /* the call: its return address is the first instruction of the next line */
  crash_c_after();
}

static int SegvIsDefault(void) {
  struct sigaction current;
  return sigaction(SIGSEGV, NULL, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
         current.sa_handler == SIG_DFL;
}

static void IgnoreSignal(int sig) { (void)sig; }

static void CheckRefusals(void) {
  CHECK(SegvIsDefault());
  CHECK(stackwalk_install_crash_handler(-1) == -EBADF);
  int closed = open("/dev/null", O_WRONLY);
  close(closed);
  CHECK(stackwalk_install_crash_handler(closed) == -EBADF);
  int read_only = open("/dev/null", O_RDONLY);
  CHECK(stackwalk_install_crash_handler(read_only) == -EBADF);
  close(read_only);
  CHECK(SegvIsDefault()); /* nothing installed */
  CHECK(stackwalk_install_crash_handler(2) == 0);
  CHECK(!SegvIsDefault());
  stackwalk_uninstall_crash_handler();
  CHECK(SegvIsDefault());
  CHECK(stackwalk_prepare_thread_for_crashes() == 0);

  /* A snapshot's capture signal, SIGRTMIN + 6, that the program handles is the program's: the
   * install is refused and installs nothing; free, it gets the capture handler, and the
   * uninstall gives the default action back. */
  const int capture = SIGRTMIN + 6;
  struct sigaction programs, old, now;
  memset(&programs, 0, sizeof(programs));
  programs.sa_handler = IgnoreSignal;
  CHECK(sigaction(capture, &programs, &old) == 0);
  CHECK(stackwalk_install_crash_handler_with_snapshot(
            2, "/nonexistent/crash.snapshot", STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES) == -EBUSY);
  CHECK(SegvIsDefault());
  CHECK(sigaction(capture, &old, NULL) == 0);
  CHECK(stackwalk_install_crash_handler_with_snapshot(
            2, "/nonexistent/crash.snapshot", STACKWALK_DEFAULT_SNAPSHOT_STACK_BYTES) == 0);
  CHECK(sigaction(capture, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO));
  stackwalk_uninstall_crash_handler();
  CHECK(sigaction(capture, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) &&
        now.sa_handler == SIG_DFL);
  CHECK(SegvIsDefault());
}

/* The report line of frame `index`, copied into `line` (empty if there is none). */
static void FrameLine(const char *report, int index, char *line, size_t room) {
  char tag[16];
  snprintf(tag, sizeof(tag), "\n#%d ", index);
  const char *at = strstr(report, tag);
  line[0] = '\0';
  if (at == NULL) return;
  ++at;
  size_t n = strcspn(at, "\n");
  if (n >= room) n = room - 1;
  memcpy(line, at, n);
  line[n] = '\0';
}

static void CheckReportOfChild(void) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (stackwalk_install_crash_handler(fds[1]) != 0) _exit(100);
    report_fd = fds[1];
    forbid_allocation = 1;
    crash_c_caller(crash_c_null);
    _exit(101);
  }
  close(fds[1]);
  static char report[1 << 16];
  size_t used = 0;
  for (ssize_t n; used < sizeof(report) - 1 &&
                  (n = read(fds[0], report + used, sizeof(report) - 1 - used)) > 0;) {
    used += (size_t)n;
  }
  report[used] = '\0';
  close(fds[0]);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);

  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  CHECK(n > 0);
  exe[n > 0 ? n : 0] = '\0';
  char line[8192], expected[4200];
  CHECK(strstr(report, "*** stackwalk: SIGSEGV") != NULL);
  FrameLine(report, 0, line, sizeof(line));
  CHECK(strncmp(line, "#0 pc 0x", 8) == 0);
  CHECK(strstr(line, " in crash_c_leaf+0x") != NULL);
  snprintf(expected, sizeof(expected), " (%s+0x", exe);
  CHECK(strstr(line, expected) != NULL); /* the full path */
  FrameLine(report, 1, line, sizeof(line));
  CHECK(strncmp(line, "#1 ra 0x", 8) == 0);
  CHECK(strstr(line, " in crash_c_caller+0x") != NULL);
  CHECK(strstr(line, expected) != NULL);
  snprintf(expected, sizeof(expected), "\n*** module %s build-id ", exe);
  CHECK(strstr(report, expected) != NULL);
  CHECK(strstr(report, "\n*** end of report\n") != NULL);
  CHECK(strstr(report, "ALLOCATION IN THE HANDLER") == NULL);
  if (failures != 0) fprintf(stderr, "the report:\n%s\n", report);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "crash") == 0) {
    printf("fault-line %d\ncall-line %d\n", kFaultLine, kCallLine);
    fflush(stdout);
    if (stackwalk_install_crash_handler(2) != 0) return 100;
    crash_c_caller(crash_c_null);
    return 101;
  }
  CheckRefusals();
  CheckReportOfChild();
  printf("crash_c_api_test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
