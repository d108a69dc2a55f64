// What the preloaded and the in-process checker share around their hooks: fork handlers, the
// report on a signal (any number of times, written by a thread of the checker's own) and the
// report at exit.
#ifndef STACKWALK_LEAKCHECK_SESSION_H_
#define STACKWALK_LEAKCHECK_SESSION_H_

#include <pthread.h>

#include <cstdint>

#include "leakcheck/options.h"

namespace stackwalk::leakcheck {

// Keeps the tables usable in a forked child (no shard left locked by a thread it lacks). Once.
void InstallForkHandlers();

// On `signo`, a report of the live allocations is written by a thread of the checker's own (the
// handler only wakes it). False if the handler or the thread could not be set up.
bool StartSignalReports(int signo);
// Puts the previous handler back and ends the thread.
void StopSignalReports();
// Starts a thread of the checker's own (the signal reporter, the periodic checker) named `name`,
// with a 1 MiB stack and every signal blocked from its start (signals are the program's threads'
// to take). False if it could not be created.
bool LaunchCheckerThread(pthread_t* thread, void* (*main)(void*), const char* name);
// The signal reporter thread's kernel id while it runs, else 0 (checks.h's CheckerThreadIds).
int32_t SignalReporterTid();

// Whether this process is the program the launcher runs: its pid is the launcher's
// STACKWALK_LEAKCHECK_PID (a wrapper's exec of the real program keeps the pid), not a process
// started below it nor one preloaded by hand.
bool LaunchersProgram();

// Whether this process is one the launcher was asked to check: the program it ran (the same
// process id, even after the program exec'd another, as wrapper scripts do), or with
// follow_exec any program started below it. Preloaded by hand (no launcher), every process is.
bool ChosenProcess(const Options& options);

// Decides State::quiet_clean_exit for a preloaded process (the preload's start-up, and again in
// a forked child, which is below the launcher's program): quiet unless report_clean or this
// process is the program the launcher runs (its pid in STACKWALK_LEAKCHECK_PID).
void DecideQuietCleanExit();

// At exit (exit(), or _exit and _Exit, which skip the exit handlers): gives glibc's and
// libstdc++'s internal pools back (as valgrind does), writes the report if configured to, and
// exits with the configured code if there were leaks, or none but untracked allocations
// (exitcode.h). Once per process.
void ReportAtExit();

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SESSION_H_
