// Regs<Arch>: the register file of one frame, in the architecture's DWARF numbering, with a mask
// of which registers are known. One layout for every architecture so that walkers are templates
// over Arch with no virtual calls; the per-architecture facts live in arch_*.h.
#ifndef STACKWALK_SRC_CORE_REGS_H_
#define STACKWALK_SRC_CORE_REGS_H_

#include <cstdint>

namespace stackwalk::internal {

template <class Arch>
class Regs {
 public:
  static_assert(Arch::kNumRegs <= 64, "valid mask is 64 bits");

  uint64_t Get(int reg) const { return values_[reg]; }
  bool Has(int reg) const { return (valid_ >> reg) & 1; }
  void Set(int reg, uint64_t value) {
    values_[reg] = value;
    valid_ |= uint64_t{1} << reg;
  }
  void Forget(int reg) { valid_ &= ~(uint64_t{1} << reg); }
  void ForgetAll() { valid_ = 0; }

  uint64_t pc() const { return values_[Arch::kPc]; }
  uint64_t sp() const { return values_[Arch::kSp]; }
  uint64_t fp() const { return values_[Arch::kFp]; }
  void set_pc(uint64_t v) { Set(Arch::kPc, v); }
  void set_sp(uint64_t v) { Set(Arch::kSp, v); }
  void set_fp(uint64_t v) { Set(Arch::kFp, v); }

  uint64_t valid_mask() const { return valid_; }
  const uint64_t* values() const { return values_; }

 private:
  // Values are meaningful only where valid_ says so; not zeroing them keeps captures cheap.
  uint64_t values_[Arch::kNumRegs];
  uint64_t valid_ = 0;
};

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_CORE_REGS_H_
