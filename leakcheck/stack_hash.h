// StackHash: the stack table's hash of a stack's frames (stack_table.h), asked once for every
// recorded allocation. Four lanes: frame i goes into lane i % 4 as lane = (lane ^ pc) * kMul, so
// the multiplies of neighbouring frames do not wait for each other; the lanes are mixed at the end.
// The lanes are four scalars, not an array: an array with an inner loop over it compiled to a
// load and a store per lane and frame (~10 instructions a frame, against ~3).
#ifndef STACKWALK_LEAKCHECK_STACK_HASH_H_
#define STACKWALK_LEAKCHECK_STACK_HASH_H_

#include <cstdint>

namespace stackwalk::leakcheck::stack_hash {

constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
// Each lane's start (the first also takes the frame count).
constexpr uint64_t kStart[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull};

inline uint64_t Step(uint64_t lane, void* pc) {
  return (lane ^ reinterpret_cast<uintptr_t>(pc)) * kMul;
}
inline uint64_t Rotate(uint64_t x, int bits) { return x >> bits | x << (64 - bits); }

}  // namespace stackwalk::leakcheck::stack_hash

namespace stackwalk::leakcheck {

// The hash of frames pcs[0..n), n >= 0 (pcs may be null when n is 0). Async-signal-safe.
inline uint64_t StackHash(void* const* pcs, int n) {
  using stack_hash::kStart;
  using stack_hash::Step;
  uint64_t a = kStart[0] ^ static_cast<uint64_t>(n), b = kStart[1], c = kStart[2], d = kStart[3];
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    a = Step(a, pcs[i]);
    b = Step(b, pcs[i + 1]);
    c = Step(c, pcs[i + 2]);
    d = Step(d, pcs[i + 3]);
  }
  if (i < n) a = Step(a, pcs[i]);
  if (i + 1 < n) b = Step(b, pcs[i + 1]);
  if (i + 2 < n) c = Step(c, pcs[i + 2]);
  using stack_hash::Rotate;
  uint64_t h = a ^ Rotate(b, 17) ^ Rotate(c, 31) ^ Rotate(d, 43);
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_STACK_HASH_H_
