#include "leakcheck/got_patch.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "leakcheck/loaded_objects.h"

namespace stackwalk::leakcheck {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT, kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT, kGlobDat = R_AARCH64_GLOB_DAT;
#elif defined(__arm__)
constexpr uint32_t kJumpSlot = R_ARM_JUMP_SLOT, kGlobDat = R_ARM_GLOB_DAT;
#else
#error "GOT patching: unsupported architecture"
#endif

#if __SIZEOF_POINTER__ == 8
using Rela = ElfW(Rela);
using Rel = ElfW(Rel);
inline uint32_t RelocType(uint64_t info) { return ELF64_R_TYPE(info); }
inline uint32_t RelocSymbol(uint64_t info) { return ELF64_R_SYM(info); }
#else
using Rela = ElfW(Rela);
using Rel = ElfW(Rel);
inline uint32_t RelocType(uint32_t info) { return ELF32_R_TYPE(info); }
inline uint32_t RelocSymbol(uint32_t info) { return ELF32_R_SYM(info); }
#endif

// The slots of one object bound to a wanted symbol: calls fn(slot address, symbol name).
template <class Fn>
void ForEachGotSlot(const LoadedObject& o, Fn&& fn) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < o.phnum; ++i) {
    if (o.phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(o.bias + o.phdr[i].p_vaddr);
    }
  }
  if (dynamic == nullptr) return;
  // glibc has already relocated these d_ptr values on most targets; some keep them relative.
  auto absolute = [&](uintptr_t p) { return p < o.bias ? p + o.bias : p; };
  uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, rel = 0;
  size_t pltrelsz = 0, relasz = 0, relsz = 0, strsz = 0;
  long pltrel = DT_RELA;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = absolute(d->d_un.d_ptr); break;
      case DT_STRTAB: strtab = absolute(d->d_un.d_ptr); break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_JMPREL: jmprel = absolute(d->d_un.d_ptr); break;
      case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
      case DT_PLTREL: pltrel = static_cast<long>(d->d_un.d_val); break;
      case DT_RELA: rela = absolute(d->d_un.d_ptr); break;
      case DT_RELASZ: relasz = d->d_un.d_val; break;
      case DT_REL: rel = absolute(d->d_un.d_ptr); break;
      case DT_RELSZ: relsz = d->d_un.d_val; break;
      default: break;
    }
  }
  if (symtab == 0 || strtab == 0) return;
  const auto* symbols = reinterpret_cast<const ElfW(Sym)*>(symtab);
  const char* strings = reinterpret_cast<const char*>(strtab);
  auto visit = [&](uintptr_t offset, auto info) {
    const uint32_t type = RelocType(info);
    if (type != kJumpSlot && type != kGlobDat) return;
    const uint32_t index = RelocSymbol(info);
    if (index == 0) return;
    const ElfW(Word) name = symbols[index].st_name;
    if (strsz != 0 && name >= strsz) return;
    fn(o.bias + offset, strings + name);
  };
  auto walk_rela = [&](uintptr_t table, size_t bytes) {
    const auto* r = reinterpret_cast<const Rela*>(table);
    for (size_t i = 0; table != 0 && i < bytes / sizeof(Rela); ++i) visit(r[i].r_offset, r[i].r_info);
  };
  auto walk_rel = [&](uintptr_t table, size_t bytes) {
    const auto* r = reinterpret_cast<const Rel*>(table);
    for (size_t i = 0; table != 0 && i < bytes / sizeof(Rel); ++i) visit(r[i].r_offset, r[i].r_info);
  };
  if (pltrel == DT_RELA) {
    walk_rela(jmprel, pltrelsz);
  } else {
    walk_rel(jmprel, pltrelsz);
  }
  // .rela.dyn holds the GLOB_DAT slots (and, in some links, .rela.plt is inside it: a slot
  // visited twice is patched once).
  walk_rela(rela, relasz);
  walk_rel(rel, relsz);
}

// Whether the dynamic loader made the slot's page read-only: the PT_GNU_RELRO pages, with the
// end rounded down as the loader does (a last partial page stays writable, shared with .data).
bool InRelro(const LoadedObject& o, uintptr_t address) {
  const uintptr_t page_mask = ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
  for (int i = 0; i < o.phnum; ++i) {
    const ElfW(Phdr)& ph = o.phdr[i];
    if (ph.p_type != PT_GNU_RELRO) continue;
    const uintptr_t start = (o.bias + ph.p_vaddr) & page_mask;
    const uintptr_t end = (o.bias + ph.p_vaddr + ph.p_memsz) & page_mask;
    if (address >= start && address < end) return true;
  }
  return false;
}

}  // namespace

bool WriteSlot(uintptr_t address, uintptr_t value, bool read_only) {
  const uintptr_t page_size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
  if (read_only && mprotect(page, page_size, PROT_READ | PROT_WRITE) != 0) return false;
  __atomic_store_n(reinterpret_cast<uintptr_t*>(address), value, __ATOMIC_RELEASE);
  if (read_only) mprotect(page, page_size, PROT_READ);
  return true;
}

int GotPatcher::Patch(const std::vector<GotHook>& hooks,
                      const std::function<bool(const std::string&)>& accept) {
  int patched = 0;
  for (const LoadedObject& o : ListLoadedObjects()) {
    if (!accept(o.path)) continue;
    ForEachGotSlot(o, [&](uintptr_t slot, const char* symbol) {
      auto hook = std::find_if(hooks.begin(), hooks.end(), [&](const GotHook& h) {
        return std::strcmp(h.symbol, symbol) == 0;
      });
      if (hook == hooks.end()) return;
      const bool known = std::any_of(slots_.begin(), slots_.end(),
                                     [&](const Slot& s) { return s.address == slot; });
      if (known) return;
      const uintptr_t original = __atomic_load_n(reinterpret_cast<uintptr_t*>(slot), __ATOMIC_ACQUIRE);
      const bool relro = InRelro(o, slot);
      if (!WriteSlot(slot, reinterpret_cast<uintptr_t>(hook->replacement), relro)) return;
      slots_.push_back(Slot{slot, original, o.bias, o.path, relro});
      ++patched;
    });
  }
  return patched;
}

void GotPatcher::ForgetUnloaded() {
  std::vector<LoadedObject> loaded = ListLoadedObjects();
  slots_.erase(std::remove_if(slots_.begin(), slots_.end(),
                              [&](const Slot& s) {
                                return std::none_of(loaded.begin(), loaded.end(), [&](const LoadedObject& o) {
                                  return o.bias == s.object_bias && o.path == s.object;
                                });
                              }),
               slots_.end());
}

int GotPatcher::RestoreAll() {
  ForgetUnloaded();
  int restored = 0;
  for (const Slot& s : slots_) restored += WriteSlot(s.address, s.original, s.relro) ? 1 : 0;
  slots_.clear();
  return restored;
}

}  // namespace stackwalk::leakcheck
