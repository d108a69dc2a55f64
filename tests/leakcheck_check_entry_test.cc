// CheckEntry (leakcheck/scan/check_entry.h): the checking thread's stack is the program's from
// the program's call of the entry point up. The entry point's own frame, laid over the program's
// dead frames, lies below that limit (its unwritten slots, alignment padding among them, hold the
// program's stale words); what it saved there of the program's registers, and then overwrote,
// is kept from the unwound registers.
#include <gtest/gtest.h>

#include <cstdint>

#include "leakcheck/scan/check_entry.h"

namespace stackwalk::leakcheck {
namespace {

// A callee-saved register (its DWARF number) the entry point below saves and overwrites.
#if defined(__x86_64__)
#define HELD_REGISTER "rbx"
constexpr int kHeldDwarfRegister = 3;
#define OVERWRITE_HELD() asm volatile("xor %%ebx, %%ebx" ::: "rbx")
#elif defined(__aarch64__)
#define HELD_REGISTER "x19"
constexpr int kHeldDwarfRegister = 19;
#define OVERWRITE_HELD() asm volatile("mov x19, xzr" ::: "x19")
#elif defined(__arm__)
#define HELD_REGISTER "r4"
constexpr int kHeldDwarfRegister = 4;
#define OVERWRITE_HELD() asm volatile("mov r4, #0" ::: "r4")
#endif

struct Seen {
  uintptr_t limit = 0;
  uintptr_t entry_lo = 0, entry_hi = 0;  // the CheckEntry object
  uintptr_t held = 0;                    // the held register, as the entry unwound it
};

// An entry point of the checker's: it saves the program's register, overwrites it, then enters.
__attribute__((noinline)) void EntryPoint(Seen* seen) {
  OVERWRITE_HELD();
  CheckEntry entry;
  seen->limit = entry.stack_limit();
  seen->entry_lo = reinterpret_cast<uintptr_t>(&entry);
  seen->entry_hi = seen->entry_lo + sizeof entry;
  seen->held = entry.program_registers()[kHeldDwarfRegister];
}

// The program: holds `value` in the register across its call of the entry point.
__attribute__((noinline)) uintptr_t Program(uintptr_t value, Seen* seen) {
  register uintptr_t held asm(HELD_REGISTER) = value;
  asm volatile("" : "+r"(held));
  EntryPoint(seen);
  asm volatile("" : "+r"(held));
  return held;
}

TEST(CheckEntry, TheProgramsStackEndsAtItsCallOfTheEntryPointNotInsideTheEntryPointsFrame) {
  Seen seen;
  volatile char above = 0;  // in this frame, above the program's
  ASSERT_EQ(Program(0x5eed, &seen), 0x5eedu);
  EXPECT_GE(seen.limit, seen.entry_hi) << "the entry point's frame is read as the program's";
  EXPECT_LT(seen.limit, reinterpret_cast<uintptr_t>(&above));
  (void)above;
}

TEST(CheckEntry, ARegisterOfTheProgramsTheEntryPointSavedAndOverwroteIsKept) {
  Seen seen;
  const uintptr_t value = 0x5eed0000u + 0x1234;
  ASSERT_EQ(Program(value, &seen), value);
  EXPECT_EQ(seen.held, value);
}

TEST(CheckEntry, NestedEntriesLeaveTheOutermostInCharge) {
  EXPECT_EQ(CheckEntry::Outermost(), nullptr);
  {
    CheckEntry outer;
    {
      CheckEntry inner;
      EXPECT_EQ(CheckEntry::Outermost(), &outer);
    }
    EXPECT_EQ(CheckEntry::Outermost(), &outer);
  }
  EXPECT_EQ(CheckEntry::Outermost(), nullptr);
}

}  // namespace
}  // namespace stackwalk::leakcheck
