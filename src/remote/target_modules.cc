#include "remote/target_modules.h"

#include <elf.h>
#include <fcntl.h>
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
constexpr uint64_t kMaxNoteSize = uint64_t{64} << 10;

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

}  // namespace

#if defined(__x86_64__)
constexpr uint32_t kNativeMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeMachine = EM_AARCH64;
#else
constexpr uint32_t kNativeMachine = 0;  // remote walks of live processes: 64-bit hosts so far
#endif

namespace {

// The ELF types of one class: 64-bit objects (x86_64, aarch64) and 32-bit ones (arm32).
struct Elf64Types {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
  static constexpr int kClass = ELFCLASS64;
  static constexpr int kAddressSize = 8;
  static uint64_t Truncate(uint64_t address) { return address; }
};
struct Elf32Types {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
  static constexpr int kClass = ELFCLASS32;
  static constexpr int kAddressSize = 4;
  // The target computes its addresses in 32 bits: a sum past 2^32 wraps there.
  static uint64_t Truncate(uint64_t address) { return static_cast<uint32_t>(address); }
};

// The file range of the section named `name`, read through the section headers; false if the
// object has none (or its headers are not all in the file).
template <class Elf>
bool FindSection(ObjectBytes& file, const typename Elf::Ehdr& eh, const char* name,
                 uint64_t* offset, uint64_t* size) {
  using Shdr = typename Elf::Shdr;
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Shdr) || eh.e_shstrndx >= eh.e_shnum) {
    return false;
  }
  const unsigned char* table = file.Read(eh.e_shoff, uint64_t{eh.e_shnum} * sizeof(Shdr));
  if (table == nullptr) return false;
  auto header = [table](uint32_t i) {
    Shdr sh;
    std::memcpy(&sh, table + uint64_t{i} * sizeof(Shdr), sizeof(sh));
    return sh;
  };
  const Shdr names = header(eh.e_shstrndx);
  const unsigned char* strings = file.Read(names.sh_offset, names.sh_size);
  if (strings == nullptr) return false;
  const size_t length = std::strlen(name);
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    const Shdr sh = header(i);
    if (sh.sh_type == SHT_NOBITS || sh.sh_name >= names.sh_size ||
        names.sh_size - sh.sh_name <= length ||
        std::memcmp(strings + sh.sh_name, name, length + 1) != 0) {
      continue;
    }
    *offset = sh.sh_offset;
    *size = sh.sh_size;
    return true;
  }
  return false;
}

}  // namespace

template <class Elf>
void TargetModules::DescribeElf(ObjectBytes& file, const std::vector<FileMapping>& mappings,
                                uint32_t machine, TargetModule* module) {
  typename Elf::Ehdr eh;
  const unsigned char* header = file.Read(0, sizeof(eh));
  if (header == nullptr || std::memcmp(header, ELFMAG, SELFMAG) != 0) {
    module->error = "not an ELF file";
    return;
  }
  std::memcpy(&eh, header, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != Elf::kClass || eh.e_machine != machine) {
    module->error = "not an ELF object of the target's architecture";
    return;
  }
  module->addresses_32bit = Elf::kAddressSize == 4;
  using Phdr = typename Elf::Phdr;
  const unsigned char* program_headers =
      eh.e_phentsize == sizeof(Phdr) ? file.Read(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Phdr))
                                     : nullptr;
  if (program_headers == nullptr || eh.e_phnum == 0) {
    module->error = eh.e_phnum == 0 ? "no program headers" : "program headers outside the file";
    return;
  }
  std::vector<Phdr> phdrs(eh.e_phnum);
  std::memcpy(phdrs.data(), program_headers, eh.e_phnum * sizeof(Phdr));
  // The target's load bias: the first mapping whose offset starts a PT_LOAD segment.
  bool have_bias = mappings.empty();
  for (const FileMapping& m : mappings) {
    for (const Phdr& ph : phdrs) {
      if (ph.p_type == PT_LOAD && (ph.p_offset & kPageMask) == m.offset) {
        module->load_bias = Elf::Truncate(m.range.lo - (ph.p_vaddr & kPageMask));
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
  for (const Phdr& ph : phdrs) {
    // A build-id note is a few dozen bytes: a larger PT_NOTE (a crafted one) is not read.
    const unsigned char* note = ph.p_type == PT_NOTE && ph.p_filesz <= kMaxNoteSize
                                    ? file.Read(ph.p_offset, ph.p_filesz)
                                    : nullptr;
    if (note == nullptr) continue;
    uint8_t id[32];
    int n = FindGnuBuildId(note, ph.p_filesz, id, sizeof(id));
    if (n > 0) {
      module->build_id = Hex(id, n);
      break;
    }
  }
  // The PT_LOAD holding a table's start, read here: table reads are bounded by its bytes.
  auto segment_of = [&](uint64_t vaddr, AddressRange* local, uint64_t* local_vaddr) {
    for (const Phdr& seg : phdrs) {
      if (seg.p_type != PT_LOAD || vaddr < seg.p_vaddr || vaddr - seg.p_vaddr >= seg.p_filesz) {
        continue;
      }
      const unsigned char* bytes = file.Read(seg.p_offset, seg.p_filesz);
      if (bytes == nullptr) return false;
      const uint64_t local_lo = reinterpret_cast<uintptr_t>(bytes);
      *local = {local_lo, local_lo + seg.p_filesz};
      *local_vaddr = local_lo + (vaddr - seg.p_vaddr);
      return true;
    }
    return false;
  };
  // Only the first PT_GNU_EH_FRAME and the first PT_ARM_EXIDX (a linker writes one of each):
  // more, in a crafted object, would each read another segment.
  bool seen_eh_frame = false, seen_exidx = false;
  for (const Phdr& hdr : phdrs) {
    AddressRange bounds;
    uint64_t local;
    if (hdr.p_type == PT_GNU_EH_FRAME) {
      if (seen_eh_frame) continue;
      seen_eh_frame = true;
    } else if (hdr.p_type == PT_ARM_EXIDX) {
      if (seen_exidx) continue;
      seen_exidx = true;
    }
    // .eh_frame of this process's class only: 4-byte pointers are decoded modulo 2^32, which
    // the copy's addresses on a 64-bit host are not (arm32 code has .ARM.exidx instead).
    if (hdr.p_type == PT_GNU_EH_FRAME && Elf::kAddressSize == sizeof(void*) &&
        !module->has_eh_frame && segment_of(hdr.p_vaddr, &bounds, &local)) {
      // The PT_LOAD holding .eh_frame_hdr holds .eh_frame too, in practice (as the module map
      // assumes for this process's objects).
      module->eh_frame.hdr = local;
      module->eh_frame.bounds = bounds;
      module->eh_frame.address_size = Elf::kAddressSize;
      module->eh_frame.in_vdso = module->is_vdso;
      module->eh_frame.load_bias = module->load_bias + hdr.p_vaddr - local;
      // A non-PIE object's absolute FDE addresses are link-time ones, not the copy's.
      module->eh_frame.absolute_bias = module->load_bias;
      module->has_eh_frame = true;
    } else if (hdr.p_type == PT_ARM_EXIDX && machine == EM_ARM && !module->has_exidx &&
               segment_of(hdr.p_vaddr, &bounds, &local) && hdr.p_filesz <= bounds.hi - local) {
      // ARM EHABI §5: the index, and its .ARM.extab entries in the same segment.
      module->exidx.table = {local, local + hdr.p_filesz};
      module->exidx.bounds = bounds;
      module->exidx.load_bias = module->load_bias + hdr.p_vaddr - local;
      module->exidx.addresses_32bit = Elf::kAddressSize == 4;
      module->has_exidx = true;
    }
  }
  // .debug_frame (code built without unwind tables but with -g): link-time addresses. Only in
  // objects of this process's class (4-byte pointers are decoded modulo 2^32, see above).
  uint64_t offset = 0, size = 0;  // set by FindSection; clang -Wuninitialized cannot see it
  const unsigned char* debug_frame_bytes =
      Elf::kAddressSize == sizeof(void*) &&
              FindSection<Elf>(file, eh, ".debug_frame", &offset, &size) && size > 0
          ? file.Read(offset, size)
          : nullptr;
  if (debug_frame_bytes != nullptr) {
    const uint64_t lo = reinterpret_cast<uintptr_t>(debug_frame_bytes);
    const AddressRange debug_frame{lo, lo + size};
    module->debug_frame.bounds = debug_frame;
    module->debug_frame.debug_frame = true;
    module->debug_frame.address_size = Elf::kAddressSize;
    module->debug_frame.load_bias = module->load_bias;
    module->debug_frame.absolute_bias = module->load_bias;
    module->debug_frame_index = IndexDebugFrame(module->debug_frame);
  }
  if (file.over_budget() && module->error.empty()) module->error = file.BudgetError();
}

void TargetModules::Describe(ObjectBytes& file, const std::vector<FileMapping>& mappings,
                             uint32_t machine, TargetModule* module) {
  if (machine == EM_ARM) {
    DescribeElf<Elf32Types>(file, mappings, machine, module);
  } else {
    DescribeElf<Elf64Types>(file, mappings, machine, module);
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
  // Each object's tables, read here from its file (every read now, while the target runs).
  for (size_t i = 0; i < t.modules_.size(); ++i) {
    TargetModule& module = t.modules_[i];
    if (module.is_vdso) continue;  // LoadVdso(), once the target's memory can be read
    int fd = OpenObject(pid, t.mappings_[i].front().range, module.path, &module.file);
    if (fd < 0) {
      module.error = absl::StrCat("cannot open ", module.path, ": ", std::strerror(errno));
      continue;
    }
    struct stat st{};
    fstat(fd, &st);
    std::string why;
    std::unique_ptr<ObjectBytes> file = ObjectBytes::Adopt(fd, &why);
    if (file == nullptr) {
      module.error = absl::StrCat("cannot read ", module.file, " (", why, ")");
      continue;
    }
    // Named (for the symbolizer) by its own path where that is the very file mapped.
    struct stat named;
    if (module.file != module.path && stat(module.path.c_str(), &named) == 0 &&
        named.st_dev == st.st_dev && named.st_ino == st.st_ino) {
      module.file = module.path;
    }
    Describe(*file, t.mappings_[i], kNativeMachine, &module);
    file->CloseFile();
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
    if (size == 0 || size > kMaxVdsoSize) continue;
    std::vector<unsigned char> copy(size);
    if (!memory.Read(range.lo, copy.data(), size)) {
      module.error = "cannot read the vDSO";
      continue;
    }
    std::unique_ptr<ObjectBytes> file = ObjectBytes::Copy(std::move(copy));
    Describe(*file, mappings_[i], kNativeMachine, &module);
    files_.push_back(std::move(file));
  }
}

std::unique_ptr<TargetModules> TargetModules::FromSnapshot(
    const std::vector<SnapshotModule>& listed, uint32_t machine, const std::string& sysroot,
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
    module.addresses_32bit = machine == EM_ARM;
    for (const AddressRange& r : s.exec) t.executable_.push_back(r);
    if (s.is_vdso) {
      // Its tables from the image the snapshot copied (as LoadVdso reads a live one's).
      if (s.image.empty()) {
        module.error = "the vDSO's tables are not in the snapshot";
      } else {
        std::unique_ptr<ObjectBytes> file = ObjectBytes::Copy(s.image);
        Describe(*file, {}, machine, &module);
        t.files_.push_back(std::move(file));
      }
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
      std::string error;
      std::unique_ptr<ObjectBytes> file = ObjectBytes::Open(path, &error);
      if (file == nullptr) {
        if (why.empty()) why = error;
        continue;
      }
      Describe(*file, {}, machine, &tried);
      file->CloseFile();
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
      t.files_.push_back(std::move(file));  // its tables' bytes
      why.clear();
      break;
    }
    if (module.file.empty()) {
      module.error = why.empty() ? "no file to look for (no path, no build-id)" : why;
      module.has_eh_frame = false;
      module.has_exidx = false;
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

TargetModules::~TargetModules() = default;

uint64_t TargetModules::bytes_held() const {
  uint64_t held = 0;
  for (const auto& file : files_) held += file->bytes_held();
  return held;
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

bool TargetModules::FindExidx(uint64_t pc, ExidxSection* out) const {
  const TargetModule* module = Find(pc);
  if (module == nullptr || !module->has_exidx) return false;
  *out = module->exidx;
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
