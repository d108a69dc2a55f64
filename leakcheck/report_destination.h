// Where a report goes (the output stage of a leak report, report_model.h), and which process
// writes it. The program owns descriptors 0-2 and may close or reuse them (coreutils close
// stderr at exit; a daemon reopens fd 2 on a data file), so the checker keeps a duplicate of the
// stderr it started with, above the descriptors programs use and closed on exec; reports to
// stderr go there.
#ifndef STACKWALK_LEAKCHECK_REPORT_DESTINATION_H_
#define STACKWALK_LEAKCHECK_REPORT_DESTINATION_H_

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

namespace stackwalk::leakcheck {

// Takes the duplicate of fd 2 and notes this process as the one that reports. Call at start-up
// (the preload's constructor, the in-process Start) and in a forked child, which keeps the
// inherited duplicate and notes its own pid. Async-signal-safe (fcntl, getpid).
void KeepReportDestination();

// The descriptor for reports to stderr: the kept duplicate, or 2 where none could be taken (fd 2
// was closed before the checker started).
int StderrForReports();

// The process KeepReportDestination() last ran in. A vfork child shares the parent's memory but
// not its pid: it must not write the parent's report.
pid_t ReportingProcess();

// Writes a rendered report to `output` (a path; "%p" in it becomes the process id, so that a
// program's children report to files of their own), or to StderrForReports() when it is empty
// or cannot be opened (saying so there first). The process's first report (`first`) starts the
// file; later ones are appended. Not signal-safe: allocates.
void DeliverReport(const char* output, bool first, const std::string& text);

// Writes `text` (a note for the user) to StderrForReports(). Not signal-safe: allocates.
void WriteToStderr(const std::string& text);

// `path` with each "%p" replaced by the process id (the output and dump options' rule).
std::string ExpandProcessId(const char* path);

// Writes a leak dump (leakcheck/dump/) to `path` ("%p" expanded), which the process's first
// report (`first`) starts and later ones append to; nothing if `path` is empty. A file that cannot
// be written is named on StderrForReports(). Not signal-safe: allocates.
void DeliverDump(const char* path, bool first, const std::string& bytes);

// Takes a dump's bytes piece by piece (DeliverDump's writer).
using DumpWriter = std::function<void(const char*, size_t)>;
// DeliverDump with the bytes made as they are written: `encode` hands each piece to the writer
// it is given (dump::EncodeDump's streaming form), so that the dump is never whole in memory.
void DeliverDump(const char* path, bool first,
                 const std::function<void(const DumpWriter&)>& encode);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_REPORT_DESTINATION_H_
