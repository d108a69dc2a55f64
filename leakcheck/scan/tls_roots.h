// The loaded objects' part of the roots (scan/roots.h): each object's writable PT_LOADs and TLS
// module, listed from inside a dl_iterate_phdr callback (the loader lock held: the list cannot
// change until the scan is over, and no dlopen can race); and the TLS of one thread from them:
// its static TLS blocks, its DTV and the dynamic TLS blocks behind it (glibc's layout: x86_64
// TLS variant II, the DTV at *(tp + 8); aarch64 and arm variant I, the DTV at *(tp + 0);
// dtv[-1] its length, dtv[i] = {val, to_free}, val == -1 unallocated).
#ifndef STACKWALK_LEAKCHECK_SCAN_TLS_ROOTS_H_
#define STACKWALK_LEAKCHECK_SCAN_TLS_ROOTS_H_

#include <cstddef>
#include <cstdint>

#include "leakcheck/scan/memory_reader.h"
#include "src/core/address_range.h"

namespace stackwalk::leakcheck {

class RootSet;
struct MapsEntry;
class MapsSnapshot;

struct TlsModule {
  size_t modid = 0;         // dlpi_tls_modid
  uintptr_t memsz = 0;      // PT_TLS p_memsz
  bool is_static = false;   // in the static TLS block of every thread, at tp + offset
  intptr_t offset = 0;      // static only: dlpi_tls_data - the caller's thread pointer
};

// Every loaded object's TLS module and writable PT_LOADs, in own memory (no malloc).
class LoadedModules {
 public:
  LoadedModules() = default;
  ~LoadedModules();
  LoadedModules(const LoadedModules&) = delete;
  LoadedModules& operator=(const LoadedModules&) = delete;

  // Lists the loaded objects with a nested dl_iterate_phdr: call it from inside the check's own
  // dl_iterate_phdr callback (glibc's loader lock is recursive), on the checking thread. False
  // if memory ran out (the lists are then partial).
  bool Collect();

  const TlsModule* tls_modules() const { return tls_; }
  size_t tls_module_count() const { return tls_count_; }
  const internal::AddressRange* writable_segments() const { return segments_; }
  size_t writable_segment_count() const { return segment_count_; }

 private:
  friend struct LoadedModulesVisitor;
  template <class T>
  bool Push(T** items, size_t* count, size_t* capacity, const T& item);

  TlsModule* tls_ = nullptr;
  size_t tls_count_ = 0, tls_capacity_ = 0;
  internal::AddressRange* segments_ = nullptr;
  size_t segment_count_ = 0, segment_capacity_ = 0;
  uintptr_t caller_tp_ = 0;
  bool ok_ = true;
};

// The calling thread's thread pointer (x86_64 fs_base, aarch64 tpidr_el0, arm TPIDRURO).
uintptr_t CurrentThreadPointer();

// One thread's TLS roots, kind kStaticTls and kDynamicTls, for thread `tid` whose thread
// pointer is `tp`. The DTV is read through `reader`, its length bounded by the largest modid.
// `copy`: the ranges may vanish while read (a thread that is not stopped).
void CollectThreadTls(int32_t tid, uintptr_t tp, const TlsModule* modules, size_t module_count,
                      MemoryReader& reader, bool copy, RootSet* out);

// The main thread's block around its thread pointer, [tp - kMainTcbSpan, tp + kMainTcbSpan)
// within tp's mapping: its struct pthread (pthread_setspecific values) and static TLS live in
// memory the loader allocated, not in a thread stack. False if tp is in no readable mapping.
// The kernel may have merged that memory with neighbouring anonymous mappings (the checker's
// own among them), so the caller cuts what is not the program's out of the span.
constexpr uintptr_t kMainTcbSpan = 16 * 1024;
bool MainThreadBlock(uintptr_t tp, const MapsSnapshot& maps, internal::AddressRange* out);

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_TLS_ROOTS_H_
