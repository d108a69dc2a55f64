// Table test: every FDE of real system libraries (libc.so.6 and libstdc++.so.6 of the target)
// decoded by stackwalk row by row and compared with what binutils prints for the same FDE
// (`readelf --debug-dump=frames-interp`). run_cfi_table.cmake makes the dumps on the host and
// passes "ELF=DUMP" pairs in STACKWALK_CFI_TABLE_INPUTS (';'-separated).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/context.h"
#include "ehframe/cfi_parser.h"
#include "ehframe/cfi_program.h"
#include "ehframe/eh_frame_hdr.h"
#include "elf_file.h"

namespace stackwalk::internal {
namespace {

using Row = CfiRow<NativeArch::kNumRegs>;

// readelf's register names for the DWARF numbers the walkers track.
int RegisterNumber(const std::string& name) {
#if defined(__x86_64__)
  static const std::map<std::string, int> kRegs = {
      {"rax", 0}, {"rdx", 1}, {"rcx", 2}, {"rbx", 3}, {"rsi", 4},   {"rdi", 5},
      {"rbp", 6}, {"rsp", 7}, {"r8", 8},  {"r9", 9},  {"r10", 10},  {"r11", 11},
      {"r12", 12}, {"r13", 13}, {"r14", 14}, {"r15", 15}, {"rip", 16}};
#elif defined(__aarch64__)
  static const std::map<std::string, int> kRegs = [] {
    std::map<std::string, int> m;
    for (int i = 0; i <= 30; ++i) m["x" + std::to_string(i)] = i;
    m["sp"] = 31;
    return m;
  }();
#endif
  auto it = kRegs.find(name);
  return it == kRegs.end() ? -1 : it->second;
}

// The file mapped read-only, with where its .eh_frame_hdr sits and the shift from link-time
// addresses to addresses in the mapping (pc-relative encodings stay consistent inside it).
struct MappedElf {
  std::shared_ptr<stackwalk::testing::ElfFile> file;  // the mapping the section points into
  EhFrameSection section;
  uint64_t shift = 0;  // mapped = vaddr + shift
  bool ok = false;
};

MappedElf MapElf(const std::string& path) {
  MappedElf out;
  out.file = std::make_shared<stackwalk::testing::ElfFile>(path);
  const stackwalk::testing::ElfFile* file = out.file.get();
  const ElfW(Shdr)* hdr = file->ok() ? file->Section(".eh_frame_hdr") : nullptr;
  if (hdr == nullptr) return out;
  out.shift = file->Shift(*hdr);
  out.section.hdr = file->Mapped(*hdr);
  out.section.bounds = {file->begin(), file->end()};
  out.section.address_size = sizeof(void*);
  out.ok = true;
  return out;
}

// One cell of readelf's table against our rule.
bool SameRule(const std::string& cell, const RegRule& rule) {
  if (cell == "u") return rule.kind == RuleKind::kSameValue || rule.kind == RuleKind::kUndefined;
  if (cell == "s") return rule.kind == RuleKind::kSameValue;
  if (cell == "exp") return rule.kind == RuleKind::kExpression;
  if (cell == "vexp") return rule.kind == RuleKind::kValExpression;
  if (cell[0] == 'c') return rule.kind == RuleKind::kOffset && rule.value == std::stoll(cell.substr(1));
  if (cell[0] == 'v') {
    return rule.kind == RuleKind::kValOffset && rule.value == std::stoll(cell.substr(1));
  }
  int reg = RegisterNumber(cell);
  return reg >= 0 && rule.kind == RuleKind::kRegister && rule.value == reg;
}

bool SameCfa(const std::string& cell, const CfaRule& cfa) {
  if (cell == "exp") return cfa.is_expression;
  size_t sign = cell.find_first_of("+-");
  if (sign == std::string::npos || cfa.is_expression) return false;
  int reg = RegisterNumber(cell.substr(0, sign));
  return reg >= 0 && static_cast<uint32_t>(reg) == cfa.reg &&
         cfa.offset == std::stoll(cell.substr(sign));
}

struct Counts {
  long fdes = 0;
  long rows = 0;
  long cells = 0;
  long mismatches = 0;
  std::string first_mismatch;
};

void CheckLibrary(const std::string& elf, const std::string& dump, Counts* counts) {
  MappedElf mapped = MapElf(elf);
  ASSERT_TRUE(mapped.ok) << "no .eh_frame_hdr in " << elf;
  std::ifstream in(dump);
  ASSERT_TRUE(in) << dump;
  std::string line;
  Fde fde;
  bool in_fde = false;
  std::vector<std::string> columns;
  auto note = [&](const std::string& what) {
    if (counts->mismatches++ == 0) counts->first_mismatch = elf + ": " + what;
  };
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() >= 5 && w[3] == "FDE") {
      // "<off> <len> <cie ptr> FDE cie=<off> pc=<begin>..<end>"
      std::string range = w[5].substr(3);
      uint64_t begin = std::stoull(range.substr(0, range.find("..")), nullptr, 16);
      uint64_t end = std::stoull(range.substr(range.find("..") + 2), nullptr, 16);
      uint64_t fde_addr = FindFde(mapped.section, begin + mapped.shift);
      CfiError err = fde_addr == 0 ? CfiError::kPcNotCovered
                                   : ParseFde(mapped.section, fde_addr, &fde);
      in_fde = err == CfiError::kOk && fde.pc_begin == begin + mapped.shift &&
               fde.pc_end == end + mapped.shift;
      if (!in_fde) note("FDE for pc " + range + " not found or decoded: " + CfiErrorString(err));
      ++counts->fdes;
      columns.clear();
      // An FDE without instructions prints no table: its row at pc_begin must still decode.
      Row row;
      if (in_fde && RunCfaProgram(mapped.section, fde, fde.pc_begin, &row) != CfiError::kOk) {
        note("FDE " + range + ": program failed at its first byte");
      }
      continue;
    }
    if (w.size() >= 4 && w[3] == "CIE") {
      in_fde = false;  // a CIE's own table follows: not compared
      continue;
    }
    if (w.size() >= 2 && w[0] == "LOC" && w[1] == "CFA") {
      columns.assign(w.begin() + 2, w.end());
      continue;
    }
    if (w.empty()) {
      columns.clear();  // a blank line ends the table
      continue;
    }
    const bool is_row = w[0].size() == 16 && w[0].find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!is_row || !in_fde || columns.empty() || w.size() != columns.size() + 2) continue;
    uint64_t loc = std::stoull(w[0], nullptr, 16);
    Row row;
    CfiError err = RunCfaProgram(mapped.section, fde, loc + mapped.shift, &row);
    ++counts->rows;
    if (err != CfiError::kOk) {
      note("row " + w[0] + ": " + CfiErrorString(err));
      continue;
    }
    ++counts->cells;
    if (!SameCfa(w[1], row.cfa)) note("row " + w[0] + ": CFA " + w[1]);
    for (size_t c = 0; c < columns.size(); ++c) {
      int reg = columns[c] == "ra" ? static_cast<int>(fde.cie.ra_column) : RegisterNumber(columns[c]);
      if (reg < 0 || reg >= NativeArch::kNumRegs) continue;  // e.g. AArch64's d8-d15
      ++counts->cells;
      if (!SameRule(w[c + 2], row.regs[reg])) {
        note("row " + w[0] + ": " + columns[c] + " is " + w[c + 2]);
      }
    }
  }
}

TEST(CfiTable, EveryFdeOfTheSystemLibrariesMatchesReadelf) {
  const char* inputs = std::getenv("STACKWALK_CFI_TABLE_INPUTS");
  if (inputs == nullptr) GTEST_SKIP() << "run through ctest (run_cfi_table.cmake)";
  std::stringstream list(inputs);
  std::string pair;
  int libraries = 0;
  while (std::getline(list, pair, ';')) {
    size_t eq = pair.find('=');
    ASSERT_NE(eq, std::string::npos) << pair;
    Counts counts;
    CheckLibrary(pair.substr(0, eq), pair.substr(eq + 1), &counts);
    std::printf("%s: %ld FDEs, %ld rows, %ld cells compared, %ld mismatches\n",
                pair.substr(0, eq).c_str(), counts.fdes, counts.rows, counts.cells,
                counts.mismatches);
    EXPECT_GT(counts.fdes, 500);
    EXPECT_GT(counts.rows, 1000);
    EXPECT_EQ(counts.mismatches, 0) << counts.first_mismatch;
    ++libraries;
  }
  EXPECT_EQ(libraries, 2);
}

}  // namespace
}  // namespace stackwalk::internal
