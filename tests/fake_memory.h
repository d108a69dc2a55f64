// FakeMemory: a made-up stack for offline walker tests: words at chosen addresses inside one
// region; every other read fails, as reads outside a real thread's stack do.
#ifndef STACKWALK_TESTS_FAKE_MEMORY_H_
#define STACKWALK_TESTS_FAKE_MEMORY_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace stackwalk::testing {

class FakeMemory {
 public:
  FakeMemory(uint64_t base, uint64_t size) : base_(base), bytes_(size, 0) {}

  void Put32(uint64_t addr, uint32_t v) { std::memcpy(&bytes_.at(addr - base_), &v, 4); }
  void Put64(uint64_t addr, uint64_t v) { std::memcpy(&bytes_.at(addr - base_), &v, 8); }

  bool Read(uint64_t addr, void* out, size_t size) {
    ++reads_;
    if (addr < base_ || addr - base_ > bytes_.size() || size > bytes_.size() - (addr - base_)) {
      return false;
    }
    std::memcpy(out, &bytes_[addr - base_], size);
    return true;
  }
  int RegionOf(uint64_t addr) const {
    return addr >= base_ && addr - base_ < bytes_.size() ? 0 : -1;
  }
  uint64_t base() const { return base_; }
  uint64_t end() const { return base_ + bytes_.size(); }
  int reads() const { return reads_; }

 private:
  uint64_t base_;
  std::vector<uint8_t> bytes_;
  int reads_ = 0;
};

// Code ranges for the arm32 walker's code checks.
class FakeCodeMap {
 public:
  void AddCode(uint64_t lo, uint64_t hi) { ranges_.push_back({lo, hi}); }
  bool IsCode(uint64_t pc) const {
    for (auto& r : ranges_) {
      if (pc >= r.first && pc < r.second) return true;
    }
    return false;
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

}  // namespace stackwalk::testing

#endif  // STACKWALK_TESTS_FAKE_MEMORY_H_
