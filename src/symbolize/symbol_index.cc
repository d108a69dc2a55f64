#include "symbolize/symbol_index.h"

#include <algorithm>

namespace stackwalk::internal {
namespace {

bool Nameable(const ElfImage::Candidate& c) { return c.name != nullptr && c.name[0] != '\0'; }

uint64_t EndOf(const ElfImage::Candidate& c) {
  if (c.size == 0 || !Nameable(c)) return 0;  // never contains anything
  return c.value + c.size < c.value ? UINT64_MAX : c.value + c.size;
}

}  // namespace

void SymbolIndex::Build(const ElfImage& image, const ElfImage* frames) {
  image_ = &image;
  frames_ = frames != nullptr ? frames : &image;
  for (Table& t : tables_) {
    t.entries.clear();
    t.max_end.clear();
  }
  image.ForEachCandidate(
      [](void* context, int table, const ElfImage::Candidate& c) {
        Table& t = static_cast<Table*>(context)[table];
        t.entries.push_back({c, static_cast<uint32_t>(t.entries.size())});
      },
      tables_);
  for (Table& t : tables_) {
    std::sort(t.entries.begin(), t.entries.end(), [](const Entry& a, const Entry& b) {
      return a.symbol.value != b.symbol.value ? a.symbol.value < b.symbol.value : a.order < b.order;
    });
    t.max_end.resize(t.entries.size());
    uint64_t running = 0;
    for (size_t i = 0; i < t.entries.size(); ++i) {
      running = std::max(running, EndOf(t.entries[i].symbol));
      t.max_end[i] = running;
    }
  }
}

bool SymbolIndex::LookupIn(const Table& t, uint64_t addr, SymbolHit* out) const {
  // Entries [0, upper) start at or below addr.
  const size_t upper = static_cast<size_t>(
      std::upper_bound(t.entries.begin(), t.entries.end(), addr,
                       [](uint64_t a, const Entry& e) { return a < e.symbol.value; }) -
      t.entries.begin());
  const Entry* best = nullptr;
  // Containing symbols: walk down while some entry at or below can still reach past addr.
  for (size_t i = upper; i > 0 && t.max_end[i - 1] > addr; --i) {
    const Entry& e = t.entries[i - 1];
    if (EndOf(e.symbol) <= addr) continue;
    const ElfImage::Candidate& c = e.symbol;
    if (best == nullptr || c.size < best->symbol.size ||
        (c.size == best->symbol.size &&
         (c.rank > best->symbol.rank || (c.rank == best->symbol.rank && e.order < best->order)))) {
      best = &e;
    }
  }
  if (best == nullptr) {
    // The nearest function below: the highest address any function starts at, then the best
    // binding there, then the first in table order; only if no function there has a size.
    const Entry* below = nullptr;
    bool sized = false;
    for (size_t i = upper; i > 0; --i) {
      const Entry& e = t.entries[i - 1];
      if (below != nullptr && e.symbol.value != below->symbol.value) break;
      if (e.symbol.is_object) continue;
      sized = sized || e.symbol.size != 0;
      if (below == nullptr || e.symbol.rank > below->symbol.rank ||
          (e.symbol.rank == below->symbol.rank && e.order < below->order)) {
        below = &e;
      }
    }
    if (below == nullptr || sized || !image_->SectionContains(below->symbol.section, addr) ||
        !Nameable(below->symbol) || !frames_->ZeroSizeSymbolReaches(below->symbol.value, addr)) {
      return false;
    }
    best = below;
  }
  out->name = best->symbol.name;
  out->value = best->symbol.value;
  out->size = best->symbol.size;
  out->file = best->symbol.file;
  return true;
}

bool SymbolIndex::Lookup(uint64_t addr, SymbolHit* out) const {
  return image_ != nullptr && (LookupIn(tables_[0], addr, out) || LookupIn(tables_[1], addr, out));
}

}  // namespace stackwalk::internal
