// ReadSnapshot(): a crash snapshot's bytes (core/snapshot_format.h) parsed, every length and
// count checked against what remains, into what stackwalk-dump --snapshot walks. A snapshot cut
// short or corrupt gives the sections read before the fault and the reason; nothing here can
// read outside the bytes it was given.
#ifndef STACKWALK_SRC_REMOTE_SNAPSHOT_READER_H_
#define STACKWALK_SRC_REMOTE_SNAPSHOT_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/address_range.h"

namespace stackwalk::internal {

struct SnapshotModule {
  std::string path;
  std::string build_id;  // hex, empty if none
  uint64_t load_bias = 0;
  AddressRange extent;
  std::vector<AddressRange> exec;
  bool is_main = false;
  bool is_vdso = false;
  std::vector<unsigned char> image;  // its bytes as mapped, where the snapshot has them (vDSO)
};

// A thread's registers and stack as a snapshot holds them: the crashing thread's, or another's.
struct SnapshotThreadContext {
  bool has_registers = false;
  std::vector<uint64_t> registers;  // DWARF numbering
  uint64_t register_mask = 0;
  bool has_stack = false;
  uint64_t stack_address = 0;
  std::vector<unsigned char> stack;
};

// Another thread than the crashing one (kSnapshotThread), with its registers and stack when it
// was captured.
struct SnapshotOtherThread : SnapshotThreadContext {
  int32_t tid = 0;
  uint32_t state = 0;  // SnapshotThreadState
  int32_t detail = 0;
  char proc_state = 0;
  std::string name;
};

// The crashing thread's registers and stack are the SnapshotThreadContext part.
struct Snapshot : SnapshotThreadContext {
  uint32_t version = 0;
  uint32_t machine = 0;      // ELF e_machine
  uint32_t word_size = 0;
  bool has_process = false;
  int32_t pid = 0, tid = 0, signal = 0, code = 0;
  uint64_t fault_address = 0;
  std::string thread_name;
  std::vector<SnapshotModule> modules;
  std::vector<SnapshotOtherThread> threads;  // in the order written
  bool complete = false;   // the end section was reached
  std::string error;       // why it stopped before the end section ("" when complete)
};

// Parses `size` bytes. Returns the snapshot; check `error`.
Snapshot ReadSnapshot(const unsigned char* bytes, size_t size);

// "x86_64", "aarch64", "arm" or "machine N".
std::string MachineName(uint32_t machine);

// Why a thread was not captured, as a phrase ("blocks the capture signal"); "" if it was.
std::string NotCapturedReason(const SnapshotOtherThread& thread);

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_SNAPSHOT_READER_H_
