// StackHash: the stack table's hash of a stack's frames (stack_table.h), asked once for every
// recorded allocation. Four lanes, each taking two frames a step: frames 2k and 2k + 1 go into
// lane k % 4 as lane = (lane ^ pc[2k]) * kMul + pc[2k + 1], so the multiplies of neighbouring
// steps do not wait for each other; the lanes are mixed at the end. Two frames a multiply cost
// three instructions (an `xor` and an `add` from memory, an `imul`) where one a frame cost four;
// the frame added after a step is mixed by the lane's next multiply or by the final mix, and
// stacks whose hashes collide anyway are told apart by their frames (StackTable::FindIn).
// The lanes are four scalars, not an array: an array with an inner loop over it compiled to a
// load and a store per lane and frame.
#ifndef STACKWALK_LEAKCHECK_STACK_HASH_H_
#define STACKWALK_LEAKCHECK_STACK_HASH_H_

#include <cstdint>

namespace stackwalk::leakcheck::stack_hash {

constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
// Each lane's start (the first also takes the frame count).
constexpr uint64_t kStart[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull};

// One frame into a lane (the last of an odd count).
inline uint64_t Step(uint64_t lane, void* pc) {
  return (lane ^ reinterpret_cast<uintptr_t>(pc)) * kMul;
}
// Two frames into a lane.
inline uint64_t Step2(uint64_t lane, void* inner, void* outer) {
  return Step(lane, inner) + reinterpret_cast<uintptr_t>(outer);
}
inline uint64_t Rotate(uint64_t x, int bits) { return x >> bits | x << (64 - bits); }

}  // namespace stackwalk::leakcheck::stack_hash

namespace stackwalk::leakcheck {

// The hash of frames pcs[0..n), n >= 0 (pcs may be null when n is 0). Async-signal-safe.
// Inlined: a call of its own cost ~10 instructions an allocation.
[[gnu::always_inline]] inline uint64_t StackHash(void* const* pcs, int n) {
  using stack_hash::kStart;
  using stack_hash::Step;
  using stack_hash::Step2;
  uint64_t a = kStart[0] ^ static_cast<uint64_t>(n), b = kStart[1], c = kStart[2], d = kStart[3];
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    a = Step2(a, pcs[i], pcs[i + 1]);
    b = Step2(b, pcs[i + 2], pcs[i + 3]);
    c = Step2(c, pcs[i + 4], pcs[i + 5]);
    d = Step2(d, pcs[i + 6], pcs[i + 7]);
  }
  // Up to seven left: pairs into a, b, c, an odd last frame into d.
  if (i + 2 <= n) a = Step2(a, pcs[i], pcs[i + 1]), i += 2;
  if (i + 2 <= n) b = Step2(b, pcs[i], pcs[i + 1]), i += 2;
  if (i + 2 <= n) c = Step2(c, pcs[i], pcs[i + 1]), i += 2;
  if (i < n) d = Step(d, pcs[i]);
  using stack_hash::Rotate;
  uint64_t h = a ^ Rotate(b, 17) ^ Rotate(c, 31) ^ Rotate(d, 43);
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STACK_HASH_H_
