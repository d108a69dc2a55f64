#include "remote/target_modules.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/build_id.h"
#include "core/proc_maps.h"
#include "remote/remote_memory.h"
#include "remote/snapshot_reader.h"

namespace stackwalk::internal {
namespace {

constexpr uint64_t kPageMask = ~uint64_t{4095};
constexpr size_t kMaxVdsoSize = size_t{1} << 20;

std::string Hex(const uint8_t* bytes, int n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// The path a maps line names, without the " (deleted)" of an unlinked file.
std::string MappedPath(const std::string& line, const MapsLine& parsed) {
  std::string path = line.substr(parsed.path_begin, parsed.path_end - parsed.path_begin);
  constexpr const char kDeleted[] = " (deleted)";
  if (path.size() > sizeof(kDeleted) - 1 &&
      path.compare(path.size() - (sizeof(kDeleted) - 1), std::string::npos, kDeleted) == 0) {
    path.resize(path.size() - (sizeof(kDeleted) - 1));
  }
  return path;
}

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return !in.bad();
}

// Opens the target's object: its map_files entry (the very file mapped, even if replaced or
// unlinked since), else the path inside the target's root (another mount namespace), else the
// path itself. Returns the fd and the path it was opened by.
int OpenObject(pid_t pid, const AddressRange& range, const std::string& path, std::string* by) {
  const std::string candidates[] = {
      absl::StrCat("/proc/", pid, "/map_files/", absl::Hex(range.lo), "-", absl::Hex(range.hi)),
      absl::StrCat("/proc/", pid, "/root", path),
      path,
  };
  for (const std::string& candidate : candidates) {
    int fd = open(candidate.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      *by = candidate;
      return fd;
    }
  }
  return -1;
}

// Touches the table pages now, while the target runs, so that the first walk through an object
// does not take its page faults while its thread is stopped.
void Prefault(const AddressRange& range) {
  volatile unsigned char sink = 0;
  for (uint64_t at = range.lo; at < range.hi; at += 4096) {
    sink = sink + *reinterpret_cast<const volatile unsigned char*>(static_cast<uintptr_t>(at));
  }
}

}  // namespace

#if defined(__x86_64__)
constexpr int kNativeMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kNativeMachine = EM_AARCH64;
#else
constexpr int kNativeMachine = -1;  // remote walks are for 64-bit targets so far
#endif

void TargetModules::Describe(const MappedFile& file, const std::vector<FileMapping>& mappings,
                             TargetModule* module) {
  Elf64_Ehdr eh;
  if (file.size < sizeof(eh) || std::memcmp(file.bytes, ELFMAG, SELFMAG) != 0) {
    module->error = "not an ELF file";
    return;
  }
  std::memcpy(&eh, file.bytes, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != kNativeMachine) {
    module->error = "not an ELF object of this architecture";
    return;
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > file.size ||
      eh.e_phnum > (file.size - eh.e_phoff) / sizeof(Elf64_Phdr)) {
    module->error = "program headers outside the file";
    return;
  }
  std::vector<Elf64_Phdr> phdrs(eh.e_phnum);
  std::memcpy(phdrs.data(), file.bytes + eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr));
  // The target's load bias: the first mapping whose offset starts a PT_LOAD segment.
  bool have_bias = mappings.empty();
  for (const FileMapping& m : mappings) {
    for (const Elf64_Phdr& ph : phdrs) {
      if (ph.p_type == PT_LOAD && (ph.p_offset & kPageMask) == m.offset) {
        module->load_bias = m.range.lo - (ph.p_vaddr & kPageMask);
        have_bias = true;
        break;
      }
    }
    if (have_bias) break;
  }
  if (!have_bias) {
    module->error = "no PT_LOAD segment matches its mappings";
    return;
  }
  for (const Elf64_Phdr& ph : phdrs) {
    if (ph.p_type != PT_NOTE || ph.p_offset > file.size || ph.p_filesz > file.size - ph.p_offset) {
      continue;
    }
    uint8_t id[32];
    int n = FindGnuBuildId(file.bytes + ph.p_offset, ph.p_filesz, id, sizeof(id));
    if (n > 0) {
      module->build_id = Hex(id, n);
      break;
    }
  }
  for (const Elf64_Phdr& hdr : phdrs) {
    if (hdr.p_type != PT_GNU_EH_FRAME) continue;
    // The PT_LOAD holding .eh_frame_hdr holds .eh_frame too, in practice (as the module map
    // assumes for this process's objects); table reads are bounded by its bytes in the file.
    for (const Elf64_Phdr& seg : phdrs) {
      if (seg.p_type != PT_LOAD || hdr.p_vaddr < seg.p_vaddr ||
          hdr.p_vaddr - seg.p_vaddr >= seg.p_filesz || seg.p_offset > file.size ||
          seg.p_filesz > file.size - seg.p_offset) {
        continue;
      }
      const uint64_t local_lo = reinterpret_cast<uintptr_t>(file.bytes) + seg.p_offset;
      const uint64_t local_hdr = local_lo + (hdr.p_vaddr - seg.p_vaddr);
      module->eh_frame.hdr = local_hdr;
      module->eh_frame.bounds = {local_lo, local_lo + seg.p_filesz};
      module->eh_frame.address_size = 8;
      module->eh_frame.in_vdso = module->is_vdso;
      module->eh_frame.load_bias = module->load_bias + hdr.p_vaddr - local_hdr;
      module->has_eh_frame = true;
      Prefault(module->eh_frame.bounds);
      break;
    }
  }
  // .debug_frame (code built without unwind tables but with -g): link-time addresses.
  AddressRange debug_frame;
  if (FindDebugFrameSection(file.bytes, file.size, &debug_frame)) {
    module->debug_frame.bounds = debug_frame;
    module->debug_frame.debug_frame = true;
    module->debug_frame.address_size = 8;
    module->debug_frame.load_bias = module->load_bias;
    module->debug_frame_index = IndexDebugFrame(module->debug_frame);
    Prefault(debug_frame);
  }
}

absl::StatusOr<std::unique_ptr<TargetModules>> TargetModules::Read(pid_t pid) {
  std::string maps;
  const std::string maps_path = absl::StrCat("/proc/", pid, "/maps");
  if (!ReadWholeFile(maps_path, &maps) || maps.empty()) {
    const int err = errno;
    if (access(absl::StrCat("/proc/", pid).c_str(), F_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("no process ", pid));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot read ", maps_path, maps.empty() && err == 0 ? " (empty)" : ": ",
        err != 0 ? std::strerror(err) : ""));
  }
  auto result = std::unique_ptr<TargetModules>(new TargetModules());
  TargetModules& t = *result;
  t.pid_ = pid;
  std::istringstream lines(maps);
  for (std::string line; std::getline(lines, line);) {
    MapsLine parsed;
    if (!ParseMapsLine(line.data(), line.size(), &parsed)) continue;
    const Mapping& m = parsed.mapping;
    if (m.readable) t.readable_.push_back(m.range);
    if (m.executable) t.executable_.push_back(m.range);
    if (parsed.path_end == parsed.path_begin) continue;
    const std::string path = MappedPath(line, parsed);
    const bool vdso = path == "[vdso]";
    if (path.empty() || (path[0] == '[' && !vdso)) continue;  // [stack], [heap], [vvar], ...
    // A new object where the path changes, or where the same file is mapped again from its
    // start (two copies of one library).
    const bool same = !t.modules_.empty() && t.modules_.back().path == path && !vdso &&
                      parsed.offset != 0;
    if (!same) {
      TargetModule module;
      module.path = path;
      module.is_vdso = vdso;
      module.extent = m.range;
      t.modules_.push_back(std::move(module));
      t.mappings_.emplace_back();
    }
    TargetModule& module = t.modules_.back();
    module.extent.hi = std::max(module.extent.hi, m.range.hi);
    if (m.executable) module.exec.push_back(m.range);
    t.mappings_.back().push_back({m.range, parsed.offset});
  }
  // Each object's file, mapped read-only here.
  for (size_t i = 0; i < t.modules_.size(); ++i) {
    TargetModule& module = t.modules_[i];
    if (module.is_vdso) continue;  // LoadVdso(), once the target's memory can be read
    int fd = OpenObject(pid, t.mappings_[i].front().range, module.path, &module.file);
    if (fd < 0) {
      module.error = absl::StrCat("cannot open ", module.path, ": ", std::strerror(errno));
      continue;
    }
    struct stat st;
    void* bytes = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      bytes = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    }
    close(fd);
    if (bytes == MAP_FAILED) {
      module.error = absl::StrCat("cannot map ", module.file);
      continue;
    }
    auto file = std::make_unique<MappedFile>();
    file->bytes = static_cast<const unsigned char*>(bytes);
    file->size = static_cast<size_t>(st.st_size);
    file->owned_mmap = true;
    // Named (for the symbolizer) by its own path where that is the very file mapped.
    struct stat named;
    if (module.file != module.path && stat(module.path.c_str(), &named) == 0 &&
        named.st_dev == st.st_dev && named.st_ino == st.st_ino) {
      module.file = module.path;
    }
    Describe(*file, t.mappings_[i], &module);
    t.files_.push_back(std::move(file));
  }
  return result;
}

void TargetModules::LoadVdso(RemoteMemory& memory) {
  for (size_t i = 0; i < modules_.size(); ++i) {
    TargetModule& module = modules_[i];
    if (!module.is_vdso || module.has_eh_frame) continue;
    const AddressRange range = mappings_[i].front().range;
    const uint64_t size = range.hi - range.lo;
    auto file = std::make_unique<MappedFile>();
    if (size == 0 || size > kMaxVdsoSize) continue;
    file->copy.resize(size);
    if (!memory.Read(range.lo, file->copy.data(), size)) {
      module.error = "cannot read the vDSO";
      continue;
    }
    file->bytes = file->copy.data();
    file->size = file->copy.size();
    Describe(*file, mappings_[i], &module);
    files_.push_back(std::move(file));
  }
}

std::unique_ptr<TargetModules::MappedFile> TargetModules::MapFile(const std::string& path,
                                                                  TargetModule* module) {
  // O_NONBLOCK: a FIFO at a path a snapshot names must not block the open (only regular
  // files are mapped below).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    module->error = absl::StrCat("cannot open ", path, ": ", std::strerror(errno));
    return nullptr;
  }
  struct stat st{};
  void* bytes = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    bytes = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (bytes == MAP_FAILED) {
    module->error = absl::StrCat("cannot map ", path, S_ISREG(st.st_mode) ? "" : " (not a regular file)");
    return nullptr;
  }
  auto file = std::make_unique<MappedFile>();
  file->bytes = static_cast<const unsigned char*>(bytes);
  file->size = static_cast<size_t>(st.st_size);
  file->owned_mmap = true;
  return file;
}

std::unique_ptr<TargetModules> TargetModules::FromSnapshot(
    const std::vector<SnapshotModule>& listed, const std::string& sysroot,
    const std::string& debug_dir) {
  auto result = std::unique_ptr<TargetModules>(new TargetModules());
  TargetModules& t = *result;
  for (const SnapshotModule& s : listed) {
    TargetModule module;
    module.path = s.path;
    module.load_bias = s.load_bias;
    module.extent = s.extent;
    module.exec = s.exec;
    module.is_vdso = s.is_vdso;
    for (const AddressRange& r : s.exec) t.executable_.push_back(r);
    if (s.is_vdso) {
      module.error = "the vDSO's tables are not in the snapshot";
      t.modules_.push_back(std::move(module));
      continue;
    }
    std::vector<std::string> candidates;
    if (!s.path.empty()) candidates.push_back(sysroot.empty() ? s.path : sysroot + s.path);
    if (!debug_dir.empty() && s.build_id.size() > 2) {
      const std::string base = absl::StrCat(debug_dir, "/.build-id/", s.build_id.substr(0, 2), "/",
                                            s.build_id.substr(2));
      candidates.push_back(base);
      candidates.push_back(base + ".debug");
    }
    std::string why;
    for (const std::string& path : candidates) {
      TargetModule tried = module;
      std::unique_ptr<MappedFile> file = MapFile(path, &tried);
      if (file == nullptr) {
        if (why.empty()) why = tried.error;
        continue;
      }
      Describe(*file, {}, &tried);
      t.files_.push_back(std::move(file));
      if (tried.build_id != s.build_id) {
        if (why.empty()) {
          why = absl::StrCat(path, " has build-id ", tried.build_id.empty() ? "none" : tried.build_id,
                             ", the snapshot's is ", s.build_id.empty() ? "none" : s.build_id);
        }
        continue;
      }
      if (!tried.error.empty()) {
        if (why.empty()) why = tried.error;
        continue;
      }
      tried.file = path;
      module = std::move(tried);
      why.clear();
      break;
    }
    if (module.file.empty()) {
      module.error = why.empty() ? "no file to look for (no path, no build-id)" : why;
      module.has_eh_frame = false;
      module.debug_frame_index.clear();
    }
    t.modules_.push_back(std::move(module));
  }
  std::sort(t.modules_.begin(), t.modules_.end(),
            [](const TargetModule& a, const TargetModule& b) { return a.extent.lo < b.extent.lo; });
  std::sort(t.executable_.begin(), t.executable_.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.lo < b.lo; });
  return result;
}

TargetModules::~TargetModules() {
  for (auto& file : files_) {
    if (file->owned_mmap) munmap(const_cast<unsigned char*>(file->bytes), file->size);
  }
}

const TargetModule* TargetModules::Find(uint64_t pc) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                             [](uint64_t a, const TargetModule& m) { return a < m.extent.lo; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return it->extent.Contains(pc) ? &*it : nullptr;
}

bool TargetModules::Find(uint64_t pc, EhFrameSection* out) const {
  const TargetModule* module = Find(pc);
  if (module == nullptr || !module->has_eh_frame) return false;
  *out = module->eh_frame;
  return true;
}

bool TargetModules::FindDebugFrame(uint64_t pc, EhFrameSection* out, uint64_t* fde) const {
  const TargetModule* module = Find(pc);
  if (module == nullptr || module->debug_frame_index.empty()) return false;
  const DebugFrameEntry* entry = FindDebugFrameEntry(
      module->debug_frame_index.data(), module->debug_frame_index.size(), pc);
  if (entry == nullptr) return false;
  *out = module->debug_frame;
  *fde = entry->fde;
  return true;
}

bool TargetModules::IsCode(uint64_t pc) const {
  auto it = std::upper_bound(executable_.begin(), executable_.end(), pc,
                             [](uint64_t a, const AddressRange& r) { return a < r.lo; });
  if (it == executable_.begin()) return false;
  --it;
  return it->Contains(pc);
}

bool TargetModules::ReadCode(uint64_t pc, void* out, size_t n) const {
  if (memory_ == nullptr || !IsCode(pc) || !IsCode(pc + n - 1)) return false;
  return memory_->Read(pc, out, n);
}

}  // namespace stackwalk::internal
