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
#include <alloca.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

#include "leakcheck/preload_exec.h"
#include "leakcheck/record_region.h"

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

extern "C" {

EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  if (g_real.execve == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execve == nullptr) return Missing();
  return Superseding([&] { return g_real.execve(path, argv, envp); });
}
EXPORT int execv(const char* path, char* const argv[]) {
  if (g_real.execv == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execv == nullptr) return Missing();
  return Superseding([&] { return g_real.execv(path, argv); });
}
EXPORT int execvp(const char* file, char* const argv[]) {
  if (g_real.execvp == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execvp == nullptr) return Missing();
  return Superseding([&] { return g_real.execvp(file, argv); });
}
EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (g_real.execvpe == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execvpe == nullptr) return Missing();
  return Superseding([&] { return g_real.execvpe(file, argv, envp); });
}
EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (g_real.fexecve == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.fexecve == nullptr) return Missing();
  return Superseding([&] { return g_real.fexecve(fd, argv, envp); });
}
EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                    int flags) {
  if (g_real.execveat == nullptr) stackwalk::leakcheck::ResolveExecFunctions();  // before start
  if (g_real.execveat == nullptr) return Missing();
  return Superseding([&] { return g_real.execveat(dirfd, path, argv, envp, flags); });
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
