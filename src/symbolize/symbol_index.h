// SymbolIndex: an ElfImage's symbol tables sorted by address, so that a batch of lookups costs
// a binary search each instead of a scan of the whole table (libc's .symtab has ~3,000
// functions; large C++ programs have hundreds of thousands). Answers exactly as
// ElfImage::Lookup: the smallest symbol containing the address (best binding, then table order,
// among equals), else the nearest function below it in the same section if it has no size and
// its FDE reaches the address; .symtab before .dynsym. Not signal-safe (it allocates); the crash
// handler's path uses ElfImage::Lookup.
#ifndef STACKWALK_SRC_SYMBOLIZE_SYMBOL_INDEX_H_
#define STACKWALK_SRC_SYMBOLIZE_SYMBOL_INDEX_H_

#include <cstdint>
#include <vector>

#include "symbolize/elf_image.h"

namespace stackwalk::internal {

class SymbolIndex {
 public:
  // Indexes `image`, which must stay open (names point into it). Functions without a size are
  // bounded by the FDEs of `frames` (default: `image`; a separate debug file has no .eh_frame,
  // its object has), which must stay open too.
  void Build(const ElfImage& image, const ElfImage* frames = nullptr);
  bool Lookup(uint64_t addr, SymbolHit* out) const;
  size_t size() const { return tables_[0].entries.size() + tables_[1].entries.size(); }

 private:
  struct Entry {
    ElfImage::Candidate symbol;
    uint32_t order;  // position among the table's candidates: ties go to the first
  };
  struct Table {
    std::vector<Entry> entries;   // sorted by (value, order)
    std::vector<uint64_t> max_end;  // the largest end of a nameable sized symbol in [0, i]
  };
  bool LookupIn(const Table& table, uint64_t addr, SymbolHit* out) const;

  const ElfImage* image_ = nullptr;
  const ElfImage* frames_ = nullptr;
  Table tables_[2];
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_SYMBOLIZE_SYMBOL_INDEX_H_
