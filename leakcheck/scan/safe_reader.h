// SafeReader: reads the program's memory for the scan without faulting on a page that is not
// there: process_vm_readv where a one-time probe shows it works (not under every qemu-user),
// else direct reads of ranges the maps snapshot calls readable (with the world stopped nothing
// unmaps them), else page by page through the kernel's own check.
#ifndef STACKWALK_LEAKCHECK_SCAN_SAFE_READER_H_
#define STACKWALK_LEAKCHECK_SCAN_SAFE_READER_H_

#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/memory_reader.h"

namespace stackwalk::leakcheck {

class SafeReader final : public MemoryReader {
 public:
  // `maps` (may be nullptr) is the snapshot the direct-read fallback trusts.
  explicit SafeReader(const MapsSnapshot* maps);
  bool Read(uintptr_t address, void* out, size_t size) override;

 private:
  const MapsSnapshot* maps_;
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_SAFE_READER_H_
