// CollectRoots (roots.h): the threads' registers, stacks and TLS, the loaded objects' writable
// segments, the caller, and the program's own anonymous mappings.
#include "leakcheck/scan/roots.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/scan/safe_reader.h"

namespace stackwalk::leakcheck {
namespace {

#if defined(__x86_64__)
constexpr uintptr_t kRedZone = 128;  // the SysV x86_64 ABI's: a leaf's locals below the SP
#else
constexpr uintptr_t kRedZone = 0;
#endif
// glibc's HEAP_MAX_SIZE (2 * DEFAULT_MMAP_THRESHOLD_MAX): a non-main arena's heaps are aligned
// to it, each starting with a heap_info whose first word is its arena.
constexpr uintptr_t kArenaHeapAlign = sizeof(void*) == 8 ? uintptr_t{64} << 20 : uintptr_t{1} << 20;

// A thread's stack from `from` (its SP less the red zone, or the signal method's frame) to the
// top of the mapping holding `sp`; an unstopped thread's whole mapping (it runs on: any of it
// may hold a pointer by the time it is read).
// `red_zone`: the bytes below `sp` that may be live (an interrupted leaf's locals; none below
// the SP of a call).
void AddStack(int32_t tid, uintptr_t sp, uintptr_t frame_lo, bool whole, uintptr_t red_zone,
              RootKind kind, const MapsSnapshot& maps, RootSet* out) {
  if (sp == 0) return;
  const MapsEntry* mapping = maps.Find(sp);
  if (mapping == nullptr || !mapping->readable) return;  // sigaltstack gone, garbage SP
  uintptr_t lo = mapping->range.lo;
  if (!whole) {
    // From the interrupted SP (its red zone included), never from frame_lo: below it the
    // signal method's frame holds the thread's whole extended register state (AVX upper halves,
    // zmm16-31: what glibc's string functions last copied), stale words the register root
    // leaves out on purpose (stop_world_signal.cc); the registers themselves are in `regs`.
    (void)frame_lo;
    const uintptr_t from = sp - red_zone;
    if (from > lo) lo = from;
  }
  out->Add({lo, static_cast<uintptr_t>(mapping->range.hi), kind, tid, whole});
}

constexpr uintptr_t kPage = 4096;

// The first block at or above `lo` (`blocks` is sorted by address).
size_t FirstBlockFrom(uintptr_t lo, const Allocation* blocks, size_t count) {
  size_t first = 0, last = count;
  while (first < last) {
    const size_t mid = first + (last - first) / 2;
    if (blocks[mid].address < lo) {
      first = mid + 1;
    } else {
      last = mid;
    }
  }
  return first;
}

// The pages a recorded block lies on: the allocator's (a whole mmap'ed chunk of glibc's, or a
// part of another allocator's arena), cut out of an anonymous mapping's root. The kernel merges
// such mappings with adjacent anonymous ones of the program's, so only these pages are cut, not
// the whole merged mapping.
internal::AddressRange ChunkPages(const Allocation& block) {
  const uintptr_t end = block.address + block.size;
  return {block.address & ~(kPage - 1), (end + kPage - 1) & ~(kPage - 1)};
}

// Adds [lo, hi) as roots of `kind` less what is not the program's or is a root already: the
// checker's own mappings, the excluded ranges, the loaded objects' writable segments (kGlobals)
// and the pages of the blocks from `block` on (all whole chunks, sorted). The kernel merges
// anonymous mappings that touch: a .bss past its file's last page, ld.so's early allocations
// (the first link_maps, the main thread's TLS), the checker's tables, glibc's mmap'ed chunks
// may all be one line of /proc/self/maps.
void AddAnonymousPieces(uintptr_t lo, uintptr_t hi, const RootInputs& inputs, size_t block,
                        RootKind kind, int32_t tid, RootSet* out) {
  const internal::AddressRange* segments = nullptr;
  size_t segment_count = 0;
  if (inputs.modules != nullptr) {
    segments = inputs.modules->writable_segments();
    segment_count = inputs.modules->writable_segment_count();
  }
  uintptr_t from = lo;
  while (from < hi) {
    // The lowest cut still ahead: the next block's pages, an excluded range or a segment.
    internal::AddressRange cut{hi, hi};
    while (block < inputs.block_count && inputs.blocks[block].address < hi &&
           ChunkPages(inputs.blocks[block]).hi <= from) {
      ++block;
    }
    if (block < inputs.block_count && inputs.blocks[block].address < hi) {
      cut = ChunkPages(inputs.blocks[block]);
    }
    for (const auto& [ranges, count] : {std::pair{inputs.excluded, inputs.excluded_count},
                                        std::pair{segments, segment_count}}) {
      for (size_t i = 0; i < count; ++i) {
        const internal::AddressRange& e = ranges[i];
        if (e.hi > from && e.lo < hi && e.lo < cut.lo) cut = e;
      }
    }
    uintptr_t own_lo, own_hi;
    if (LowestOwnMapping(from, hi, &own_lo, &own_hi) && own_lo < cut.lo) cut = {own_lo, own_hi};
    const auto to = static_cast<uintptr_t>(cut.lo < hi ? cut.lo : hi);
    if (cut.lo > from) out->Add({from, to, kind, tid, true});
    if (cut.hi <= from) break;  // cannot happen: keeps the loop finite on a malformed input
    from = cut.hi;
  }
}

// A glibc arena heap at `at` (aligned to HEAP_MAX_SIZE): its heap_info {ar_ptr, prev, size}
// names an arena that lives in libc's .data (main_arena) or at the start of its first heap, whose
// own first word names it again. The heap's bytes in use (`size`) go to *bytes. The kernel may
// have merged the heap with a neighbouring mapping, so `at` need not start a maps line.
bool IsArenaHeapAt(uintptr_t at, const MapsSnapshot& maps, MemoryReader& reader, uintptr_t* bytes) {
  uintptr_t info[3] = {};
  if (!reader.Read(at, info, sizeof info) || info[0] == 0) return false;
  const uintptr_t ar_ptr = info[0];
  const MapsEntry* arena = maps.Find(ar_ptr);
  if (arena == nullptr || !arena->writable) return false;
  bool ok = arena->kind == MapsEntry::Kind::kFile;
  if (!ok && arena->kind == MapsEntry::Kind::kAnonymous) {
    uintptr_t first_heap_ar_ptr = 0;
    ok = reader.Read(ar_ptr & ~(kArenaHeapAlign - 1), &first_heap_ar_ptr, sizeof first_heap_ar_ptr) &&
         first_heap_ar_ptr == ar_ptr;
  }
  if (!ok) return false;
  const uintptr_t size = info[2];
  *bytes = size >= kPage && size <= kArenaHeapAlign ? (size + kPage - 1) & ~(kPage - 1)
                                                    : kArenaHeapAlign;
  return true;
}

bool HoldsThreadSp(const MapsEntry& entry, const RootInputs& inputs) {
  if (entry.range.Contains(inputs.caller_sp)) return true;
  for (size_t i = 0; i < inputs.thread_count; ++i) {
    const StoppedThread& thread = inputs.threads[i];
    if (thread.state == StoppedThread::State::kGone) continue;
    if ((thread.sp != 0 && entry.range.Contains(thread.sp)) ||
        (thread.frame_lo != 0 && entry.range.Contains(thread.frame_lo))) {
      return true;
    }
  }
  return false;
}

void AddAnonymous(const RootInputs& inputs, MemoryReader& reader, RootSet* out) {
  const MapsSnapshot& maps = *inputs.maps;
  for (size_t i = 0; i < maps.size(); ++i) {
    const MapsEntry& entry = maps[i];
    if (entry.kind != MapsEntry::Kind::kAnonymous || !entry.readable || !entry.writable ||
        entry.shared) {
      continue;
    }
    const uintptr_t lo = entry.range.lo, hi = entry.range.hi;
    if (HoldsThreadSp(entry, inputs)) continue;  // a stack: below the SP it is dead
    // Less glibc's arena heaps in it, and (AddAnonymousPieces) the pages of every recorded block:
    // the allocator's memory, whose stale words would hold leaks. The rest is the program's.
    uintptr_t from = lo;
    for (uintptr_t at = (lo + kArenaHeapAlign - 1) & ~(kArenaHeapAlign - 1); at >= lo && at < hi;
         at += kArenaHeapAlign) {
      uintptr_t heap_bytes = 0;
      if (!IsArenaHeapAt(at, maps, reader, &heap_bytes)) continue;
      if (at > from) {
        AddAnonymousPieces(from, at, inputs, FirstBlockFrom(from, inputs.blocks, inputs.block_count),
                           RootKind::kAnonymous, 0, out);
      }
      from = hi - at > heap_bytes ? at + heap_bytes : hi;
    }
    if (from < hi) {
      AddAnonymousPieces(from, hi, inputs, FirstBlockFrom(from, inputs.blocks, inputs.block_count),
                         RootKind::kAnonymous, 0, out);
    }
  }
}

void AddThreadTls(int32_t tid, uintptr_t tp, bool copy, const RootInputs& inputs,
                  MemoryReader& reader, RootSet* out) {
  if (tp == 0) return;
  if (inputs.modules != nullptr) {
    CollectThreadTls(tid, tp, inputs.modules->tls_modules(), inputs.modules->tls_module_count(),
                     reader, copy, out);
  }
  internal::AddressRange block;
  if (tid == getpid() && MainThreadBlock(tp, *inputs.maps, &block)) {
    AddAnonymousPieces(block.lo, block.hi, inputs,
                       FirstBlockFrom(block.lo, inputs.blocks, inputs.block_count),
                       RootKind::kStaticTls, tid, out);
  }
}

}  // namespace

void CollectRoots(const RootInputs& inputs, const RootOptions& options, RootSet* out) {
  if (inputs.maps == nullptr) return;
  const MapsSnapshot& maps = *inputs.maps;
  SafeReader reader(&maps);

  if (inputs.modules != nullptr) {
    const LoadedModules& modules = *inputs.modules;
    for (size_t i = 0; i < modules.writable_segment_count(); ++i) {
      const internal::AddressRange& segment = modules.writable_segments()[i];
      out->Add({static_cast<uintptr_t>(segment.lo), static_cast<uintptr_t>(segment.hi),
                RootKind::kGlobals, 0, false});
    }
  }

  for (size_t i = 0; i < inputs.thread_count; ++i) {
    const StoppedThread& thread = inputs.threads[i];
    if (thread.state == StoppedThread::State::kGone) continue;
    const bool stopped = thread.state == StoppedThread::State::kStopped;
    if (stopped && thread.reg_bytes != 0) {
      const auto regs = reinterpret_cast<uintptr_t>(thread.regs);
      const uint32_t bytes = thread.reg_bytes < sizeof thread.regs ? thread.reg_bytes
                                                                   : sizeof thread.regs;
      out->Add({regs, regs + bytes, RootKind::kRegisters, thread.tid, false});
    }
    AddStack(thread.tid, thread.sp, thread.frame_lo, !stopped, kRedZone, RootKind::kStack, maps,
             out);
    AddThreadTls(thread.tid, thread.thread_pointer, !stopped, inputs, reader, out);
  }

  const auto caller_tid = static_cast<int32_t>(syscall(SYS_gettid));
  if (inputs.caller != nullptr) {
    const auto context = reinterpret_cast<uintptr_t>(inputs.caller);
    out->Add({context, context + sizeof(ucontext_t), RootKind::kCallerStack, caller_tid, false});
  }
  if (inputs.caller_registers != nullptr) {
    const auto registers = reinterpret_cast<uintptr_t>(inputs.caller_registers);
    out->Add({registers, registers + kCallerRegisterWords * sizeof(uintptr_t),
              RootKind::kCallerStack, caller_tid, false});
  }
  // caller_sp is the SP of a call (the program's into the checker's entry point): below it is
  // the checker's.
  AddStack(caller_tid, inputs.caller_sp, 0, false, 0, RootKind::kCallerStack, maps, out);
  AddThreadTls(caller_tid, CurrentThreadPointer(), false, inputs, reader, out);

  if (options.anonymous_mappings) AddAnonymous(inputs, reader, out);
}

}  // namespace stackwalk::leakcheck
