// JsonString(): a string as a JSON string literal, for the parts of the leak report's JSON that
// leakcheck/report_render_json.cc writes as text (its frames, like the symbolizer's and
// stackwalk-symbolize's, are nlohmann-json's: format/frame_json.h).
#ifndef STACKWALK_SRC_FORMAT_JSON_STRING_H_
#define STACKWALK_SRC_FORMAT_JSON_STRING_H_

#include <cstddef>
#include <string>

namespace stackwalk::internal {

// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 if there is none there
// (a stray continuation byte, a truncated, overlong or surrogate sequence, or past U+10FFFF).
inline size_t Utf8SequenceLength(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xbf;  // the bounds of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + length > s.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return length;
}

// A JSON string literal for `s`. Bytes that are not well-formed UTF-8 (a thread name, a path)
// become U+FFFD, so the output is always valid JSON.
inline std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const size_t length = Utf8SequenceLength(s, i);
    if (length == 0) {
      out += "\\ufffd";
      ++i;
    } else if (length > 1) {
      out.append(s, i, length);
      i += length;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
      ++i;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 15];
      out += kHex[c & 15];
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  return out + "\"";
}

}  // namespace stackwalk::internal

#endif  // STACKWALK_SRC_FORMAT_JSON_STRING_H_
