#include "crash/snapshot_writer.h"

#include <elf.h>
#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "core/context.h"
#include "core/module_map.h"
#include "core/readable_pages.h"
#include "core/snapshot_format.h"
#include "core/stack_memory.h"

namespace stackwalk::internal {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kMachine = EM_AARCH64;
#elif defined(__arm__)
constexpr uint32_t kMachine = EM_ARM;
#endif

// Writes whole buffers, remembering the first failure (later writes are skipped).
class SnapshotSink {
 public:
  explicit SnapshotSink(int fd) : fd_(fd) {}
  void Bytes(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0 && error_ == 0) {
      ssize_t n = write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        return;
      }
      p += n;
      size -= static_cast<size_t>(n);
      written_ += static_cast<uint64_t>(n);
    }
  }
  void Section(uint32_t type, uint64_t size) {
    SnapshotSectionHeader h{};
    h.type = type;
    h.size = size;
    Bytes(&h, sizeof(h));
  }
  int error() const { return error_; }
  uint64_t written() const { return written_; }

 private:
  int fd_;
  int error_ = 0;
  uint64_t written_ = 0;
};

// Scratch space, static: the alternate signal stack is small, and one thread reports at a time.
unsigned char g_chunk[4096];
char g_exe_path[kSnapshotMaxPath];

// How many bytes from `sp` on can be read now, up to `limit`, asked of the kernel page by page.
uint64_t ReadableStackBytes(uint64_t sp, uint64_t limit) {
  if (limit == 0) return 0;
  const uint64_t first = sp & ~(kProbePage - 1);
  const uint64_t pages = (sp + limit - first + kProbePage - 1) / kProbePage;
  const uint64_t readable = ReadablePages(first, pages);
  const uint64_t end = first + readable * kProbePage;
  return end <= sp ? 0 : (end - sp < limit ? end - sp : limit);
}

// The vDSO's bytes: its unwind tables are in no file the reader could find. Whole or not at all
// (its pages are always readable; a size beyond kSnapshotMaxImage is not a vDSO).
void WriteImage(SnapshotSink& out, const AddressRange& extent) {
  const uint64_t size = extent.hi - extent.lo;
  if (size == 0 || size > kSnapshotMaxImage || extent.lo % kProbePage != 0 ||
      ReadablePages(extent.lo, (size + kProbePage - 1) / kProbePage) * kProbePage < size) {
    return;
  }
  out.Section(kSnapshotImage, 8 + size);
  out.Bytes(&extent.lo, 8);
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = size - done < sizeof(g_chunk) ? size - done : sizeof(g_chunk);
    std::memcpy(g_chunk, reinterpret_cast<const void*>(static_cast<uintptr_t>(extent.lo + done)),
                n);
    out.Bytes(g_chunk, n);
    done += n;
  }
}

// `size` bytes from `sp` (ReadableStackBytes said they can be read), through the static chunk:
// write(2) straight from the stack would work, but AddressSanitizer checks write's buffer and
// other frames' redzones are poisoned.
void WriteStackBytes(SnapshotSink& out, uint64_t sp, uint64_t size) {
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = size - done < sizeof(g_chunk) ? size - done : sizeof(g_chunk);
    CopyStackBytes(g_chunk, sp + done, n);
    out.Bytes(g_chunk, n);
    done += n;
  }
}

void WriteRegisters(SnapshotSink& out, uint32_t type, int32_t tid, uint64_t valid_mask,
                    const uint64_t (&values)[NativeArch::kNumRegs]) {
  SnapshotRegistersHeader rh{};
  rh.tid = tid;
  rh.count = NativeArch::kNumRegs;
  rh.valid_mask = valid_mask;
  out.Section(type, sizeof(rh) + sizeof(values));
  out.Bytes(&rh, sizeof(rh));
  out.Bytes(values, sizeof(values));
}

void WriteThreadSection(SnapshotSink& out, int tid, SnapshotThreadState state, int32_t detail,
                        char proc_state) {
  SnapshotThread t{};
  t.tid = tid;
  t.state = state;
  t.detail = detail;
  t.proc_state = proc_state;
  ReadThreadName(tid, t.name);
  out.Section(kSnapshotThread, sizeof(t));
  out.Bytes(&t, sizeof(t));
}

// A captured thread: its section, registers, and stack within what `budget` has left.
uint64_t WriteCapturedThread(SnapshotSink& out, const CapturedThread& t, uint64_t per_thread,
                             uint64_t* budget) {
  WriteThreadSection(out, t.tid, kSnapshotThreadCaptured, t.crash_signal, 0);
  WriteRegisters(out, kSnapshotThreadRegisters, t.tid, t.valid_mask, t.values);
  const uint64_t sp = (t.valid_mask >> NativeArch::kSp) & 1 ? t.values[NativeArch::kSp] : 0;
  const uint64_t limit = per_thread < *budget ? per_thread : *budget;
  const uint64_t size = sp != 0 ? ReadableStackBytes(sp, limit) : 0;
  *budget -= size;
  SnapshotThreadStackHeader h{};
  h.tid = t.tid;
  h.address = sp;
  out.Section(kSnapshotThreadStack, sizeof(h) + size);
  out.Bytes(&h, sizeof(h));
  WriteStackBytes(out, sp, size);
  return size;
}

// The threads /proc/self/task lists now that the capture's listing did not hold.
struct Unlisted {
  SnapshotSink* out;
  const ThreadCaptureResult* capture;
  int written = 0;
};

void WriteUnlisted(int tid, void* context) {
  Unlisted& u = *static_cast<Unlisted*>(context);
  for (int i = 0; i < u.capture->count; ++i) {
    if (u.capture->threads[i].tid == tid) return;
  }
  WriteThreadSection(*u.out, tid, u.capture->listing_full ? kSnapshotThreadOverLimit
                                                          : kSnapshotThreadLate, 0, 0);
  ++u.written;
}

void WriteOtherThreads(SnapshotSink& out, const SnapshotOtherThreads& others,
                       SnapshotWritten* result) {
  const ThreadCaptureResult& capture = *others.capture;
  uint64_t budget = others.total_stack_bytes;
  for (int i = 0; i < capture.count; ++i) {
    const CapturedThread& t = capture.threads[i];
    if (t.state == kSnapshotThreadCaptured) {
      result->thread_stack_bytes += WriteCapturedThread(out, t, others.stack_bytes, &budget);
      ++result->threads_captured;
    } else {
      WriteThreadSection(out, t.tid, t.state, t.detail, t.proc_state);
    }
    ++result->threads_listed;
  }
  Unlisted unlisted{&out, &capture};
  ForEachOtherThread(WriteUnlisted, &unlisted);
  result->threads_listed += unlisted.written;
}

void WriteModule(SnapshotSink& out, const Module& m) {
  const char* path = m.path;
  if (m.is_main_executable && path[0] == '\0') {
    // glibc names the executable "": the kernel knows its path (readlink is signal-safe).
    ssize_t n = readlink("/proc/self/exe", g_exe_path, sizeof(g_exe_path) - 1);
    g_exe_path[n > 0 ? n : 0] = '\0';
    path = g_exe_path;
  }
  SnapshotModuleHeader h{};
  h.load_bias = m.load_bias;
  h.extent_lo = m.extent.lo;
  h.extent_hi = m.extent.hi;
  h.exec_count = static_cast<uint32_t>(m.exec_count);
  h.build_id_size = m.build_id_size;
  size_t path_size = strnlen(path, kSnapshotMaxPath);
  h.path_size = static_cast<uint32_t>(path_size);
  h.flags = (m.is_main_executable ? kSnapshotModuleMain : 0) | (m.is_vdso ? kSnapshotModuleVdso : 0);
  out.Section(kSnapshotModule,
              sizeof(h) + 16 * uint64_t{h.exec_count} + h.build_id_size + h.path_size);
  out.Bytes(&h, sizeof(h));
  for (int i = 0; i < m.exec_count; ++i) {
    const uint64_t range[2] = {m.exec[i].lo, m.exec[i].hi};
    out.Bytes(range, sizeof(range));
  }
  out.Bytes(m.build_id, m.build_id_size);
  out.Bytes(path, path_size);
  if (m.is_vdso) WriteImage(out, m.extent);
}

}  // namespace

SnapshotWritten WriteCrashSnapshot(int fd, int sig, const siginfo_t* info, void* ucontext,
                                   size_t stack_bytes, const SnapshotOtherThreads& others) {
  SnapshotWritten result;
  SnapshotSink out(fd);
  SnapshotFileHeader header{};
  std::memcpy(header.magic, kSnapshotMagic, sizeof(header.magic));
  header.version = kSnapshotVersion;
  header.byte_order = kSnapshotByteOrder;
  header.machine = kMachine;
  header.word_size = sizeof(void*);
  out.Bytes(&header, sizeof(header));

  SnapshotProcess process{};
  process.pid = getpid();
  process.tid = static_cast<int32_t>(syscall(SYS_gettid));
  process.signal = sig;
  process.code = info != nullptr ? info->si_code : 0;
  process.fault_address = info != nullptr ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
  prctl(PR_GET_NAME, process.thread_name);
  process.thread_name[sizeof(process.thread_name) - 1] = '\0';
  out.Section(kSnapshotProcess, sizeof(process));
  out.Bytes(&process, sizeof(process));

  NativeRegs regs;
  RegsFromUcontext(static_cast<const ucontext_t*>(ucontext), &regs);
  uint64_t values[NativeArch::kNumRegs];
  for (int i = 0; i < NativeArch::kNumRegs; ++i) values[i] = regs.Has(i) ? regs.Get(i) : 0;
  WriteRegisters(out, kSnapshotRegisters, process.tid, regs.valid_mask(), values);

  // The objects before the stack: a snapshot cut short keeps them and loses stack bytes.
  {
    ModuleMap::Reader reader(ModuleMap::Global());
    const ModuleSnapshot* snapshot = reader.snapshot();
    for (int i = 0; snapshot != nullptr && i < snapshot->size(); ++i) {
      WriteModule(out, snapshot->module(i));
      ++result.modules;
    }
  }
  const uint64_t sp = regs.Has(NativeArch::kSp) ? regs.sp() : 0;
  const uint64_t size = sp != 0 ? ReadableStackBytes(sp, stack_bytes) : 0;
  out.Section(kSnapshotStack, 8 + size);
  out.Bytes(&sp, 8);
  WriteStackBytes(out, sp, size);
  result.stack_bytes = size;
  // The other threads after the crashing one's stack: a snapshot cut short keeps the crash.
  if (others.capture != nullptr) WriteOtherThreads(out, others, &result);

  out.Section(kSnapshotEnd, 0);
  result.error = out.error();
  result.bytes = out.written();
  return result;
}

}  // namespace stackwalk::internal
