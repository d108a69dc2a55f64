// libFuzzer target for the ELF reader the crash handler and the symbolizer use on files they do
// not control: section headers, symbol tables, notes, .gnu_debuglink. Hostile bytes must give
// "nothing found", never a crash or a read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "symbolize/elf_image.h"
#if STACKWALK_FUZZ_MINI_DEBUGINFO
#include "symbolize/mini_debuginfo.h"
#endif
#if STACKWALK_FUZZ_DEBUG_IMAGE
#include <gelf.h>

#include "symbolize/debug_image.h"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t addr;
  std::memcpy(&addr, data, 8);
  std::vector<uint8_t> bytes(data + 8, data + size);  // exact bounds for AddressSanitizer
  stackwalk::internal::ElfImage image;
  if (!image.OpenMemory(bytes.data(), bytes.size())) return 0;
  stackwalk::internal::SymbolHit hit;
  for (uint64_t a : {addr, addr & 0xffff, uint64_t{0x1000}}) {
    if (image.Lookup(a, &hit)) {
      volatile size_t n = std::strlen(hit.name);
      (void)n;
      if (hit.file != nullptr) {
        volatile size_t f = std::strlen(hit.file);
        (void)f;
      }
    }
  }
  // The .eh_frame_hdr search that bounds functions without a size.
  uint64_t lo = 0, hi = 0;
  for (uint64_t a : {addr, addr & 0xffff, uint64_t{0x1000}}) {
    if (image.FdeRange(a, &lo, &hi) && (a < lo || a >= hi)) __builtin_trap();
  }
  volatile int id = image.build_id_size();
  (void)id;
  if (image.debuglink() != nullptr) {
    volatile size_t d = std::strlen(image.debuglink());
    (void)d;
  }
#if STACKWALK_FUZZ_MINI_DEBUGINFO
  // .gnu_debugdata: an xz stream holding another ELF image, read the same way.
  const uint8_t* packed = nullptr;
  size_t packed_size = 0;
  if (image.mini_debuginfo(&packed, &packed_size)) {
    auto unpacked = stackwalk::internal::DecompressXz(packed, packed_size, size_t{1} << 20);
    stackwalk::internal::ElfImage inner;
    if (unpacked.ok() && inner.OpenMemory(unpacked->data(), unpacked->size())) {
      inner.Lookup(addr, &hit);
    }
  }
#endif
#if STACKWALK_FUZZ_DEBUG_IMAGE
  // The image libdw would read: every section's bytes must lie inside it.
  auto prepared = stackwalk::internal::DebugImage::LoadMemory(bytes.data(), bytes.size());
  if (prepared.ok()) {
    Elf* elf = (*prepared)->elf();
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      Elf_Data* data = gelf_getshdr(scn, &sh) != nullptr ? elf_rawdata(scn, nullptr) : nullptr;
      if (data != nullptr && data->d_buf != nullptr && data->d_size > 0) {
        volatile uint8_t last = static_cast<const uint8_t*>(data->d_buf)[data->d_size - 1];
        (void)last;
      }
    }
  }
#endif
  return 0;
}
