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
  enum class Method : uint8_t {
    kAuto,            // the first of the three below that works here
    kProcessVmReadv,  // process_vm_readv on ourselves (where the one-time probe passed)
    kMaps,            // direct reads of what `maps` calls readable
    kPages,           // direct reads of pages the kernel says are readable, one check a page
  };
  // `maps` (may be nullptr) is the snapshot the direct-read fallback and InPlace trust: given
  // only while the world is stopped (nothing unmaps or shrinks a mapping then). A method other than
  // kAuto is forced (tests); a forced kProcessVmReadv that does not work fails every read, a
  // forced kMaps without `maps` reads page by page.
  explicit SafeReader(const MapsSnapshot* maps, Method method = Method::kAuto);
  bool Read(uintptr_t address, void* out, size_t size) override;
  // With process_vm_readv, up to kBatchIovecs spans a call (one system call for many small
  // blocks instead of one each); otherwise Read for each span.
  size_t ReadBatch(const ReadSpan* spans, size_t count) override;
  // With `maps`: true for a range within one readable private mapping that is anonymous or the
  // [heap], where every live block is (no file under it to be truncated: no SIGBUS). The scan
  // reads those blocks where they are: a process_vm_readv per block, or even per 256, costs the
  // kernel a page pin and a VMA lookup each (5x the scan of a 64-byte block).
  bool InPlace(uintptr_t address, size_t size) override;
  static constexpr size_t kBatchIovecs = 256;  // below every kernel's IOV_MAX (1024)
  Method method() const { return method_; }  // the one used (never kAuto)

 private:
  const MapsSnapshot* maps_;
  Method method_;
  const MapsEntry* last_in_place_ = nullptr;  // InPlace's last entry: blocks come in address order
};

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_SAFE_READER_H_
