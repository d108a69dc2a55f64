// The loaded objects' roots and per-thread TLS (tls_roots.h).
#include "leakcheck/scan/tls_roots.h"

#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

#include "leakcheck/scan/maps_snapshot.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/roots.h"

namespace stackwalk::leakcheck {
namespace {

// Where the thread control block keeps the DTV pointer.
#if defined(__x86_64__) || defined(__i386__)
constexpr uintptr_t kDtvOffset = sizeof(void*);  // tcbhead_t {tcb, dtv, self, ...}
#else
constexpr uintptr_t kDtvOffset = 0;              // tcbhead_t {dtv, private}
#endif
constexpr uintptr_t kUnallocated = ~uintptr_t{0};  // TLS_DTV_UNALLOCATED
constexpr size_t kMaxDtvLength = size_t{1} << 20;  // beyond it the length word is not one

struct DtvEntry {  // glibc's dtv_t {val, to_free}; dtv[-1].val is the length, dtv[0] generation
  uintptr_t val;
  uintptr_t to_free;
};

size_t MaxModid(const TlsModule* modules, size_t count) {
  size_t max = 0;
  for (size_t i = 0; i < count; ++i) max = modules[i].modid > max ? modules[i].modid : max;
  return max;
}

}  // namespace

struct LoadedModulesVisitor {
  static int Visit(dl_phdr_info* info, size_t size, void* self);
};

uintptr_t CurrentThreadPointer() {
  uintptr_t tp;
#if defined(__x86_64__)
  asm volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
  asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
#else
  tp = reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#endif
  return tp;
}

LoadedModules::~LoadedModules() {
  OwnUnmap(tls_, tls_capacity_ * sizeof(TlsModule));
  OwnUnmap(segments_, segment_capacity_ * sizeof(internal::AddressRange));
}

template <class T>
bool LoadedModules::Push(T** items, size_t* count, size_t* capacity, const T& item) {
  if (*count == *capacity) {
    const size_t grown = *capacity == 0 ? 256 : 2 * *capacity;
    void* memory = *items == nullptr ? OwnMap(grown * sizeof(T))
                                     : OwnRemap(*items, *capacity * sizeof(T), grown * sizeof(T));
    if (memory == nullptr) return false;
    *items = static_cast<T*>(memory);
    *capacity = grown;
  }
  (*items)[(*count)++] = item;
  return true;
}

bool LoadedModules::Collect() {
  tls_count_ = segment_count_ = 0;
  ok_ = true;
  caller_tp_ = CurrentThreadPointer();
  dl_iterate_phdr(&LoadedModulesVisitor::Visit, this);
  return ok_;
}

int LoadedModulesVisitor::Visit(dl_phdr_info* info, size_t, void* self_pointer) {
  auto* self = static_cast<LoadedModules*>(self_pointer);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD && (phdr.p_flags & PF_W) != 0 && phdr.p_memsz != 0) {
      internal::AddressRange range;
      range.lo = info->dlpi_addr + phdr.p_vaddr;
      // To the end of its last page: the rest of it is the object's too, and ld.so's early
      // allocator (before libc's malloc) hands it out: the first link_maps' fields live there.
      const uintptr_t page = getauxval(AT_PAGESZ) != 0 ? getauxval(AT_PAGESZ) : 4096;
      range.hi = (range.lo + phdr.p_memsz + page - 1) & ~(page - 1);
      self->ok_ &= self->Push(&self->segments_, &self->segment_count_, &self->segment_capacity_,
                              range);
    } else if (phdr.p_type == PT_TLS && info->dlpi_tls_modid != 0 && phdr.p_memsz != 0) {
      TlsModule module;
      module.modid = info->dlpi_tls_modid;
      module.memsz = phdr.p_memsz;
      // Static when this thread's DTV entry points at it and owns nothing to free: glibc's
      // static blocks (the initial objects', and a dlopen'ed object's placed in the surplus)
      // have to_free == nullptr; a dynamic block is malloc'ed (to_free its allocation).
      const auto data = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      if (data != 0) {
        const auto* dtv = *reinterpret_cast<const DtvEntry* const*>(self->caller_tp_ + kDtvOffset);
        if (dtv != nullptr && module.modid <= dtv[-1].val && dtv[module.modid].val == data &&
            dtv[module.modid].to_free == 0) {
          module.is_static = true;
          module.offset = static_cast<intptr_t>(data - self->caller_tp_);
        }
      }
      self->ok_ &= self->Push(&self->tls_, &self->tls_count_, &self->tls_capacity_, module);
    }
  }
  return 0;
}

void CollectThreadTls(int32_t tid, uintptr_t tp, const TlsModule* modules, size_t module_count,
                      MemoryReader& reader, bool copy, RootSet* out) {
  if (tp == 0) return;
  for (size_t i = 0; i < module_count; ++i) {
    if (!modules[i].is_static) continue;
    const uintptr_t lo = tp + static_cast<uintptr_t>(modules[i].offset);
    out->Add({lo, lo + modules[i].memsz, RootKind::kStaticTls, tid, copy});
  }

  uintptr_t dtv = 0;
  if (!reader.Read(tp + kDtvOffset, &dtv, sizeof dtv) || dtv == 0) return;
  uintptr_t length = 0;
  if (!reader.Read(dtv - sizeof(DtvEntry), &length, sizeof length)) return;
  const size_t max_modid = MaxModid(modules, module_count);
  if (length > kMaxDtvLength) length = max_modid;  // not a length: read no further than needed
  // The array itself (from dtv[-1]): its to_free words point at the dynamic blocks' starts.
  out->Add({dtv - sizeof(DtvEntry), dtv + (length + 1) * sizeof(DtvEntry), RootKind::kDynamicTls,
            tid, true});
  const size_t last = length < max_modid ? length : max_modid;
  for (size_t modid = 1; modid <= last; ++modid) {
    const TlsModule* module = nullptr;
    for (size_t i = 0; i < module_count && module == nullptr; ++i) {
      if (modules[i].modid == modid) module = &modules[i];
    }
    // Static blocks are above; a modid no loaded object has is a closed library's (stale).
    if (module == nullptr || module->is_static) continue;
    DtvEntry entry;
    if (!reader.Read(dtv + modid * sizeof(DtvEntry), &entry, sizeof entry)) return;
    if (entry.val == kUnallocated || entry.val == 0) continue;
    out->Add({entry.val, entry.val + module->memsz, RootKind::kDynamicTls, tid, true});
  }
}

bool MainThreadBlock(uintptr_t tp, const MapsSnapshot& maps, internal::AddressRange* out) {
  const MapsEntry* mapping = maps.Find(tp);
  if (tp == 0 || mapping == nullptr || !mapping->readable) return false;
  const internal::AddressRange& range = mapping->range;
  out->lo = tp - range.lo > kMainTcbSpan ? tp - kMainTcbSpan : range.lo;
  out->hi = range.hi - tp > kMainTcbSpan ? tp + kMainTcbSpan : range.hi;
  return true;
}

}  // namespace stackwalk::leakcheck
