// Table test for 32-bit ARM: every .ARM.exidx entry of the target's libc.so.6 and
// libstdc++.so.6 decoded by stackwalk (compact model, opcode bytes, cantunwind) equals what
// binutils prints for it (`arm-linux-gnueabihf-readelf -u`), and every opcode stream runs
// through the interpreter without a spare or malformed opcode where readelf saw none.
// run_exidx_table.cmake makes the dumps and passes "ELF=DUMP" pairs in
// STACKWALK_EXIDX_TABLE_INPUTS (';'-separated).
#include <gtest/gtest.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "exidx/ehabi_interpreter.h"
#include "exidx/exidx_table.h"
#include "elf_file.h"

#ifndef SHT_ARM_EXIDX
#define SHT_ARM_EXIDX 0x70000001
#endif

namespace stackwalk::internal {
namespace {

struct MappedElf {
  ExidxSection section;
  uint64_t shift = 0;  // mapped = link-time address + shift
  bool ok = false;
};

MappedElf MapElf(const std::string& path) {
  MappedElf out;
  auto* file = new stackwalk::testing::ElfFile(path);  // mapped for the test's life
  const ElfW(Shdr)* exidx = file->ok() ? file->Section("", SHT_ARM_EXIDX) : nullptr;
  if (exidx == nullptr) return out;
  out.shift = file->Shift(*exidx);
  out.section.table = {file->Mapped(*exidx), file->Mapped(*exidx) + exidx->sh_size};
  out.section.bounds = {file->begin(), file->end()};
  // prel31 offsets between the index and .ARM.extab stay right in the mapping only if both
  // keep the same distance as at link time.
  const ElfW(Shdr)* extab = file->Section(".ARM.extab");
  out.ok = extab == nullptr || file->Shift(*extab) == out.shift;
  return out;
}

// A stack of zeros for running opcodes: pops read zeros, never outside it.
class ZeroStack {
 public:
  bool Read(uint64_t addr, void* out, size_t size) {
    if (addr < base() || addr + size > base() + sizeof(words_)) return false;
    std::memset(out, 0, size);
    return true;
  }
  int RegionOf(uint64_t addr) const {
    return addr >= base() && addr < base() + sizeof(words_) ? 0 : -1;
  }
  uint64_t base() const { return reinterpret_cast<uintptr_t>(words_); }

 private:
  uint32_t words_[4096] = {};
};

struct Entry {
  uint64_t function = 0;
  bool cantunwind = false;
  int compact_index = -2;  // -1: generic personality routine
  std::vector<uint8_t> bytes;
  bool readelf_saw_spare = false;
};

std::vector<Entry> ParseDump(const std::string& dump) {
  std::vector<Entry> entries;
  std::ifstream in(dump);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    if (line.rfind("0x", 0) == 0 && w[0].back() == ':') {  // "0x1e284: ..." at column 0
      Entry e;
      e.function = std::stoull(w[0].substr(0, w[0].size() - 1), nullptr, 16);
      e.cantunwind = line.find("[cantunwind]") != std::string::npos;
      entries.push_back(e);
      continue;
    }
    if (entries.empty()) continue;
    Entry& e = entries.back();
    if (line.find("Compact model index:") != std::string::npos) {
      e.compact_index = std::stoi(w.back());
    } else if (line.find("Personality routine:") != std::string::npos) {
      e.compact_index = -1;
    } else if (w[0].size() == 4 && w[0].rfind("0x", 0) == 0) {
      for (const std::string& x : w) {
        if (x.size() != 4 || x.rfind("0x", 0) != 0) break;
        e.bytes.push_back(static_cast<uint8_t>(std::stoul(x, nullptr, 16)));
      }
      if (line.find("pare") != std::string::npos || line.find("eserved") != std::string::npos) {
        e.readelf_saw_spare = true;
      }
    }
  }
  return entries;
}

struct Counts {
  long entries = 0, compact = 0, generic = 0, cantunwind = 0, bytes = 0, mismatches = 0;
  std::string first_mismatch;
};

void CheckLibrary(const std::string& elf, const std::string& dump, Counts* counts) {
  MappedElf mapped = MapElf(elf);
  ASSERT_TRUE(mapped.ok) << "no usable .ARM.exidx in " << elf;
  auto note = [&](const std::string& what) {
    if (counts->mismatches++ == 0) counts->first_mismatch = elf + ": " + what;
  };
  for (const Entry& want : ParseDump(dump)) {
    ++counts->entries;
    char where[32];
    std::snprintf(where, sizeof(where), "0x%llx", static_cast<unsigned long long>(want.function));
    uint64_t entry, start, personality;
    if (FindExidxEntry(mapped.section, want.function + mapped.shift, &entry, &start) !=
            ExidxError::kOk ||
        start != want.function + mapped.shift) {
      note(std::string(where) + ": entry not found");
      continue;
    }
    EhabiOpcodes ops;
    ExidxError err = DecodeExidxEntry(mapped.section, entry, &personality, &ops);
    if (want.cantunwind) {
      ++counts->cantunwind;
      if (err != ExidxError::kCantUnwind) note(std::string(where) + ": not cantunwind");
      continue;
    }
    if (err != ExidxError::kOk) {
      note(std::string(where) + ": " + ExidxErrorString(err));
      continue;
    }
    if (want.compact_index == -1) {
      ++counts->generic;
      if (personality != ~uint64_t{0}) note(std::string(where) + ": not a generic personality");
    } else {
      ++counts->compact;
      if (personality != static_cast<uint64_t>(want.compact_index)) {
        note(std::string(where) + ": compact model index differs");
      }
      // readelf prints the opcode bytes of compact entries only.
      std::vector<uint8_t> ours;
      EhabiOpcodes copy = ops;
      for (uint8_t b; copy.Next(&b);) ours.push_back(b);
      counts->bytes += static_cast<long>(ours.size());
      if (ours != want.bytes) note(std::string(where) + ": opcode bytes differ");
    }
    // Every stream runs: no spare opcode unless readelf saw one.
    ZeroStack stack;
    Regs<ArchArm> regs;
    for (int r = 0; r < 16; ++r) regs.Set(r, stack.base() + 4096);
    EhabiResult run = ExecuteEhabi(ops, regs, stack);
    if (run.result == StepResult::kInvalidFrame && !want.readelf_saw_spare) {
      note(std::string(where) + ": the interpreter refused the opcodes");
    }
  }
}

TEST(ExidxTable, EveryEntryOfTheSystemLibrariesMatchesReadelf) {
  const char* inputs = std::getenv("STACKWALK_EXIDX_TABLE_INPUTS");
  if (inputs == nullptr) GTEST_SKIP() << "run through ctest (run_exidx_table.cmake)";
  std::stringstream list(inputs);
  std::string pair;
  int libraries = 0;
  while (std::getline(list, pair, ';')) {
    size_t eq = pair.find('=');
    ASSERT_NE(eq, std::string::npos) << pair;
    Counts c;
    CheckLibrary(pair.substr(0, eq), pair.substr(eq + 1), &c);
    std::printf("%s: %ld entries (%ld compact, %ld generic personality, %ld cantunwind), "
                "%ld opcode bytes compared, %ld mismatches\n",
                pair.substr(0, eq).c_str(), c.entries, c.compact, c.generic, c.cantunwind,
                c.bytes, c.mismatches);
    EXPECT_GT(c.entries, 500);
    EXPECT_EQ(c.mismatches, 0) << c.first_mismatch;
    ++libraries;
  }
  EXPECT_EQ(libraries, 2);
}

}  // namespace
}  // namespace stackwalk::internal
