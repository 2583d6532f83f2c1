// Error messages about hostile GGUF names: NUL and other control bytes are shown escaped (\x00),
// never cut the message, and a bad tensor count names the tensor table, not the last key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_test_files.h"

namespace mkv::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(GgufMessages, NulInAKeyIsEscapedNotTruncated) {
  const std::string key("gen\0eral", 8);
  RawGguf g;
  g.header(3, 0, 2).kv_string(key, "x").kv_string(key, "y");
  EXPECT_THAT(parse_error(g.bytes), AllOf(HasSubstr("key #1 'gen\\x00eral'"), HasSubstr("duplicate key")));
}

TEST(GgufMessages, NulInATensorNameIsEscaped) {
  RawGguf g;
  g.header(3, 1, 0).tensor_info(std::string("t\0x", 3), {32}, 99, 0);
  EXPECT_THAT(parse_error(g.bytes), AllOf(HasSubstr("tensor #0 't\\x00x'"), HasSubstr("unknown ggml type id 99")));
}

TEST(GgufMessages, NulInAStringValueSurvivesInTheMessage) {
  // A message built from a value (as the model loader does) keeps everything after the NUL.
  const MkvError e(fmt::format("unsupported architecture '{}'", std::string("lla\0ma", 6)));
  EXPECT_STREQ(e.what(), "unsupported architecture 'lla\\x00ma'");
}

TEST(GgufMessages, BadTensorCountNamesTheTensorTable) {
  RawGguf g;
  g.header(3, 5, 1).kv_string("general.architecture", "llama");
  EXPECT_THAT(parse_error(g.bytes), AllOf(HasSubstr("tensor table"), HasSubstr("tensor count 5 cannot fit"),
                                          Not(HasSubstr("general.architecture"))));
  RawGguf huge;
  huge.header(3, 1ull << 60, 1).kv_u32("a", 1);
  EXPECT_THAT(parse_error(huge.bytes), AllOf(HasSubstr("tensor table"), Not(HasSubstr("key #0"))));
}

TEST(GgufMessages, LongNamesAreCut) {
  RawGguf g;
  const std::string key(500, 'k');
  g.header(3, 0, 2).kv_u32(key, 1).kv_u32(key, 2);
  const std::string e = parse_error(g.bytes);
  EXPECT_THAT(e, HasSubstr("..."));
  EXPECT_LT(e.size(), 400u);
}

}  // namespace
}  // namespace mkv::test
