#include "remote/snapshot_reader.h"

#include <elf.h>
#include <errno.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/snapshot_format.h"

namespace stackwalk::internal {
namespace {

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// A bounds-checked cursor over one section's payload (or the whole file).
class Cursor {
 public:
  Cursor(const unsigned char* bytes, size_t size) : p_(bytes), left_(size) {}
  bool Take(void* out, size_t n) {
    if (n > left_) return false;
    if (n == 0) return true;  // out may be an empty vector's null data()
    std::memcpy(out, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  const unsigned char* Skip(size_t n) {
    if (n > left_) return nullptr;
    const unsigned char* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  size_t left() const { return left_; }

 private:
  const unsigned char* p_;
  size_t left_;
};

const char* SectionName(uint32_t type) {
  switch (type) {
    case kSnapshotProcess: return "process";
    case kSnapshotRegisters: return "registers";
    case kSnapshotStack: return "stack";
    case kSnapshotModule: return "module";
    case kSnapshotImage: return "image";
    case kSnapshotThread: return "thread";
    case kSnapshotThreadRegisters: return "thread registers";
    case kSnapshotThreadStack: return "thread stack";
    default: return "unknown";
  }
}

// A registers payload (kSnapshotRegisters, kSnapshotThreadRegisters); "" or why it is malformed.
std::string ReadRegisters(Cursor c, int32_t* tid, std::vector<uint64_t>* values, uint64_t* mask) {
  SnapshotRegistersHeader h;
  if (!c.Take(&h, sizeof(h))) return "shorter than its header";
  if (h.count > kSnapshotMaxRegisters) return absl::StrCat(h.count, " registers (at most 64)");
  if (c.left() != uint64_t{h.count} * 8) return "its size and register count disagree";
  values->resize(h.count);
  c.Take(values->data(), uint64_t{h.count} * 8);
  *mask = h.count == 64 ? h.valid_mask : h.valid_mask & ((uint64_t{1} << h.count) - 1);
  *tid = h.tid;
  return "";
}

// The thread section a thread's registers or stack section belongs to: the one just before,
// captured, of the same tid, without that section yet; nullptr with `why`.
SnapshotOtherThread* OwnerOf(Snapshot* out, int32_t tid, bool stack, std::string* why) {
  SnapshotOtherThread* t = out->threads.empty() ? nullptr : &out->threads.back();
  if (t == nullptr || t->tid != tid || t->state != kSnapshotThreadCaptured ||
      (stack ? t->has_stack || !t->has_registers : t->has_registers)) {
    *why = absl::StrCat("thread ", tid, "'s ", stack ? "stack" : "registers",
                        " not after its captured thread section", stack ? " and registers" : "");
    return nullptr;
  }
  return t;
}

// Parses one section's payload into `out`; "" or why it is malformed.
std::string ReadSection(uint32_t type, Cursor c, Snapshot* out) {
  switch (type) {
    case kSnapshotProcess: {
      SnapshotProcess p;
      if (c.left() != sizeof(p) || !c.Take(&p, sizeof(p))) return "wrong size";
      out->has_process = true;
      out->pid = p.pid;
      out->tid = p.tid;
      out->signal = p.signal;
      out->code = p.code;
      out->fault_address = p.fault_address;
      out->thread_name.assign(p.thread_name, strnlen(p.thread_name, sizeof(p.thread_name)));
      return "";
    }
    case kSnapshotRegisters: {
      int32_t tid;
      std::string why = ReadRegisters(c, &tid, &out->registers, &out->register_mask);
      out->has_registers = why.empty();
      return why;
    }
    case kSnapshotThread: {
      SnapshotThread t;
      if (c.left() != sizeof(t) || !c.Take(&t, sizeof(t))) return "wrong size";
      SnapshotOtherThread thread;
      thread.tid = t.tid;
      thread.state = t.state;
      thread.detail = t.detail;
      thread.proc_state = t.proc_state >= 'A' && t.proc_state <= 'Z' ? t.proc_state : 0;
      thread.name.assign(t.name, strnlen(t.name, sizeof(t.name)));
      out->threads.push_back(std::move(thread));
      return "";
    }
    case kSnapshotThreadRegisters: {
      int32_t tid;
      std::vector<uint64_t> values;
      uint64_t mask;
      std::string why = ReadRegisters(c, &tid, &values, &mask);
      if (!why.empty()) return why;
      SnapshotOtherThread* t = OwnerOf(out, tid, false, &why);
      if (t == nullptr) return why;
      t->registers = std::move(values);
      t->register_mask = mask;
      t->has_registers = true;
      return "";
    }
    case kSnapshotThreadStack: {
      SnapshotThreadStackHeader h;
      if (!c.Take(&h, sizeof(h))) return "shorter than its header";
      const size_t n = c.left();
      if (h.address + n < h.address) return "its bytes wrap around the address space";
      std::string why;
      SnapshotOtherThread* t = OwnerOf(out, h.tid, true, &why);
      if (t == nullptr) return why;
      const unsigned char* at = c.Skip(n);
      t->stack_address = h.address;
      t->stack.assign(at, at + n);
      t->has_stack = true;
      return "";
    }
    case kSnapshotStack: {
      if (!c.Take(&out->stack_address, 8)) return "shorter than its address";
      const size_t n = c.left();
      if (out->stack_address + n < out->stack_address) return "its bytes wrap around the address space";
      const unsigned char* at = c.Skip(n);
      out->stack.assign(at, at + n);
      out->has_stack = true;
      return "";
    }
    case kSnapshotModule: {
      SnapshotModuleHeader h;
      if (!c.Take(&h, sizeof(h))) return "shorter than its header";
      if (h.exec_count > kSnapshotMaxExecRanges || h.build_id_size > kSnapshotMaxBuildId ||
          h.path_size > kSnapshotMaxPath) {
        return "a count beyond the format's limits";
      }
      if (c.left() != 16 * uint64_t{h.exec_count} + h.build_id_size + h.path_size) {
        return "its size and counts disagree";
      }
      if (h.extent_hi < h.extent_lo) return "its extent ends before it starts";
      SnapshotModule m;
      m.load_bias = h.load_bias;
      m.extent = {h.extent_lo, h.extent_hi};
      for (uint32_t i = 0; i < h.exec_count; ++i) {
        uint64_t r[2];
        c.Take(r, sizeof(r));
        if (r[1] < r[0]) return "an executable range ends before it starts";
        m.exec.push_back({r[0], r[1]});
      }
      m.build_id = Hex(c.Skip(h.build_id_size), h.build_id_size);
      const unsigned char* path = c.Skip(h.path_size);
      m.path.assign(reinterpret_cast<const char*>(path), h.path_size);
      if (m.path.find('\0') != std::string::npos) return "a NUL inside its path";
      m.is_main = (h.flags & kSnapshotModuleMain) != 0;
      m.is_vdso = (h.flags & kSnapshotModuleVdso) != 0;
      out->modules.push_back(std::move(m));
      return "";
    }
    case kSnapshotImage: {
      // Follows the module it copies (the one starting at its address).
      uint64_t address;
      if (!c.Take(&address, 8)) return "shorter than its address";
      const size_t n = c.left();
      if (n > kSnapshotMaxImage) return absl::StrCat(n, " bytes (at most ", kSnapshotMaxImage, ")");
      SnapshotModule* m = out->modules.empty() ? nullptr : &out->modules.back();
      if (m == nullptr || m->extent.lo != address || n > m->extent.hi - m->extent.lo) {
        return "not the image of the module before it";
      }
      const unsigned char* at = c.Skip(n);
      m->image.assign(at, at + n);
      return "";
    }
    default:
      return "";  // a later version's section: skipped
  }
}

}  // namespace

std::string NotCapturedReason(const SnapshotOtherThread& thread) {
  const std::string state =
      thread.proc_state != 0 ? absl::StrCat(" (state ", std::string(1, thread.proc_state), ")") : "";
  switch (thread.state) {
    case kSnapshotThreadCaptured:
      return "";
    case kSnapshotThreadNoAnswer:
      return absl::StrCat("no answer to the capture signal within ", thread.detail, " ms", state);
    case kSnapshotThreadBlocked:
      return absl::StrCat("blocks the capture signal", state);
    case kSnapshotThreadNotSignaled:
      return absl::StrCat("the capture signal could not be sent (errno ", thread.detail,
                          thread.detail == ESRCH ? ": it exited" : "", ")");
    case kSnapshotThreadOverLimit:
      return "beyond the threads a snapshot captures";
    case kSnapshotThreadLate:
      return "started after the capture began";
    default:
      return absl::StrCat("not captured (state ", thread.state, ", unknown to this reader)");
  }
}

std::string MachineName(uint32_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    default: return absl::StrCat("machine ", machine);
  }
}

Snapshot ReadSnapshot(const unsigned char* bytes, size_t size) {
  Snapshot out;
  Cursor file(bytes, size);
  SnapshotFileHeader header;
  if (!file.Take(&header, sizeof(header))) {
    out.error = absl::StrCat("truncated: ", size, " bytes, shorter than the ", sizeof(header),
                             "-byte header");
    return out;
  }
  if (std::memcmp(header.magic, kSnapshotMagic, sizeof(header.magic)) != 0) {
    out.error = "not a stackwalk crash snapshot (wrong magic)";
    return out;
  }
  if (header.byte_order != kSnapshotByteOrder) {
    out.error = "written with the other byte order (not supported)";
    return out;
  }
  out.version = header.version;
  out.machine = header.machine;
  out.word_size = header.word_size;
  if (header.version != kSnapshotVersion) {
    out.error = absl::StrCat("format version ", header.version, " (this reader knows ",
                             kSnapshotVersion, ")");
    return out;
  }
  if (header.word_size != 4 && header.word_size != 8) {
    out.error = absl::StrCat("corrupt: word size ", header.word_size);
    return out;
  }
  while (true) {
    const size_t offset = size - file.left();
    SnapshotSectionHeader h;
    if (!file.Take(&h, sizeof(h))) {
      out.error = absl::StrCat("truncated at byte ", size, ": no end section (the writer was "
                               "interrupted, or the file was cut)");
      return out;
    }
    if (h.type == kSnapshotEnd) {
      if (h.size != 0) {
        out.error = absl::StrCat("corrupt: the end section at byte ", offset, " has a payload");
        return out;
      }
      out.complete = true;
      return out;
    }
    if (h.size > file.left()) {
      // The stack's bytes that did arrive are still the stack (the innermost frames).
      if (h.type == kSnapshotStack || h.type == kSnapshotThreadStack) {
        const size_t got = file.left();
        ReadSection(h.type, Cursor(file.Skip(got), got), &out);
      }
      out.error = absl::StrCat("truncated: the ", SectionName(h.type), " section at byte ",
                               offset, " needs ", h.size, " bytes, ", file.left(), " remain");
      return out;
    }
    const unsigned char* payload = file.Skip(static_cast<size_t>(h.size));
    std::string why = ReadSection(h.type, Cursor(payload, static_cast<size_t>(h.size)), &out);
    if (!why.empty()) {
      out.error = absl::StrCat("corrupt: the ", SectionName(h.type), " section at byte ", offset,
                               ": ", why);
      return out;
    }
  }
}

}  // namespace stackwalk::internal
