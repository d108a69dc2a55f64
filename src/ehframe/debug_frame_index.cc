#include "ehframe/debug_frame_index.h"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>

#include "ehframe/byte_reader.h"
#include "ehframe/cfi_parser.h"

namespace stackwalk::internal {

bool FindDebugFrameSection(const uint8_t* file, size_t size, AddressRange* out) {
  if (size < sizeof(ElfW(Ehdr)) || std::memcmp(file, ELFMAG, SELFMAG) != 0) return false;
  ElfW(Ehdr) eh;
  std::memcpy(&eh, file, sizeof(eh));
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(ElfW(Shdr)) || eh.e_shstrndx >= eh.e_shnum ||
      eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(ElfW(Shdr))) {
    return false;
  }
  auto section = [&](int i) {
    ElfW(Shdr) sh;
    std::memcpy(&sh, file + eh.e_shoff + i * sizeof(ElfW(Shdr)), sizeof(sh));
    return sh;
  };
  ElfW(Shdr) names = section(eh.e_shstrndx);
  if (names.sh_offset > size || names.sh_size > size - names.sh_offset) return false;
  for (int i = 0; i < eh.e_shnum; ++i) {
    ElfW(Shdr) sh = section(i);
    if (sh.sh_name >= names.sh_size) continue;
    const char* name = reinterpret_cast<const char*>(file + names.sh_offset + sh.sh_name);
    size_t room = names.sh_size - sh.sh_name;
    if (strnlen(name, room) == room || std::strcmp(name, ".debug_frame") != 0) continue;
    if (sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED) != 0) return false;
    if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || sh.sh_size == 0) return false;
    const uint64_t base = reinterpret_cast<uintptr_t>(file) + sh.sh_offset;
    *out = {base, base + sh.sh_size};
    return true;
  }
  return false;
}

std::vector<DebugFrameEntry> IndexDebugFrame(const EhFrameSection& section) {
  std::vector<DebugFrameEntry> entries;
  ByteReader r(section.bounds.lo, section.bounds.hi);
  while (r.ok() && !r.at_end()) {
    uint64_t entry = r.pos();
    uint64_t length = r.U32();
    bool is64 = length == 0xffffffffu;
    if (is64) length = r.U64();
    if (!r.ok() || length == 0) break;
    uint64_t body = r.pos();
    uint64_t id = is64 ? r.U64() : r.U32();
    bool is_cie = id == (is64 ? ~uint64_t{0} : 0xffffffffu);
    Fde fde;
    if (!is_cie && ParseFde(section, entry, &fde) == CfiError::kOk && fde.pc_end > fde.pc_begin) {
      entries.push_back({fde.pc_begin, fde.pc_end, entry});
    }
    r.Seek(body);
    r.Skip(length);
  }
  std::sort(entries.begin(), entries.end(),
            [](const DebugFrameEntry& a, const DebugFrameEntry& b) { return a.pc_begin < b.pc_begin; });
  return entries;
}

const DebugFrameEntry* FindDebugFrameEntry(const DebugFrameEntry* index, size_t count,
                                           uint64_t pc) {
  size_t lo = 0, hi = count;  // the last entry starting at or below pc
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (index[mid].pc_begin <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo > 0 && pc < index[lo - 1].pc_end ? &index[lo - 1] : nullptr;
}

}  // namespace stackwalk::internal
