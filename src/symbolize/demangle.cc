#include "symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

#if defined(STACKWALK_HAVE_ABSL_DEMANGLE)
#include "absl/debugging/internal/demangle.h"
#endif

namespace stackwalk::internal {

void DemangleSignalSafe(const char* name, char* out, size_t size) {
  if (size == 0) return;
#if defined(STACKWALK_HAVE_ABSL_DEMANGLE)
  if (IsItaniumMangled(name) &&
      absl::debugging_internal::Demangle(name, out, static_cast<int>(size))) {
    return;
  }
#endif
  size_t n = strnlen(name, size - 1);
  std::memcpy(out, name, n);
  out[n] = '\0';
}

std::string Demangle(const char* name) {
  if (!IsItaniumMangled(name)) return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string out(demangled);
  std::free(demangled);
  return out;
}

}  // namespace stackwalk::internal
