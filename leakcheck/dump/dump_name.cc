#include "leakcheck/dump/dump_name.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace stackwalk::leakcheck::dump {
namespace {

// The file's GNU build-id; false if it cannot be read as ELF or has none. The path comes from
// the dump: only a regular file is read (a FIFO or a terminal named there would block the open or
// the read for ever).
bool ReadBuildId(const std::string& path, std::vector<uint8_t>* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return false;
  }
  elf_version(EV_CURRENT);
  bool found = false;
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* bits = nullptr;
    const ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    if (n > 0) {
      const auto* bytes = static_cast<const uint8_t*>(bits);
      out->assign(bytes, bytes + n);
      found = true;
    }
    elf_end(elf);
  }
  close(fd);
  return found;
}

bool IsReadableRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), R_OK) == 0;
}

// Where an object's separate debug file is looked for: the system's, under the sysroot if given.
std::string DebugRoot(const NamingPlaces& places) {
  return places.sysroot + SymbolizerOptions().debug_root;
}

SymbolizerOptions OptionsFor(const NamingPlaces& places) {
  SymbolizerOptions options;
  options.debug_root = DebugRoot(places);
  return options;
}

}  // namespace

std::string HexBuildId(const std::vector<uint8_t>& id) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : id) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

DumpNamer::DumpNamer(const DumpContents& dump, NamingPlaces places)
    : dump_(dump),
      places_(std::move(places)),
      symbolizer_(std::make_unique<Symbolizer>(OptionsFor(places_))),
      decided_(dump.modules.size(), 0),
      files_(dump.modules.size()) {}

const std::string& DumpNamer::FileFor(uint32_t index) {
  if (decided_[index]) return files_[index];
  decided_[index] = 1;
  const DumpModule& m = dump_.modules[index];
  // The debug file of its build-id, where one was asked for; an explicit --debug-dir wins.
  auto by_build_id = [&](const std::vector<std::string>& dirs) {
    if (m.build_id.empty()) return false;
    const std::string hex = HexBuildId(m.build_id);
    const std::string tail = "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
    for (const std::string& dir : dirs) {
      std::vector<uint8_t> debug_id;
      if (ReadBuildId(dir + tail, &debug_id) && debug_id == m.build_id) {
        files_[index] = dir + tail;
        return true;
      }
    }
    return false;
  };
  if (by_build_id(places_.debug_dirs)) return files_[index];
  const std::string path = places_.sysroot + m.path;
  std::vector<uint8_t> id;
  const bool readable = ReadBuildId(path, &id) || IsReadableRegularFile(path);
  if (readable && (m.build_id.empty() || id == m.build_id)) {
    files_[index] = path;
    return files_[index];
  }
  if (by_build_id({DebugRoot(places_)})) return files_[index];
  missing_.push_back(path + (readable ? " (another build: build-id " + HexBuildId(id) +
                                            ", the dump's " + HexBuildId(m.build_id) + ")"
                                      : " (no such file)"));
  return files_[index];
}

void DumpNamer::OpenFiles(const std::vector<ToName>& stacks) {
  std::vector<std::string> files;
  std::vector<uint8_t> listed(dump_.modules.size(), 0);
  for (const ToName& s : stacks) {
    for (int i = 0; i < static_cast<int>(s.stack->frames.size()); ++i) {
      const uint32_t module = s.stack->frames[i].module;
      if (module == kUnknownModule) continue;
      const std::string& file = FileFor(module);
      if (i < s.look_up && !file.empty() && !listed[module]) {
        listed[module] = 1;
        files.push_back(file);
      }
    }
  }
  symbolizer_->OpenFiles(files);
}

std::vector<SymbolizedFrame> DumpNamer::Name(const DumpStack& stack, int look_up, int keep) {
  const int frames = std::min(static_cast<int>(stack.frames.size()), std::max(keep, 0));
  std::vector<SymbolizedFrame> named;
  named.reserve(static_cast<size_t>(frames));  // inline frames may add some
  for (int i = 0; i < frames; ++i) {
    const DumpFrame& frame = stack.frames[i];
    if (frame.module == kUnknownModule) {  // in no object: the PC alone, as the program gives it
      SymbolizedFrame f;
      f.pc = frame.offset;
      f.module_offset = frame.offset;  // the PC less a bias of 0
      f.index = i;
      named.push_back(f);
      continue;
    }
    const DumpModule& m = dump_.modules[frame.module];
    const std::string& file = FileFor(frame.module);
    const size_t first = named.size();
    if (!file.empty() && i < look_up) {
      // A return address: looked up a byte back, inside the call, as the symbolizer does.
      auto found = symbolizer_->SymbolizeFile(file, frame.offset - 1);
      if (found.ok()) {
        for (SymbolizedFrame& f : *found) named.push_back(std::move(f));
      }
    }
    if (named.size() == first) named.emplace_back();  // the object and offset, unnamed
    for (size_t k = first; k < named.size(); ++k) {
      SymbolizedFrame& f = named[k];
      f.pc = m.load_bias + frame.offset;
      f.index = i;
      f.module = m.path;
      f.module_offset = frame.offset;
    }
  }
  return named;
}

}  // namespace stackwalk::leakcheck::dump
