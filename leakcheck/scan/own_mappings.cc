#include "leakcheck/scan/own_mappings.h"

#include <sys/mman.h>
#include <sys/prctl.h>

#include <atomic>

namespace stackwalk::leakcheck {
namespace {

constexpr int kSlots = 4096;
// A slot is free while hi == 0, being written while hi == kBusy; lo is read only when hi > kBusy.
constexpr uintptr_t kBusy = 1;

struct Slot {
  std::atomic<uintptr_t> lo{0};
  std::atomic<uintptr_t> hi{0};
};
Slot g_slots[kSlots];                 // constant-initialized: usable before any constructor
std::atomic<int> g_high_water{0};     // slots at or above it were never used

void NameMapping(void* address, size_t bytes) {
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
  // Best effort (Linux 5.17 with CONFIG_ANON_VMA_NAME): shows as [anon:stackwalk-leakcheck].
  prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, address, bytes, "stackwalk-leakcheck");
}

void Register(uintptr_t lo, uintptr_t hi) {
  for (int i = 0; i < kSlots; ++i) {
    uintptr_t expected = 0;
    if (g_slots[i].hi.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) {
      g_slots[i].lo.store(lo, std::memory_order_relaxed);
      g_slots[i].hi.store(hi, std::memory_order_release);
      int high = g_high_water.load(std::memory_order_relaxed);
      while (high <= i &&
             !g_high_water.compare_exchange_weak(high, i + 1, std::memory_order_release)) {
      }
      return;
    }
  }
  // Full: the mapping stays unregistered (a scan then takes it for the program's).
}

Slot* FindSlot(uintptr_t lo) {
  const int high = g_high_water.load(std::memory_order_acquire);
  for (int i = 0; i < high; ++i) {
    if (g_slots[i].hi.load(std::memory_order_acquire) > kBusy &&
        g_slots[i].lo.load(std::memory_order_relaxed) == lo) {
      return &g_slots[i];
    }
  }
  return nullptr;
}

}  // namespace

void* OwnMap(size_t bytes) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) return nullptr;
  NameMapping(address, bytes);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(address);
  Register(lo, lo + bytes);
  return address;
}

void* OwnMapShared(size_t bytes, int fd, uint64_t offset) {
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       static_cast<off_t>(offset));
  if (address == MAP_FAILED) return nullptr;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(address);
  Register(lo, lo + bytes);
  return address;
}

void* OwnRemap(void* old_address, size_t old_bytes, size_t new_bytes) {
  void* address = mremap(old_address, old_bytes, new_bytes, MREMAP_MAYMOVE);
  if (address == MAP_FAILED) return nullptr;
  NameMapping(address, new_bytes);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(address);
  if (Slot* slot = FindSlot(reinterpret_cast<uintptr_t>(old_address))) {
    slot->hi.store(kBusy, std::memory_order_relaxed);
    slot->lo.store(lo, std::memory_order_relaxed);
    slot->hi.store(lo + new_bytes, std::memory_order_release);
  } else {
    Register(lo, lo + new_bytes);
  }
  return address;
}

void OwnUnmap(void* address, size_t bytes) {
  if (address == nullptr) return;
  if (Slot* slot = FindSlot(reinterpret_cast<uintptr_t>(address))) {
    // Busy while lo is cleared: the table is in the checker's globals, a root, where the old
    // address would point into whatever block is mapped there next.
    slot->hi.store(kBusy, std::memory_order_relaxed);
    slot->lo.store(0, std::memory_order_relaxed);
    slot->hi.store(0, std::memory_order_release);
  }
  munmap(address, bytes);
}

bool IsOwnMapping(uintptr_t lo, uintptr_t hi) {
  const int high = g_high_water.load(std::memory_order_acquire);
  for (int i = 0; i < high; ++i) {
    const uintptr_t slot_hi = g_slots[i].hi.load(std::memory_order_acquire);
    if (slot_hi <= kBusy) continue;
    const uintptr_t slot_lo = g_slots[i].lo.load(std::memory_order_relaxed);
    if (slot_lo < hi && lo < slot_hi) return true;
  }
  return false;
}

bool LowestOwnMapping(uintptr_t lo, uintptr_t hi, uintptr_t* own_lo, uintptr_t* own_hi) {
  bool found = false;
  const int high = g_high_water.load(std::memory_order_acquire);
  for (int i = 0; i < high; ++i) {
    const uintptr_t slot_hi = g_slots[i].hi.load(std::memory_order_acquire);
    if (slot_hi <= kBusy) continue;
    const uintptr_t slot_lo = g_slots[i].lo.load(std::memory_order_relaxed);
    if (slot_lo < hi && lo < slot_hi && (!found || slot_lo < *own_lo)) {
      *own_lo = slot_lo;
      *own_hi = slot_hi;
      found = true;
    }
  }
  return found;
}

}  // namespace stackwalk::leakcheck
