// FindGnuBuildId(): the NT_GNU_BUILD_ID note among ELF notes (a PT_NOTE segment in memory, or an
// SHT_NOTE section of a file), the one reader of build-ids: the module map's (from the loaded
// objects' program headers) and ElfImage's (from files). Async-signal-safe: reads the bytes it
// is given, allocates nothing.
#ifndef STACKWALK_SRC_CORE_BUILD_ID_H_
#define STACKWALK_SRC_CORE_BUILD_ID_H_

#include <elf.h>
#include <link.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace stackwalk::internal {

// Copies the first GNU build-id note's descriptor in notes[0, size) into out (at most `room`
// bytes) and returns how many bytes it copied; -1 if there is none. A note that runs past the
// end stops the search.
inline int FindGnuBuildId(const uint8_t* notes, size_t size, uint8_t* out, size_t room) {
  size_t off = 0;
  while (size - off >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) nh;
    std::memcpy(&nh, notes + off, sizeof(nh));
    const size_t name_off = off + sizeof(nh);
    const size_t desc_off = name_off + ((nh.n_namesz + 3u) & ~size_t{3});
    const size_t next = desc_off + ((nh.n_descsz + 3u) & ~size_t{3});
    if (next > size || next <= off) return -1;
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
        std::memcmp(notes + name_off, "GNU", 4) == 0) {
      const size_t n = nh.n_descsz < room ? nh.n_descsz : room;
      std::memcpy(out, notes + desc_off, n);
      return static_cast<int>(n);
    }
    off = next;
  }
  return -1;
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_BUILD_ID_H_
