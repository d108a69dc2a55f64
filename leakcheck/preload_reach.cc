#include "leakcheck/preload_reach.h"

#include <elf.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace stackwalk::leakcheck {
namespace {

// The file execvp would run for `program`, or "" if none.
std::string Resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// Whether the ELF file `bytes` starts has a PT_INTERP program header. `known` is false when the
// header could not be read (not ELF, truncated): no verdict then.
template <class Ehdr, class Phdr>
bool HasInterpreter(std::ifstream& in, bool* known) {
  Ehdr header;
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(&header), sizeof(header))) return *known = false;
  if (header.e_phentsize != sizeof(Phdr)) return *known = false;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Phdr phdr;
    in.seekg(static_cast<std::streamoff>(header.e_phoff + i * sizeof(Phdr)));
    if (!in.read(reinterpret_cast<char*>(&phdr), sizeof(phdr))) return *known = false;
    if (phdr.p_type == PT_INTERP) return true;
  }
  return false;
}

std::string Check(const std::string& program, int depth) {
  const std::string file = Resolve(program);
  struct stat st;
  if (file.empty() || stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  if ((st.st_mode & S_ISUID) != 0 && st.st_uid != geteuid()) {
    return file + " is set-user-ID (owner uid " + std::to_string(st.st_uid) +
           "): the loader ignores LD_PRELOAD for it";
  }
  if ((st.st_mode & S_ISGID) != 0 && (st.st_mode & S_IXGRP) != 0 && st.st_gid != getegid()) {
    return file + " is set-group-ID (group gid " + std::to_string(st.st_gid) +
           "): the loader ignores LD_PRELOAD for it";
  }
  if (getxattr(file.c_str(), "security.capability", nullptr, 0) > 0) {
    return file + " has file capabilities: the loader ignores LD_PRELOAD for it";
  }
  std::ifstream in(file, std::ios::binary);
  char magic[EI_NIDENT] = {};
  in.read(magic, sizeof(magic));
  const std::streamsize got = in.gcount();
  in.clear();
  if (got >= 2 && magic[0] == '#' && magic[1] == '!') {
    // A script: what runs is its interpreter.
    in.seekg(2);
    std::string line;
    std::getline(in, line);
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || depth > 3) return "";
    const std::string interpreter = line.substr(start, line.find_first_of(" \t\r", start) - start);
    std::string why = Check(interpreter, depth + 1);
    return why.empty() ? "" : "the interpreter of " + file + ": " + why;
  }
  if (got < EI_NIDENT || std::memcmp(magic, ELFMAG, SELFMAG) != 0) return "";
  bool known = true;
  const bool dynamic = magic[EI_CLASS] == ELFCLASS64
                           ? HasInterpreter<Elf64_Ehdr, Elf64_Phdr>(in, &known)
                           : HasInterpreter<Elf32_Ehdr, Elf32_Phdr>(in, &known);
  if (known && !dynamic) {
    return file + " is statically linked: no dynamic loader runs to preload the checker";
  }
  return "";
}

}  // namespace

std::string WhyPreloadCannotReach(const std::string& program) { return Check(program, 0); }

}  // namespace stackwalk::leakcheck
