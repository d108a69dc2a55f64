// WritableWordsEqualTo: how many aligned words of the writable segments of the loaded object
// holding `code` equal `value`; WritableWordsWithin, how many lie in [lo, hi) (an unmapped
// range's interior pointers too); ThreadTlsWordsEqualTo, how many of that object's TLS block in
// the calling thread. The checker's own tables lie in such segments, which a scan takes for
// roots: a test asks that what the checker let go of (a freed block, an unmapped range) is no
// longer named there as it was.
#ifndef STACKWALK_TESTS_WRITABLE_WORDS_H_
#define STACKWALK_TESTS_WRITABLE_WORDS_H_

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstddef>
#include <cstdint>

namespace stackwalk::testing {

// Reads across the gaps between globals: an ASan build's redzones are not overflows here.
// The words of [lo, hi) whose values lie in [from, to).
__attribute__((no_sanitize("address"))) inline size_t CountWordsWithin(uintptr_t lo, uintptr_t hi,
                                                                       uintptr_t from,
                                                                       uintptr_t to) {
  size_t found = 0;
  for (uintptr_t at = lo; at + sizeof(uintptr_t) <= hi; at += sizeof(uintptr_t)) {
    const uintptr_t word = *reinterpret_cast<const volatile uintptr_t*>(at);
    found += word >= from && word < to;
  }
  return found;
}

inline size_t WritableWordsWithin(const void* code, uintptr_t from, uintptr_t to) {
  Dl_info info{};
  if (dladdr(code, &info) == 0) return SIZE_MAX;
  struct Search {
    uintptr_t base;
    uintptr_t from, to;
    size_t found;
  } search{reinterpret_cast<uintptr_t>(info.dli_fbase), from, to, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        // The object whose lowest PT_LOAD starts at dli_fbase.
        uintptr_t lowest = UINTPTR_MAX;
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = object->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && object->dlpi_addr + ph.p_vaddr < lowest) {
            lowest = object->dlpi_addr + ph.p_vaddr;
          }
        }
        if ((lowest & ~uintptr_t{4095}) != s->base) return 0;
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = object->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) == 0) continue;
          const uintptr_t align = sizeof(uintptr_t) - 1;
          const uintptr_t lo = (object->dlpi_addr + ph.p_vaddr + align) & ~align;
          const uintptr_t hi = object->dlpi_addr + ph.p_vaddr + ph.p_memsz;
          s->found += CountWordsWithin(lo, hi, s->from, s->to);
        }
        return 1;
      },
      &search);
  return search.found;
}

inline size_t ThreadTlsWordsEqualTo(const void* code, uintptr_t value) {
  Dl_info info{};
  if (dladdr(code, &info) == 0) return SIZE_MAX;
  struct Search {
    uintptr_t base;
    size_t tls_bytes;
    bool main_program;
  } search{reinterpret_cast<uintptr_t>(info.dli_fbase), 0, false};
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        uintptr_t lowest = UINTPTR_MAX;
        size_t tls = 0;
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = object->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && object->dlpi_addr + ph.p_vaddr < lowest) {
            lowest = object->dlpi_addr + ph.p_vaddr;
          }
          if (ph.p_type == PT_TLS) tls = ph.p_memsz;
        }
        if ((lowest & ~uintptr_t{4095}) != s->base) return 0;
        s->tls_bytes = tls;
        s->main_program = object->dlpi_name == nullptr || object->dlpi_name[0] == '\0';
        return 1;
      },
      &search);
  if (search.tls_bytes == 0) return SIZE_MAX;
  void* handle = search.main_program ? dlopen(nullptr, RTLD_LAZY)
                                     : dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return SIZE_MAX;
  void* block = nullptr;
  const bool found = dlinfo(handle, RTLD_DI_TLS_DATA, &block) == 0 && block != nullptr;
  dlclose(handle);
  if (!found) return SIZE_MAX;
  const auto lo = reinterpret_cast<uintptr_t>(block);
  return CountWordsWithin(lo, lo + search.tls_bytes, value, value + 1);
}

inline size_t WritableWordsEqualTo(const void* code, uintptr_t value) {
  return value == UINTPTR_MAX ? SIZE_MAX : WritableWordsWithin(code, value, value + 1);
}

}  // namespace stackwalk::testing

#endif  // STACKWALK_TESTS_WRITABLE_WORDS_H_
