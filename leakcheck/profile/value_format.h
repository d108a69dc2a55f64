// Values as the renderers print them: bytes in binary units ("1.50 MiB"), counts with
// thousands separators ("12,345"), shares as percentages.
#ifndef STACKWALK_LEAKCHECK_PROFILE_VALUE_FORMAT_H_
#define STACKWALK_LEAKCHECK_PROFILE_VALUE_FORMAT_H_

#include <cstdint>
#include <string>

#include "leakcheck/profile/flame_graph.h"

namespace stackwalk::profile {

// "12,345,678".
std::string GroupThousands(uint64_t value);

// Bytes: "512 B", "1.50 KiB", "3.25 MiB", ... (three significant figures); counts: GroupThousands.
std::string FormatValue(uint64_t value, ValueUnit unit);

// The exact value with its unit: "1,572,864 bytes", "12,345".
std::string FormatExact(uint64_t value, ValueUnit unit);

// "34.56%" of `total` (0% of nothing).
std::string FormatShare(uint64_t value, uint64_t total);

// A number for SVG coordinates: at most two decimals, no trailing zeros, no exponent.
std::string FormatCoordinate(double value);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_VALUE_FORMAT_H_
