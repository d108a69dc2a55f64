// JsonString(): a string as a JSON string literal, for the symbolizer's, the tool's and the leak
// checker's JSON output.
#ifndef STACKWALK_SRC_FORMAT_JSON_STRING_H_
#define STACKWALK_SRC_FORMAT_JSON_STRING_H_

#include <string>

namespace stackwalk::internal {

// A JSON string literal for `s`.
inline std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 15];
      out += kHex[c & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FORMAT_JSON_STRING_H_
