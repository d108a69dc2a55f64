#include "leakcheck/profile/value_format.h"

#include <cmath>
#include <cstdio>

namespace stackwalk::profile {

std::string GroupThousands(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatValue(uint64_t value, ValueUnit unit) {
  if (unit == ValueUnit::kCount) return GroupThousands(value);
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (value < 1024) return std::to_string(value) + " B";
  double scaled = static_cast<double>(value);
  size_t unit_index = 0;
  while (scaled >= 1024 && unit_index + 1 < std::size(kUnits)) {
    scaled /= 1024;
    ++unit_index;
  }
  char text[32];
  const int decimals = scaled < 10 ? 2 : scaled < 100 ? 1 : 0;
  std::snprintf(text, sizeof(text), "%.*f %s", decimals, scaled, kUnits[unit_index]);
  return text;
}

std::string FormatExact(uint64_t value, ValueUnit unit) {
  if (unit == ValueUnit::kCount) return GroupThousands(value);
  return GroupThousands(value) + (value == 1 ? " byte" : " bytes");
}

std::string FormatShare(uint64_t value, uint64_t total) {
  const double share = total == 0 ? 0 : 100.0 * static_cast<double>(value) /
                                             static_cast<double>(total);
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f%%", share);
  return text;
}

std::string FormatCoordinate(double value) {
  if (!std::isfinite(value)) return "0";
  char text[48];
  std::snprintf(text, sizeof(text), "%.2f", value);
  std::string out = text;
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  if (out == "-0") out = "0";
  return out;
}

}  // namespace stackwalk::profile
