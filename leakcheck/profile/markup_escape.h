// Text from programs made safe for SVG and HTML: function names are arbitrary bytes (C++
// templates with < > &, quotes, names from binaries with invalid UTF-8), and every one of them
// reaches a page through these two calls.
#ifndef STACKWALK_LEAKCHECK_PROFILE_MARKUP_ESCAPE_H_
#define STACKWALK_LEAKCHECK_PROFILE_MARKUP_ESCAPE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace stackwalk::profile {

// ValidUtf8(): `text` with every byte that does not start a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF) and every character XML 1.0
// forbids (controls other than tab, and U+FFFE/U+FFFF) replaced by U+FFFD, one per bad byte.
// Newlines and carriage returns become U+FFFD too: a name is one line.
std::string ValidUtf8(std::string_view text);

// MarkupEscape(): ValidUtf8(text) with & < > " ' written as character references, safe in XML
// and HTML text and in attribute values quoted either way.
std::string MarkupEscape(std::string_view text);

// Utf8Prefix(): the longest prefix of the valid UTF-8 `text` with at most `max_chars` code
// points (never cuts a character in two).
std::string_view Utf8Prefix(std::string_view text, size_t max_chars);

// Utf8Length(): the number of code points in the valid UTF-8 `text`.
size_t Utf8Length(std::string_view text);

}  // namespace stackwalk::profile

#endif  // STACKWALK_LEAKCHECK_PROFILE_MARKUP_ESCAPE_H_
