#include "leakcheck/profile/markup_escape.h"

#include <cstdint>

#include "format/json_string.h"

namespace stackwalk::profile {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// XML 1.0 section 2.2 (Char) leaves out the controls but tab, newline and carriage return, and
// U+FFFE and U+FFFF; newline and carriage return are left out here too (a name is one line).
bool AllowedInXml(const std::string& s, size_t i, size_t length) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  if (length == 1) return byte(0) == '\t' || (byte(0) >= 0x20 && byte(0) != 0x7F);
  return !(length == 3 && byte(0) == 0xEF && byte(1) == 0xBF && byte(2) >= 0xBE);
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  const std::string s(text);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    // The one UTF-8 well-formedness check (RFC 3629), shared with the JSON writer.
    const size_t length = internal::Utf8SequenceLength(s, i);
    if (length == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (AllowedInXml(s, i, length)) {
      out.append(s, i, length);
    } else {
      out += kReplacement;
    }
    i += length;
  }
  return out;
}

std::string MarkupEscape(std::string_view text) {
  const std::string valid = ValidUtf8(text);
  std::string out;
  out.reserve(valid.size() + valid.size() / 8);
  for (const char c : valid) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string_view Utf8Prefix(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<uint8_t>(text[i]) & 0xC0) == 0x80) continue;  // a continuation byte
    if (chars == max_chars) return text.substr(0, i);
    ++chars;
  }
  return text;
}

size_t Utf8Length(std::string_view text) {
  size_t chars = 0;
  for (const char c : text) {
    if ((static_cast<uint8_t>(c) & 0xC0) != 0x80) ++chars;
  }
  return chars;
}

}  // namespace stackwalk::profile
