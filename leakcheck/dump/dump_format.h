// The leak dump's byte layout (docs/dump-format.md): the constants the writer (dump_encode.h) and
// the reader (dump_decode.h) share. A dump is a header and sections, each with an id and a length,
// so that a reader skips the sections it does not know (a later writer's additions) and a writer
// may add sections without a new major version. Little-endian throughout.
#ifndef STACKWALK_LEAKCHECK_DUMP_DUMP_FORMAT_H_
#define STACKWALK_LEAKCHECK_DUMP_DUMP_FORMAT_H_

#include <cstdint>

namespace stackwalk::leakcheck::dump {

// "SWLKDUMP": the first 8 bytes of every dump.
constexpr char kMagic[8] = {'S', 'W', 'L', 'K', 'D', 'U', 'M', 'P'};
// A reader reads every dump of its major version (unknown sections skipped) and refuses a newer
// major one; minor versions only add sections or append fields at the end of a section.
constexpr uint16_t kMajorVersion = 1;
// 1.1: the sampling section; 1.2: the profile's sections; 1.3: the process section's snapshot
// flag; 1.4: the summary section's untracked allocations
constexpr uint16_t kMinorVersion = 4;
// magic, major, minor, header bytes (u32), dump bytes (u64): what every version starts with.
constexpr uint32_t kHeaderBytes = 8 + 2 + 2 + 4 + 8;
// id (u32), flags (u32, 0 so far), payload bytes (u64).
constexpr uint32_t kSectionHeaderBytes = 4 + 4 + 8;

enum SectionId : uint32_t {
  kEnd = 0,         // no payload: the dump's last section
  kProcess = 1,     // who, when, why: pid, report number, occasion, program, time
  kSummary = 2,     // the tables' figures and how the world was stopped
  kRendering = 3,   // the program's rendering options (the defaults of stackwalk-report)
  kModules = 4,     // the objects the stacks' PCs are in
  kStacks = 5,      // allocation stacks as (module index, offset) PCs
  kBlocks = 6,      // the live blocks with their verdicts
  kLeakEdges = 7,   // pointers between leaked blocks (what suppressing a leak takes with it)
  kThreads = 8,     // the threads that allocated live blocks
  kSampling = 9,    // present when sampled: the mean; the blocks are a sample (1.1 on)
  kStackStats = 10,  // what each stack did over the run (profile views), live or not (1.2 on)
  kThreadTotals = 11,  // every thread's live bytes and peak (the threads view)
  kTimeline = 12,   // live bytes over time, total and for the busiest threads
  kLastSection = kTimeline,
};

// A frame's module index when its PC is in no known object: the offset is then the PC itself.
constexpr uint32_t kUnknownModule = 0xFFFFFFFFu;

// The ELF e_machine of the architecture this is built for (a dump's, a record region's machine).
constexpr uint16_t NativeMachine() {
#if defined(__x86_64__)
  return 62;   // EM_X86_64
#elif defined(__aarch64__)
  return 183;  // EM_AARCH64
#elif defined(__arm__)
  return 40;   // EM_ARM
#else
  return 0;    // EM_NONE
#endif
}

}  // namespace stackwalk::leakcheck::dump

#endif  // STACKWALK_LEAKCHECK_DUMP_DUMP_FORMAT_H_
