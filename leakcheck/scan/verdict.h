// Verdict: what a check decided about a live block.
#ifndef STACKWALK_LEAKCHECK_SCAN_VERDICT_H_
#define STACKWALK_LEAKCHECK_SCAN_VERDICT_H_

#include <cstdint>

namespace stackwalk::leakcheck {

enum class Verdict : uint8_t {
  kLive,       // not classified: no reachability scan ran
  kReachable,  // a chain of pointers from the roots reaches it
  kDirect,     // a leak nothing reachable or leaked points to (or the head of a leaked cycle)
  kIndirect,   // a leak only other leaked blocks point to
  kIgnored,    // marked as an intended leak (IgnoreObject): a root, never reported
};
constexpr int kVerdictCount = 5;

inline bool IsLeak(Verdict verdict) {
  return verdict == Verdict::kDirect || verdict == Verdict::kIndirect;
}

}  // namespace stackwalk::leakcheck

#endif  // STACKWALK_LEAKCHECK_SCAN_VERDICT_H_
