// TargetModules: another process's mappings and loaded objects, read from /proc/PID/maps, with
// each object's unwind tables read from its file into memory here (ObjectBytes: pread, never
// mapped, so a file truncated meanwhile cannot fault a walk; the vDSO's from the target's
// memory), never from the target: .eh_frame through PT_GNU_EH_FRAME, and .debug_frame
// where the file has one. The Locator of ehframe_step.h (Find, FindDebugFrame,
// ReadCode) and the Code of fp_step.h (IsCode) over them, all in the target's addresses: a
// table's code addresses are turned into the target's by EhFrameSection::load_bias.
//
// Built once before any thread is stopped (it opens and reads files); the walks only look up.
#ifndef STACKWALK_SRC_REMOTE_TARGET_MODULES_H_
#define STACKWALK_SRC_REMOTE_TARGET_MODULES_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/address_range.h"
#include "ehframe/debug_frame_index.h"
#include "ehframe/eh_frame_hdr.h"
#include "exidx/exidx_table.h"
#include "remote/object_bytes.h"

namespace stackwalk::internal {

class RemoteMemory;
struct SnapshotModule;

// One object mapped in the target: the executable, a library or the vDSO.
struct TargetModule {
  std::string path;          // as the target's maps name it ("[vdso]" for the vDSO)
  std::string file;          // the path this process opened it by (empty for the vDSO)
  uint64_t load_bias = 0;    // target address = link-time address + load_bias
  AddressRange extent;       // lowest to highest mapping of the object in the target
  std::vector<AddressRange> exec;  // its executable mappings
  std::string build_id;      // hex, empty if it has none
  bool is_vdso = false;
  bool has_eh_frame = false;
  EhFrameSection eh_frame;   // bytes here, addresses the target's (valid if has_eh_frame)
  EhFrameSection debug_frame;  // its .debug_frame, where it has one (a non-empty index)
  std::vector<DebugFrameEntry> debug_frame_index;
  bool has_exidx = false;
  ExidxSection exidx;        // an arm32 object's .ARM.exidx (valid if has_exidx), as eh_frame
  std::string error;         // why its tables could not be read (the walk falls back to fp)
};

class TargetModules {
 public:
  // Reads /proc/PID/maps (under /proc, or `proc_root` for tests) and every object's file.
  // Fails only if the maps cannot be read (no such process, no permission); an object whose
  // file cannot be opened or parsed is kept, with `error` saying why.
  static absl::StatusOr<std::unique_ptr<TargetModules>> Read(pid_t pid);
  // The objects a crash snapshot of an ELF `machine` process lists (x86_64, aarch64 or arm32,
  // whatever this host is), each file found as `sysroot` + its path (the path
  // itself when sysroot is empty), or in `debug_dir`/.build-id/xx/rest (the file, else
  // rest.debug) by its build-id. A file whose build-id differs from the listed one is not used
  // (`error` says so): its tables would describe other code. No memory: no vDSO tables.
  static std::unique_ptr<TargetModules> FromSnapshot(const std::vector<SnapshotModule>& listed,
                                                     uint32_t machine, const std::string& sysroot,
                                                     const std::string& debug_dir);
  ~TargetModules();

  // The target's readable mappings, sorted (for RemoteMemory).
  const std::vector<AddressRange>& readable() const { return readable_; }
  const std::vector<TargetModule>& modules() const { return modules_; }

  // The object holding `pc`, or nullptr.
  const TargetModule* Find(uint64_t pc) const;
  // The vDSO is read from the target's memory: done once the memory is there.
  void LoadVdso(RemoteMemory& memory);

  // Locator (ehframe_step.h, exidx_step.h) and Code (fp_step.h).
  bool Find(uint64_t pc, EhFrameSection* out) const;
  bool FindDebugFrame(uint64_t pc, EhFrameSection* out, uint64_t* fde) const;
  bool ReadCode(uint64_t pc, void* out, size_t n) const;
  bool FindExidx(uint64_t pc, ExidxSection* out) const;
  bool IsCode(uint64_t pc) const;
  void set_memory(RemoteMemory* memory) { memory_ = memory; }

 private:
  struct FileMapping {
    AddressRange range;
    uint64_t offset;  // the file offset mapped at range.lo
  };
  // Reads `file`'s ELF program headers for `module`: the bias its mappings give, its tables,
  // its build-id. Sets module->error where it cannot. With no mappings, module->load_bias is taken as known (a snapshot's). An object of another
  // ELF `machine` (EM_*) is refused with module->error.
  static void Describe(ObjectBytes& file, const std::vector<FileMapping>& mappings,
                       uint32_t machine, TargetModule* module);
  template <class Elf>
  static void DescribeElf(ObjectBytes& file, const std::vector<FileMapping>& mappings,
                          uint32_t machine, TargetModule* module);

  pid_t pid_ = 0;
  std::vector<AddressRange> readable_;
  std::vector<AddressRange> executable_;
  std::vector<TargetModule> modules_;  // sorted by extent.lo
  std::vector<std::vector<FileMapping>> mappings_;  // modules_[i]'s file mappings
  std::vector<std::unique_ptr<ObjectBytes>> files_;  // the tables' bytes
  RemoteMemory* memory_ = nullptr;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_REMOTE_TARGET_MODULES_H_
