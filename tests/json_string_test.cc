#include "format/json_string.h"

#include <gtest/gtest.h>

namespace stackwalk::internal {
namespace {

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString(std::string("\n\t\x01\x7f", 4)), "\"\\u000a\\u0009\\u0001\\u007f\"");
}

TEST(JsonString, KeepsWellFormedUtf8) {
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");                  // U+00E9
  EXPECT_EQ(JsonString("\xe2\x82\xac"), "\"\xe2\x82\xac\"");                // U+20AC
  EXPECT_EQ(JsonString("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");        // U+1F600
  EXPECT_EQ(JsonString("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");        // U+10FFFF
}

TEST(JsonString, ReplacesEveryIllFormedByteWithTheReplacementCharacter) {
  EXPECT_EQ(JsonString("a\xff" "b"), "\"a\\ufffdb\"");                        // never a lead byte
  EXPECT_EQ(JsonString("\x80"), "\"\\ufffd\"");                               // stray continuation
  EXPECT_EQ(JsonString("\xc3"), "\"\\ufffd\"");                               // truncated at the end
  EXPECT_EQ(JsonString("\xc3" "A"), "\"\\ufffdA\"");                          // truncated inside
  EXPECT_EQ(JsonString("\xc0\xaf"), "\"\\ufffd\\ufffd\"");                    // overlong '/'
  EXPECT_EQ(JsonString("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");         // overlong, 3 bytes
  EXPECT_EQ(JsonString("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");         // a surrogate
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // > U+10FFFF
  EXPECT_EQ(JsonString("\xf0\x9f\x98"), "\"\\ufffd\\ufffd\\ufffd\"");         // 4-byte, cut short
}

}  // namespace
}  // namespace stackwalk::internal
