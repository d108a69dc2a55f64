// The crash snapshot's format (docs/snapshot-format.md): what the crash handler writes when
// CrashHandlerOptions::snapshot_path is set, and stackwalk-dump --snapshot reads. Written by a
// signal handler (crash/snapshot_writer.cc), read bounds-checked by remote/snapshot_reader.cc.
//
// A file is the header, then sections, each a SnapshotSectionHeader and `size` payload bytes,
// ending with a kSnapshotEnd section (size 0): a file without it was cut short. All integers
// little-endian (the writer's byte order; the header's byte-order word says which).
#ifndef STACKWALK_SRC_CORE_SNAPSHOT_FORMAT_H_
#define STACKWALK_SRC_CORE_SNAPSHOT_FORMAT_H_

#include <cstdint>

namespace stackwalk::internal {

inline constexpr char kSnapshotMagic[8] = {'S', 'W', 'S', 'N', 'A', 'P', '\r', '\n'};
inline constexpr uint32_t kSnapshotVersion = 1;
inline constexpr uint32_t kSnapshotByteOrder = 0x01020304;

struct SnapshotFileHeader {
  char magic[8];
  uint32_t version;
  uint32_t byte_order;   // kSnapshotByteOrder as the writer stored it
  uint32_t machine;      // the ELF e_machine of the crashed process: EM_X86_64, EM_AARCH64, EM_ARM
  uint32_t word_size;    // 8 or 4: the size of its addresses
};
static_assert(sizeof(SnapshotFileHeader) == 24);

enum SnapshotSection : uint32_t {
  kSnapshotEnd = 0,        // no payload; the last section
  kSnapshotProcess = 1,    // SnapshotProcess
  kSnapshotRegisters = 2,  // SnapshotRegistersHeader, then `count` uint64_t values
  kSnapshotStack = 3,      // uint64_t the address of its first byte (the SP), then the bytes
  kSnapshotModule = 4,     // SnapshotModuleHeader, exec ranges, build-id, path (one per object)
  kSnapshotImage = 5,      // uint64_t the address of its first byte, then the bytes: an object's
                           // image as mapped, where no file holds it (the vDSO)
  // Every other thread of the process: a kSnapshotThread section each, and after the one of a
  // thread captured, its registers and its stack (keyed by its tid).
  kSnapshotThread = 6,          // SnapshotThread
  kSnapshotThreadRegisters = 7, // as kSnapshotRegisters (its tid names the thread)
  kSnapshotThreadStack = 8,     // SnapshotThreadStackHeader, then the bytes from its SP
};

struct SnapshotSectionHeader {
  uint32_t type;
  uint32_t reserved;  // 0
  uint64_t size;      // payload bytes that follow
};
static_assert(sizeof(SnapshotSectionHeader) == 16);

struct SnapshotProcess {
  int32_t pid;
  int32_t tid;
  int32_t signal;
  int32_t code;        // si_code
  uint64_t fault_address;  // si_addr
  char thread_name[16];    // PR_GET_NAME, NUL-padded
};
static_assert(sizeof(SnapshotProcess) == 40);

// The crashing thread's registers from its ucontext, in the architecture's DWARF numbering (the
// PC in the return-address column); values[i] is meaningful where bit i of valid_mask is set.
struct SnapshotRegistersHeader {
  int32_t tid;
  uint32_t count;      // values that follow (at most 64)
  uint64_t valid_mask;
};
static_assert(sizeof(SnapshotRegistersHeader) == 16);

inline constexpr uint32_t kSnapshotMaxRegisters = 64;

struct SnapshotModuleHeader {
  uint64_t load_bias;      // address in the process = link-time address + load_bias
  uint64_t extent_lo, extent_hi;  // lowest to highest byte of its PT_LOAD segments
  uint32_t exec_count;     // [lo, hi) uint64_t pairs that follow: its executable segments
  uint32_t build_id_size;  // bytes that follow the ranges (0: none)
  uint32_t path_size;      // bytes of the path that follow the build-id (no NUL)
  uint32_t flags;          // kSnapshotModuleMain, kSnapshotModuleVdso
};
static_assert(sizeof(SnapshotModuleHeader) == 40);

// Another thread than the crashing one: whether its registers and stack follow, and if not why.
struct SnapshotThread {
  int32_t tid;
  uint32_t state;      // SnapshotThreadState
  int32_t detail;      // kSnapshotThreadCaptured: the signal it crashed of while the crashing
                       // thread reported (its registers are then those at its fault), else 0;
                       // kSnapshotThreadNotSignaled: the errno of tgkill; kSnapshotThreadNoAnswer:
                       // the wait in ms; else 0
  char proc_state;     // its State letter in /proc/self/task/TID/status when not captured
                       // (S, D, R, T...), or 0
  char reserved[3];    // 0
  char name[16];       // /proc/self/task/TID/comm, NUL-padded
};
static_assert(sizeof(SnapshotThread) == 32);

enum SnapshotThreadState : uint32_t {
  kSnapshotThreadCaptured = 0,     // its registers and stack sections follow
  kSnapshotThreadNoAnswer = 1,     // did not answer the capture signal within the wait
  kSnapshotThreadBlocked = 2,      // blocks the capture signal
  kSnapshotThreadNotSignaled = 3,  // the capture signal could not be sent (tgkill failed)
  kSnapshotThreadOverLimit = 4,    // beyond the threads a snapshot captures (kMaxSnapshotThreads)
  kSnapshotThreadLate = 5,         // started after the capture began
};

struct SnapshotThreadStackHeader {
  int32_t tid;
  uint32_t reserved;   // 0
  uint64_t address;    // of its first byte: the thread's interrupted SP
};
static_assert(sizeof(SnapshotThreadStackHeader) == 16);

inline constexpr uint32_t kSnapshotModuleMain = 1;
inline constexpr uint32_t kSnapshotModuleVdso = 2;
inline constexpr uint32_t kSnapshotMaxExecRanges = 16;
inline constexpr uint32_t kSnapshotMaxBuildId = 64;
inline constexpr uint32_t kSnapshotMaxPath = 4096;
// The vDSO is two to four pages on every architecture; anything larger is not copied.
inline constexpr uint64_t kSnapshotMaxImage = 64 * 1024;

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_SNAPSHOT_FORMAT_H_
