// The exec family, interposed by libstackwalk_leakcheck.so (issue 17): before the real exec the
// record region is marked superseded (record_region.h, RecordExecBegins), and an exec that
// returns (it failed) takes the mark back. An image the checker reaches starts the region afresh
// at its start; one it does not (statically linked, set-ID) leaves the old image's record, which
// the launcher must then not report as the process's at its death.
//
// Every entry point a program calls is wrapped, not only execve: glibc's execv, execvp, execl...
// call its internal __execve, not the exported one. posix_spawn is left alone: its child shares
// the parent's memory until it execs (as a vfork child does), and the record is the parent's.
// The real functions are found with dlsym(RTLD_NEXT) at start (ResolveExecFunctions), not in a
// vfork child, where dlsym's locks and allocations are not safe (only an exec before the
// preload's constructor ran resolves them there).
//
// A process forked from the launcher's program (without --follow-exec) is checked, but the
// program it execs is not: the exec passes an environment without this library in LD_PRELOAD,
// and the launcher's descriptors close at the exec, which the new image's start did before
// (preload.cc), having loaded the library and the C++ runtime for nothing: ~1.5 ms a process.
#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "leakcheck/preload_exec.h"
#include "leakcheck/record_format.h"
#include "leakcheck/record_handover.h"
#include "leakcheck/record_region.h"
#include "leakcheck/session.h"
#include "leakcheck/state.h"

#define EXPORT __attribute__((visibility("default")))

namespace stackwalk::leakcheck {
namespace {

using Execve = int (*)(const char*, char* const[], char* const[]);
using Execv = int (*)(const char*, char* const[]);
using Fexecve = int (*)(int, char* const[], char* const[]);
using Execveat = int (*)(int, const char*, char* const[], char* const[], int);

struct ExecFunctions {
  Execve execve = nullptr;
  Execv execv = nullptr;
  Execv execvp = nullptr;
  Execve execvpe = nullptr;
  Fexecve fexecve = nullptr;
  Execveat execveat = nullptr;
};
ExecFunctions g_real;

template <class F>
void Resolve(F* slot, const char* name) {
  if (*slot == nullptr) *slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// The exec runs inside it: the mark before, taken back if the exec returns.
template <class Call>
int Superseding(Call&& call) {
  const bool marked = RecordExecBegins();
  const int result = call();
  if (marked) {
    const int saved = errno;
    RecordExecFailed();
    errno = saved;
  }
  return result;
}

// Whether the program this process execs runs unchecked: the process is below the launcher's
// program, not the program itself (whose execs, a wrapper script's, stay checked), and not
// followed (--follow-exec). Preloaded by hand (no launcher), every process is checked.
bool ExecsUnchecked() {
  const State& s = GlobalState();
  // Active: a process the launcher checks (its own start let go of the descriptors otherwise,
  // and their numbers may hold files of its own by now).
  return getenv("STACKWALK_LEAKCHECK_PID") != nullptr && s.configured.load() && s.active.load() &&
         !s.options.follow_exec && !LaunchersProgram();
}

// An environment is copied on the stack only up to this many bytes, its pointers and its
// LD_PRELOAD values together (a signal handler's alternate stack or a small thread stack may
// exec); past it, it is passed on as it is, and the program lets go of the library at its start
// instead (preload.cc).
constexpr size_t kMostCopiedBytes = 4096;

// Calls exec(envp') with envp' = `envp` without this library in any LD_PRELOAD (a variable left
// with nothing is left out) when ExecsUnchecked, the launcher's descriptors set to close at the
// exec first (left so if it fails: every exec of this process wants them closed, and two threads
// exec'ing at once cannot restore each other's flags); else exec(envp). The copy is on this
// frame's stack (at most kMostCopiedBytes): no allocation (a vfork child may exec).
template <class Exec>
int Unpreloaded(char* const* envp, Exec&& exec) {
  if (!ExecsUnchecked()) return exec(envp);
  int fds[kLauncherDescriptors];
  for (int i = 0, n = LauncherDescriptors(fds); i < n; ++i) {
    const int flags = fcntl(fds[i], F_GETFD);
    if (flags >= 0) fcntl(fds[i], F_SETFD, flags | FD_CLOEXEC);
  }
  if (envp == nullptr) return exec(envp);
  size_t count = 0;
  size_t bytes = sizeof(char*);  // the null at the end
  bool ours = false;
  for (; envp[count] != nullptr; ++count) {
    bytes += sizeof(char*);
    if (std::strncmp(envp[count], "LD_PRELOAD=", 11) == 0) {
      bytes += std::strlen(envp[count]) + 1;
      ours |= std::strstr(envp[count], "libstackwalk_leakcheck.so") != nullptr;
    }
    if (bytes > kMostCopiedBytes) return exec(envp);
  }
  if (!ours) return exec(envp);
  char** changed = static_cast<char**>(alloca(sizeof(char*) * (count + 1)));
  size_t out = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::strncmp(envp[i], "LD_PRELOAD=", 11) != 0) {
      changed[out++] = envp[i];
      continue;
    }
    char* kept = static_cast<char*>(alloca(std::strlen(envp[i]) + 1));
    std::memcpy(kept, "LD_PRELOAD=", 11);
    WithoutThisLibrary(envp[i] + 11, kept + 11);
    if (kept[11] != '\0') changed[out++] = kept;
  }
  changed[out] = nullptr;
  return exec(changed);
}

int Missing() {
  errno = ENOSYS;
  return -1;
}

// execl's arguments, `first` and those after it up to the null one, as an argv on the stack (as
// glibc builds it), and for execle the envp after the null; exec(argv, envp) runs in this frame.
template <class Exec>
int WithArgv(const char* first, va_list args, bool has_envp, Exec&& exec) {
  va_list counting;
  va_copy(counting, args);
  size_t count = 1;
  while (va_arg(counting, char*) != nullptr) ++count;
  va_end(counting);
  char** argv = static_cast<char**>(alloca(sizeof(char*) * (count + 1)));
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i <= count; ++i) argv[i] = va_arg(args, char*);  // the last is the null
  char* const* envp = has_envp ? va_arg(args, char* const*) : nullptr;
  return exec(argv, envp);
}

}  // namespace

void WithoutThisLibrary(const char* list, char* out) {
  constexpr char kName[] = "libstackwalk_leakcheck.so";
  char* const start = out;
  for (const char* p = list; *p != '\0';) {
    const char* end = p + std::strcspn(p, ": ");
    const char* name = p;
    for (const char* c = p; c < end; ++c) {
      if (*c == '/') name = c + 1;
    }
    const size_t len = static_cast<size_t>(end - p);
    const bool ours = static_cast<size_t>(end - name) == sizeof(kName) - 1 &&
                      std::strncmp(name, kName, sizeof(kName) - 1) == 0;
    if (!ours && len > 0) {
      if (out != start) *out++ = ':';
      std::memmove(out, p, len);
      out += len;
    }
    p = *end != '\0' ? end + 1 : end;
  }
  *out = '\0';
}

int LauncherDescriptors(int fds[kLauncherDescriptors]) {
  int n = 0;
  struct stat st;
  const char* dump_fd = getenv("STACKWALK_LEAKCHECK_DUMP_FD");
  if (dump_fd != nullptr && std::atoi(dump_fd) > 2 && fstat(std::atoi(dump_fd), &st) == 0 &&
      S_ISFIFO(st.st_mode)) {
    fds[n++] = std::atoi(dump_fd);
  }
  // The region: a memfd (a file with no name); the number may hold a file of the program's own.
  const char* record_fd = getenv(record::kDescriptorVariable);
  if (record_fd != nullptr && std::atoi(record_fd) > 2 && fstat(std::atoi(record_fd), &st) == 0 &&
      S_ISREG(st.st_mode) && st.st_nlink == 0) {
    fds[n++] = std::atoi(record_fd);
  }
  if (const int children = HandoverSocket(); children >= 0) fds[n++] = children;
  return n;
}

void ResolveExecFunctions() {
  Resolve(&g_real.execve, "execve");
  Resolve(&g_real.execv, "execv");
  Resolve(&g_real.execvp, "execvp");
  Resolve(&g_real.execvpe, "execvpe");
  Resolve(&g_real.fexecve, "fexecve");
  Resolve(&g_real.execveat, "execveat");
}

}  // namespace stackwalk::leakcheck

using stackwalk::leakcheck::g_real;
using stackwalk::leakcheck::Missing;
using stackwalk::leakcheck::Superseding;
using stackwalk::leakcheck::Unpreloaded;

extern "C" {

EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  if (g_real.execve == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execve == nullptr) return Missing();
  return Unpreloaded(envp, [&](char* const* env) {
    return Superseding([&] { return g_real.execve(path, argv, env); });
  });
}
EXPORT int execv(const char* path, char* const argv[]) {
  if (g_real.execv == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execv == nullptr) return Missing();
  return Unpreloaded(environ, [&](char* const* env) {
    if (env == environ) return Superseding([&] { return g_real.execv(path, argv); });
    if (g_real.execve == nullptr) return Missing();
    return Superseding([&] { return g_real.execve(path, argv, env); });
  });
}
EXPORT int execvp(const char* file, char* const argv[]) {
  if (g_real.execvp == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execvp == nullptr) return Missing();
  return Unpreloaded(environ, [&](char* const* env) {
    if (env == environ) return Superseding([&] { return g_real.execvp(file, argv); });
    if (g_real.execvpe == nullptr) return Missing();
    return Superseding([&] { return g_real.execvpe(file, argv, env); });
  });
}
EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (g_real.execvpe == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execvpe == nullptr) return Missing();
  return Unpreloaded(envp, [&](char* const* env) {
    return Superseding([&] { return g_real.execvpe(file, argv, env); });
  });
}
EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (g_real.fexecve == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.fexecve == nullptr) return Missing();
  return Unpreloaded(envp, [&](char* const* env) {
    return Superseding([&] { return g_real.fexecve(fd, argv, env); });
  });
}
EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                    int flags) {
  if (g_real.execveat == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execveat == nullptr) return Missing();
  return Unpreloaded(envp, [&](char* const* env) {
    return Superseding([&] { return g_real.execveat(dirfd, path, argv, env, flags); });
  });
}
EXPORT int execl(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = stackwalk::leakcheck::WithArgv(
      arg, args, false, [&](char* const* argv, char* const*) { return execv(path, argv); });
  va_end(args);
  return result;
}
EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = stackwalk::leakcheck::WithArgv(
      arg, args, false, [&](char* const* argv, char* const*) { return execvp(file, argv); });
  va_end(args);
  return result;
}
EXPORT int execle(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  const int result = stackwalk::leakcheck::WithArgv(
      arg, args, true,
      [&](char* const* argv, char* const* envp) { return execve(path, argv, envp); });
  va_end(args);
  return result;
}

}  // extern "C"
