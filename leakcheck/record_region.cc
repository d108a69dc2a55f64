#include "leakcheck/record_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/dl_find_object.h"
#include "core/module_map.h"
#include "leakcheck/dump/dump_format.h"
#include "leakcheck/record_handover.h"
#include "leakcheck/report_destination.h"
#include "leakcheck/scan/own_mappings.h"
#include "leakcheck/session.h"
#include "leakcheck/spin_lock.h"

namespace stackwalk::leakcheck {
namespace {

using record::Extent;
using record::Header;

enum AttachState : int { kUnknown = 0, kAttaching = 1, kAttached = 2, kNone = 3 };
std::atomic<int> g_state{kUnknown};
Header* g_header = nullptr;
int g_fd = -1;
dev_t g_fd_device = 0;   // the memfd's identity at Attach: the program may close descriptor 498
ino_t g_fd_inode = 0;    // and get a file of its own there, which must never be truncated
std::atomic<bool> g_fd_lost{false};  // set for good once descriptor 498 is something else
SpinLock g_grow_lock;     // the region's size, grown under it (ftruncate never shrinks it then)
uint64_t g_size = 0;      // under g_grow_lock
std::atomic<uint32_t> g_module_updates{0};
SpinLock g_modules_lock;  // one module list update at a time (dlclose runs on any thread)
// The module map's generation the list last written was made from (0: none written yet).
std::atomic<uint64_t> g_recorded_generation{0};

// The tables as they were at a fork, copied by the parent with every table lock held (after the
// fork its threads write on into the shared pieces): the child puts them in place of the shared
// ones. Own memory, made at the first fork.
struct ForkCopy {
  uintptr_t address;  // the shared piece
  void* copy;         // its private copy, when not in g_child_fd; nullptr: none
  size_t bytes;
  uint32_t kind;      // its directory row's, for the child's own region
  uint32_t index;
  uint64_t offset;    // where its copy lies in g_child_fd; kNotInChild: none there
  uint64_t source;    // where the shared piece lies in the region (g_fd)
  bool placed;        // the child has its copy in the piece's place
};
constexpr uint64_t kNotInChild = ~uint64_t{0};
// The child's own region (under the launcher, record_handover.h), written by the parent at the
// fork with the copies (pwrite: the kernel fills the file's pages, none mapped nor faulted in by
// the parent; copying through a mapping of it faulted in every page, zeroed first, and was most of
// a fork's cost): the child maps them in place of the shared pieces. -1: none.
int g_child_fd = -1;
// In the library's zero pages (untouched until a fork): no allocation at a fork that can fail and
// leave the child sharing its parent's live tables.
ForkCopy g_fork_copies[record::kExtentCapacity];
size_t g_fork_copy_count = 0;

// Calls fn(begin, end) for each range of the `bytes` of file `fd` at `offset` that holds data,
// relative to `offset` (lseek's SEEK_DATA and SEEK_HOLE: pages never touched, or punched out, are
// holes in the region and zero in a fresh copy already, so a table's untouched tail costs neither
// time nor memory; all of it where SEEK_DATA is not known); false as soon as fn is. Not mincore:
// a page of the memfd swapped out is not resident, yet holds data. Async-signal-safe; the
// descriptor's file offset moves, which nothing reads (the launcher maps the region, the tests
// pread it).
template <class Fn>
bool ForEachData(int fd, uint64_t offset, size_t bytes, Fn&& fn) {
  const uint64_t end = offset + bytes;
  for (uint64_t at = offset; at < end;) {
    const off_t data = lseek(fd, static_cast<off_t>(at), SEEK_DATA);
    if (data < 0 && errno == ENXIO) return true;  // nothing but holes from here on
    if (data < 0) return fn(at - offset, end - offset);  // no SEEK_DATA here: all of it
    if (static_cast<uint64_t>(data) >= end) return true;
    const off_t hole = lseek(fd, data, SEEK_HOLE);
    const uint64_t stop =
        hole < 0 || static_cast<uint64_t>(hole) > end ? end : static_cast<uint64_t>(hole);
    if (!fn(data - offset, stop - offset)) return false;
    at = stop;
  }
  return true;
}
// Copies what `from` holds, the `bytes` of the region `fd` at `offset`, to `to` (zeroed).
void CopyData(void* to, const void* from, int fd, uint64_t offset, size_t bytes) {
  ForEachData(fd, offset, bytes, [&](uint64_t begin, uint64_t end) {
    std::memcpy(static_cast<char*>(to) + begin, static_cast<const char*>(from) + begin,
                end - begin);
    return true;
  });
}
// CopyData into the file `to` at `to_offset` instead (pwrite; its holes stay holes). False if a
// write failed (no room: the copy is then incomplete).
bool WriteData(int to, uint64_t to_offset, const void* from, int fd, uint64_t offset,
               size_t bytes) {
  return ForEachData(fd, offset, bytes, [&](uint64_t begin, uint64_t end) {
    while (begin < end) {
      const ssize_t n = pwrite(to, static_cast<const char*>(from) + begin, end - begin,
                               static_cast<off_t>(to_offset + begin));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      begin += static_cast<uint64_t>(n);
    }
    return true;
  });
}

// A decimal number from the environment, or -1.
long EnvNumber(const char* name) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  long value = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > 1000000000) return -1;
    value = value * 10 + (*c - '0');
  }
  return value;
}

// Whether the file size limit allows the region `bytes` long: ftruncate beyond RLIMIT_FSIZE
// raises SIGXFSZ, which kills the program. Past it, pieces are the process's own memory instead
// (the record then lacks them: the reader says which).
bool SizeAllowed(uint64_t bytes) {
  struct rlimit limit;
  return getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
         bytes <= limit.rlim_cur;
}

// Fills in a new header's fixed fields for this process (the program's path is the caller's), the
// magic last: a reader takes a region without it for one never begun.
void BeginHeader(Header* header) {
  header->version = record::kVersion;
  header->extent_capacity = record::kExtentCapacity;
  header->header_bytes = record::kHeaderBytes;
  header->pid = static_cast<int32_t>(getpid());
  header->machine = dump::NativeMachine();
  header->pointer_bytes = sizeof(void*);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(header->magic, record::kMagic, sizeof(record::kMagic));
}

// The region is this process's if the launcher named it and this is the process it checks (the
// same pid: a wrapper's exec of the program keeps it). Each new image starts it afresh: what an
// earlier image of this process recorded went with its memory.
bool Attach() {
  const long fd = EnvNumber(record::kDescriptorVariable);
  if (fd < 3 || !LaunchersProgram()) return false;
  struct stat st;
  // A memfd: a regular file with no name (a file of the program's own must never be truncated).
  if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 0) {
    return false;
  }
  g_fd_device = st.st_dev;
  g_fd_inode = st.st_ino;
  if (!SizeAllowed(record::kHeaderBytes) || ftruncate(static_cast<int>(fd), 0) != 0 ||
      ftruncate(static_cast<int>(fd), static_cast<off_t>(record::kHeaderBytes)) != 0) {
    return false;
  }
  void* header = OwnMapShared(record::kHeaderBytes, static_cast<int>(fd), 0);
  if (header == nullptr) return false;
  g_header = static_cast<Header*>(header);
  g_fd = static_cast<int>(fd);
  g_size = record::kHeaderBytes;
  const ssize_t n = readlink("/proc/self/exe", g_header->program, sizeof(g_header->program) - 1);
  g_header->program[n > 0 ? n : 0] = '\0';
  BeginHeader(g_header);
  return true;
}

// Whether g_fd is still the memfd Attach took (fstat: the program may have closed it and opened
// something else at that number). Checked before each ftruncate and hole punch, both rare.
bool RegionFdIsOurs() {
  if (g_fd_lost.load(std::memory_order_relaxed)) return false;
  struct stat st;
  if (fstat(g_fd, &st) == 0 && st.st_dev == g_fd_device && st.st_ino == g_fd_inode) return true;
  g_fd_lost.store(true, std::memory_order_relaxed);  // never touched again
  return false;
}

bool Attached() {
  int state = g_state.load(std::memory_order_acquire);
  if (state == kAttached) return true;
  if (state == kNone) return false;
  if (state == kUnknown && g_state.compare_exchange_strong(state, kAttaching)) {
    const bool ok = Attach();
    g_state.store(ok ? kAttached : kNone, std::memory_order_release);
    return ok;
  }
  while ((state = g_state.load(std::memory_order_acquire)) == kAttaching) sched_yield();
  return state == kAttached;
}

// Whether the region is still this process's: a child made without the fork handlers (glibc's
// _Fork, a raw clone) shares its parent's pieces and header, and must not grow, retire or mark
// them. Called where pieces are mapped or retired (rare), never per allocation.
bool OwnsRegion() {
  if (g_state.load(std::memory_order_acquire) != kAttached) return false;
  if (g_header->pid == static_cast<int32_t>(getpid())) return true;
  g_state.store(kNone, std::memory_order_release);  // the parent's: let go of it, touch nothing
  return false;
}

// A free (or retired) directory row, marked busy; nullptr if none is left.
Extent* TakeRow() {
  for (uint32_t i = 0; i < record::kExtentCapacity; ++i) {
    Extent& row = g_header->extents[i];
    uint64_t state = __atomic_load_n(&row.state, __ATOMIC_RELAXED);
    if (state != record::kFree && state != record::kDead) continue;
    if (!__atomic_compare_exchange_n(&row.state, &state, uint64_t{record::kBusy}, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      continue;
    }
    uint64_t high = __atomic_load_n(&g_header->extent_high, __ATOMIC_RELAXED);
    while (high <= i && !__atomic_compare_exchange_n(&g_header->extent_high, &high, uint64_t{i} + 1,
                                                      true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
    }
    return &row;
  }
  return nullptr;
}

Extent* LiveRowAt(uintptr_t address) {
  const uint64_t high = __atomic_load_n(&g_header->extent_high, __ATOMIC_ACQUIRE);
  for (uint64_t i = 0; i < high && i < record::kExtentCapacity; ++i) {
    Extent& row = g_header->extents[i];
    if (__atomic_load_n(&row.state, __ATOMIC_ACQUIRE) == record::kLive && row.address == address) {
      return &row;
    }
  }
  return nullptr;
}

}  // namespace

void* RecordMap(size_t bytes, record::ExtentKind kind, uint32_t index) {
  if (!Attached() || !OwnsRegion()) return OwnMap(bytes);
  // Offsets in the region are whole pages (mmap's rule); the tail of the last page is unused.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) & ~(page - 1);
  Extent* row = TakeRow();
  if (row == nullptr) {
    __atomic_fetch_add(&g_header->lost_extents, 1, __ATOMIC_RELAXED);
    return OwnMap(bytes);
  }
  // Held until the piece is listed: a fork (RecordBeforeFork) sees every piece mapped.
  SpinLockHolder hold(g_grow_lock);
  const uint64_t offset = g_size;
  if (!SizeAllowed(offset + bytes) || !RegionFdIsOurs() ||
      ftruncate(g_fd, static_cast<off_t>(offset + bytes)) != 0) {
    // Recorded privately: the reader says the record lacks it.
    __atomic_fetch_add(&g_header->lost_extents, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&row->state, uint64_t{record::kFree}, __ATOMIC_RELEASE);
    return OwnMap(bytes);
  }
  g_size = offset + bytes;
  void* address = OwnMapShared(bytes, g_fd, offset);
  if (address == nullptr) {
    __atomic_store_n(&row->state, uint64_t{record::kFree}, __ATOMIC_RELEASE);
    return nullptr;
  }
  row->kind = kind;
  row->index = index;
  row->offset = offset;
  row->address = reinterpret_cast<uintptr_t>(address);
  row->bytes = bytes;
  __atomic_store_n(&row->state, uint64_t{record::kLive}, __ATOMIC_RELEASE);
  return address;
}

namespace {

// Retires a live row (Live -> Dead): only the caller that wins it punches the pages out and
// unmaps, so a piece is never unmapped twice (its address may be another mapping's by then).
bool RetireRow(Extent& row, size_t bytes) {
  uint64_t live = record::kLive;
  const uint64_t offset = row.offset;
  if (!__atomic_compare_exchange_n(&row.state, &live, uint64_t{record::kDead}, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    return false;
  }
  // The region keeps its size (offsets are never reused) but not the pages.
  if (RegionFdIsOurs()) {
    fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(bytes));
  }
  return true;
}

}  // namespace

void RecordUnmap(void* address, size_t bytes) {
  if (address == nullptr) return;
  if (OwnsRegion()) {
    if (Extent* row = LiveRowAt(reinterpret_cast<uintptr_t>(address))) {
      if (!RetireRow(*row, bytes)) return;  // another thread retired it, and unmaps it
    }
  }
  OwnUnmap(address, bytes);
}

namespace {

// RecordModules' work. `wait`: false from an allocation hook, which may run inside a
// dl_iterate_phdr callback (the loader's lock held): it then never waits for a lock another
// thread may hold while waiting for the loader's, and leaves the update to a later new stack.
void WriteModules(bool wait) {
  if (!Attached() || !OwnsRegion()) return;
  // One update at a time: two would both retire the same older list.
  if (wait) {
    g_modules_lock.Lock();
  } else if (!g_modules_lock.TryLock()) {
    return;
  }
  SpinLockHolder hold(g_modules_lock, SpinLockHolder::kAdopt);
  internal::ModuleMap& map = internal::ModuleMap::Global();
  bool busy = false;
  if (wait) {
    map.RefreshIfChanged();
  } else {
    map.RefreshIfChangedUnlessBusy(&busy);
    if (busy) return;
  }
  internal::ModuleMap::Reader reader(map);
  const internal::ModuleSnapshot* snapshot = reader.snapshot();
  if (snapshot == nullptr ||
      snapshot->generation() == g_recorded_generation.load(std::memory_order_relaxed)) {
    return;  // the list written holds these objects already
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = (sizeof(record::ModuleList) +
                        sizeof(record::Module) * static_cast<size_t>(snapshot->size()) + page - 1) &
                       ~(page - 1);
  const uint32_t number = g_module_updates.fetch_add(1, std::memory_order_relaxed) + 1;
  auto* list = static_cast<record::ModuleList*>(RecordMap(bytes, record::kModules, number));
  if (list == nullptr) return;
  uint64_t count = 0;
  for (int i = 0; i < snapshot->size(); ++i) {
    const internal::Module& m = snapshot->module(i);
    if (m.is_vdso) continue;  // no file to name it from
    record::Module& out = list->modules[count++];
    const char* path = m.path[0] != '\0' ? m.path : g_header->program;
    const size_t length = strnlen(path, sizeof(out.path) - 1);  // the list is zeroed: ends in NUL
    std::memcpy(out.path, path, length);
    std::memcpy(out.build_id, m.build_id, m.build_id_size);
    out.build_id_size = m.build_id_size;
    out.load_bias = m.load_bias;
    out.lo = m.extent.lo;
    out.hi = m.extent.hi;
    out.exec_count = static_cast<uint32_t>(m.exec_count < 4 ? m.exec_count : 4);
    for (uint32_t e = 0; e < out.exec_count; ++e) {
      out.exec_lo[e] = m.exec[e].lo;
      out.exec_hi[e] = m.exec[e].hi;
    }
  }
  // The count last: a list the program died writing reads as empty, and the older one is used.
  __atomic_store_n(&list->count, count, __ATOMIC_RELEASE);
  g_recorded_generation.store(snapshot->generation(), std::memory_order_release);
  // The lists before this one are retired (a later update may have retired this one already).
  const uint64_t high = __atomic_load_n(&g_header->extent_high, __ATOMIC_ACQUIRE);
  for (uint64_t i = 0; i < high && i < record::kExtentCapacity; ++i) {
    Extent& row = g_header->extents[i];
    if (__atomic_load_n(&row.state, __ATOMIC_ACQUIRE) == record::kLive &&
        row.kind == record::kModules && row.index < number) {
      const uintptr_t address = row.address;
      const size_t bytes = row.bytes;
      if (RetireRow(row, bytes)) OwnUnmap(reinterpret_cast<void*>(address), bytes);
    }
  }
}

}  // namespace

void RecordModules() { WriteModules(/*wait=*/true); }

namespace {
// Code in no loaded object (a JIT's, an anonymous mapping's): no module list would name it, so
// a new stack through it asks for no rewrite, which would look for a changed loaded set (a
// dl_iterate_phdr) at every such stack. Only glibc's lock-free _dl_find_object can tell;
// elsewhere the rewrite is asked for as before.
bool InNoLoadedObject(uintptr_t pc) {
  if (!internal::kHaveDlFindObject) return false;
  internal::GlibcObject found;
  return !internal::FindObjectByGlibc(pc, &found);
}
}  // namespace

void RecordModulesCovering(void* const* pcs, int n) {
  if (!Attached()) return;
  {
    internal::ModuleMap::Reader reader(internal::ModuleMap::Global());
    const internal::ModuleSnapshot* snapshot = reader.snapshot();
    bool covered = snapshot != nullptr && snapshot->generation() ==
                                              g_recorded_generation.load(std::memory_order_acquire);
    for (int i = 0; covered && i < n; ++i) {
      // A byte back: a return address may lie just past its object's last byte (the reader
      // looks a frame up so too).
      const uintptr_t pc = reinterpret_cast<uintptr_t>(pcs[i]);
      covered = pc == 0 || snapshot->Find(pc - 1) != nullptr || InNoLoadedObject(pc - 1);
    }
    if (covered) return;
  }
  WriteModules(/*wait=*/false);
}

void RecordBeforeFork() {
  // Decided now, waiting for another thread's Attach or attaching here: a state that changed
  // between this handler and the fork would leave the child attached to its parent's pieces with
  // no copies of them (Attach takes no lock a forking thread holds).
  if (!Attached()) return;
  g_grow_lock.Lock();  // no piece is mapped until the fork is over
  g_fork_copy_count = 0;
  const uint64_t high = __atomic_load_n(&g_header->extent_high, __ATOMIC_ACQUIRE);
  uint64_t child_size = record::kHeaderBytes;
  for (uint64_t i = 0; i < high && i < record::kExtentCapacity; ++i) {
    const Extent& row = g_header->extents[i];
    if (__atomic_load_n(&row.state, __ATOMIC_ACQUIRE) != record::kLive) continue;
    ForkCopy& copy = g_fork_copies[g_fork_copy_count++];
    copy.address = row.address;
    copy.bytes = row.bytes;
    copy.kind = row.kind;
    copy.index = row.index;
    copy.offset = kNotInChild;
    copy.source = row.offset;
    child_size += row.bytes;
  }
  // The child's region, if there is a launcher to hand it to; else (or failing that) private
  // copies mapped here, which the child puts in place as they are (a copy written to a file
  // here would be copied again into the child's private memory there).
  g_child_fd = -1;
  if (HandoverSocket() >= 0 && SizeAllowed(child_size)) {
    g_child_fd = memfd_create("stackwalk-leakcheck-record", MFD_CLOEXEC);
    if (g_child_fd >= 0 && ftruncate(g_child_fd, static_cast<off_t>(child_size)) != 0) {
      close(g_child_fd);
      g_child_fd = -1;
    }
  }
  uint64_t offset = record::kHeaderBytes;
  // Where the pieces' data lies: descriptor 498, unless the program reused it (copied whole then).
  const int source = RegionFdIsOurs() ? g_fd : -1;
  for (size_t i = 0; i < g_fork_copy_count; ++i) {
    ForkCopy& copy = g_fork_copies[i];
    const void* from = reinterpret_cast<const void*>(copy.address);
    copy.copy = nullptr;
    copy.placed = false;
    if (g_child_fd >= 0) {
      if (WriteData(g_child_fd, offset, from, source, copy.source, copy.bytes)) {
        copy.offset = offset;
        offset += copy.bytes;
        continue;
      }
      offset += copy.bytes;
    }
    void* mem =
        mmap(nullptr, copy.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) continue;  // out of memory: the child copies it itself
    copy.copy = mem;
    CopyData(copy.copy, from, source, copy.source, copy.bytes);
  }
}

namespace {
// The fork's copies let go of. The list lies in the checker's globals, a root: an address left
// there (a copy just unmapped, a piece retired later) would keep whatever block is mapped there
// next reachable.
void ForgetForkCopies() {
  std::memset(g_fork_copies, 0, g_fork_copy_count * sizeof(ForkCopy));
  g_fork_copy_count = 0;
}
}  // namespace

void RecordAfterForkParent() {
  if (g_state.load(std::memory_order_acquire) != kAttached) return;
  for (size_t i = 0; i < g_fork_copy_count; ++i) {
    if (g_fork_copies[i].copy != nullptr) munmap(g_fork_copies[i].copy, g_fork_copies[i].bytes);
  }
  ForgetForkCopies();
  if (g_child_fd >= 0) close(g_child_fd);  // the child's, and the launcher's once handed over
  g_child_fd = -1;
  g_grow_lock.Unlock();
}

namespace {

// Reads what the `bytes` of file `fd` at `offset` hold into `to` (zeroed; holes skipped); false
// if a read failed or ended early.
bool ReadData(int fd, uint64_t offset, void* to, size_t bytes) {
  return ForEachData(fd, offset, bytes, [&](uint64_t begin, uint64_t end) {
    while (begin < end) {
      const ssize_t n = pread(fd, static_cast<char*>(to) + begin, end - begin,
                              static_cast<off_t>(offset + begin));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      begin += static_cast<uint64_t>(n);
    }
    return true;
  });
}

// In a forked child: a piece of the parent's region replaced by private memory holding the
// tables as they were at the fork. False if no copy could be made (its tables start empty).
// `snapshot`: the file the parent wrote the piece's copy into (g_child_fd, at piece.offset), or
// -1; `region`: the parent's region's descriptor, if still open (else a piece with no copy made
// is copied whole from its shared mapping). A copy in the file is read into anonymous memory, not
// mapped privately from it: the file's pages would stay for the process's life beside the private
// copies of those it writes.
bool MakePrivate(const ForkCopy& piece, int snapshot, int region) {
  void* shared = reinterpret_cast<void*>(piece.address);
  const bool in_snapshot = snapshot >= 0 && piece.offset != kNotInChild;
  void* copy = piece.copy;
  if (copy == nullptr) {
    copy = mmap(nullptr, piece.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
      copy = nullptr;
    } else if (in_snapshot) {
      if (!ReadData(snapshot, piece.offset, copy, piece.bytes)) {
        munmap(copy, piece.bytes);
        copy = nullptr;
      }
    } else {
      CopyData(copy, shared, region, piece.source, piece.bytes);
    }
  }
  // The private copy put in the shared mapping's place (mremap replaces it whole): the tables'
  // pointers stay valid, and the parent's region no longer sees this process's writes.
  if (copy != nullptr &&
      mremap(copy, piece.bytes, piece.bytes, MREMAP_MAYMOVE | MREMAP_FIXED, shared) != MAP_FAILED) {
    return true;
  }
  if (copy != nullptr) munmap(copy, piece.bytes);
  // No copy: the child must still never write its parent's tables. Zero private pages in their
  // place (the child's tables lose what they held then, said once), or, failing even that, the
  // child ends rather than corrupt the parent's record.
  if (mmap(shared, piece.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
           -1, 0) == MAP_FAILED) {
    _exit(127);
  }
  return false;
}

void SayTablesLost() {
  static const char kNote[] =
      "stackwalk-leakcheck: out of memory at fork: this child's tables start empty\n";
  const ssize_t ignored = write(StderrForReports(), kNote, sizeof(kNote) - 1);
  (void)ignored;
}

// In a forked child, alone: a region of its own (the memfd the parent made at the fork, with the
// copies in it) holding its pieces at the same addresses, the tables as they were at the fork,
// handed to the launcher (record_handover.h), which reports it if the child dies of a signal.
// False, changing nothing, if there is none: the child then keeps private copies.
bool MoveToOwnRegion() {
  const int socket = HandoverSocket();
  const int fd = g_child_fd;
  struct stat st;
  void* mapped = nullptr;
  if (socket < 0 || fd < 0 || fstat(fd, &st) != 0 ||
      (mapped = OwnMapShared(record::kHeaderBytes, fd, 0)) == nullptr) {
    return false;
  }
  g_child_fd = -1;
  auto* header = static_cast<Header*>(mapped);
  std::memcpy(header->program, g_header->program, sizeof(header->program));
  header->peak_bytes = __atomic_load_n(&g_header->peak_bytes, __ATOMIC_RELAXED);
  header->untracked_refused = __atomic_load_n(&g_header->untracked_refused, __ATOMIC_RELAXED);
  header->untracked_no_memory = __atomic_load_n(&g_header->untracked_no_memory, __ATOMIC_RELAXED);
  header->untracked_bytes = __atomic_load_n(&g_header->untracked_bytes, __ATOMIC_RELAXED);
  // Each copy in the region mapped in place of the parent's shared piece (replaced whole: the
  // tables' pointers stay valid).
  uint64_t rows = 0;
  for (size_t i = 0; i < g_fork_copy_count; ++i) {
    ForkCopy& piece = g_fork_copies[i];
    void* shared = reinterpret_cast<void*>(piece.address);
    if (piece.offset == kNotInChild ||
        mmap(shared, piece.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
             static_cast<off_t>(piece.offset)) == MAP_FAILED) {
      ++header->lost_extents;  // left to the private path (RecordLeaveAfterFork)
      continue;
    }
    piece.placed = true;  // the private path leaves it alone
    Extent& row = header->extents[rows++];
    row.kind = piece.kind;
    row.index = piece.index;
    row.offset = piece.offset;
    row.address = piece.address;
    row.bytes = piece.bytes;
    row.state = record::kLive;
  }
  header->extent_high = rows;
  BeginHeader(header);
  // The parent's region let go of, this one taken up: the child grows and retires its own.
  OwnUnmap(g_header, record::kHeaderBytes);
  close(g_fd);
  g_header = header;
  g_fd = fd;
  g_fd_device = st.st_dev;
  g_fd_inode = st.st_ino;
  g_fd_lost.store(false, std::memory_order_relaxed);
  g_size = static_cast<uint64_t>(st.st_size);
  HandOverRegion(socket, fd);
  return true;
}

}  // namespace

void RecordLeaveAfterFork() {
  if (g_state.load(std::memory_order_acquire) != kAttached) return;
  if (MoveToOwnRegion()) {
    // Pieces that could not move (counted lost in the child's header) go the private way, read
    // from this process's region now (g_fd), where the parent wrote their copies.
    bool lost_tables = false;
    for (size_t i = 0; i < g_fork_copy_count; ++i) {
      ForkCopy& piece = g_fork_copies[i];
      if (piece.placed) continue;
      lost_tables |= !MakePrivate(piece, g_fd, -1);  // the parent's region is closed by now
      // Read: its pages in the region (which the launcher holds) are not this process's table.
      if (piece.offset != kNotInChild) {
        fallocate(g_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(piece.offset), static_cast<off_t>(piece.bytes));
      }
    }
    ForgetForkCopies();
    g_grow_lock.Unlock();  // taken by RecordBeforeFork in the parent, held in this copy of it
    if (lost_tables) SayTablesLost();
    return;
  }
  bool lost_tables = false;
  // Only the pieces this process had at the fork (the parent's threads have gone on since, and
  // what its directory says now may be mapped in the parent alone).
  for (size_t i = 0; i < g_fork_copy_count; ++i) {
    lost_tables |= !MakePrivate(g_fork_copies[i], g_child_fd, RegionFdIsOurs() ? g_fd : -1);
  }
  if (lost_tables) SayTablesLost();
  ForgetForkCopies();
  if (g_child_fd >= 0) close(g_child_fd);  // read: its pages go
  g_child_fd = -1;
  OwnUnmap(g_header, record::kHeaderBytes);
  g_header = nullptr;
  close(g_fd);
  g_fd = -1;
  g_state.store(kNone, std::memory_order_release);
}

void RecordExitReported() {
  if (!OwnsRegion()) return;
  __atomic_store_n(&g_header->exit_reported, uint64_t{record::kExitReported}, __ATOMIC_RELEASE);
}

bool RecordExecBegins() {
  // Not OwnsRegion(): in a vfork child it would let go of the region the parent shares.
  if (g_state.load(std::memory_order_acquire) != kAttached ||
      g_header->pid != static_cast<int32_t>(getpid())) {
    return false;
  }
  uint64_t living = record::kNotEnded;
  return __atomic_compare_exchange_n(&g_header->exit_reported, &living,
                                     uint64_t{record::kExecuted}, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED);
}

void RecordExecFailed() {
  if (g_state.load(std::memory_order_acquire) != kAttached) return;
  uint64_t executed = record::kExecuted;
  __atomic_compare_exchange_n(&g_header->exit_reported, &executed, uint64_t{record::kNotEnded},
                              false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

namespace {
// Raises `*field` to `value`: the copies only ever grow, whichever writer comes last.
void Raise(uint64_t* field, uint64_t value) {
  uint64_t high = __atomic_load_n(field, __ATOMIC_RELAXED);
  while (value > high &&
         !__atomic_compare_exchange_n(field, &high, value, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
}  // namespace

void RecordPeak(uint64_t bytes) {
  // No attach from here, and no pid check (a syscall): a region is attached at the first table
  // piece, before anything is recorded; a child made without the fork handlers writes its
  // parent's tables anyway (limits.md).
  if (g_state.load(std::memory_order_acquire) != kAttached) return;
  Raise(&g_header->peak_bytes, bytes);
}

void RecordUntracked(const UntrackedCounts& counts) {
  // Rare (a failed record), so it may attach: a block refused before any was recorded comes
  // before the first table piece.
  if (!Attached() || !OwnsRegion()) return;
  Raise(&g_header->untracked_refused, counts.refused);
  Raise(&g_header->untracked_no_memory, counts.no_memory);
  Raise(&g_header->untracked_bytes, counts.bytes);
}

bool RecordRegionAttached() { return Attached(); }

}  // namespace stackwalk::leakcheck
