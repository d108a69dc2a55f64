// libFuzzer target for the ELF reader the crash handler and the symbolizer use on files they do
// not control: section headers, symbol tables, notes, .gnu_debuglink. Hostile bytes must give
// "nothing found", never a crash or a read outside the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "symbolize/elf_image.h"

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
  volatile int id = image.build_id_size();
  (void)id;
  if (image.debuglink() != nullptr) {
    volatile size_t d = std::strlen(image.debuglink());
    (void)d;
  }
  return 0;
}
