// Typed getters: conversions they allow, and messages for missing keys/tensors and wrong types.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_test_files.h"

namespace mkv::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class GgufGetters : public ::testing::Test {
 protected:
  GgufFile file = GgufFile::from_bytes(small_writer().to_bytes(), "small.gguf");
};

TEST_F(GgufGetters, OptionalFormsReturnNulloptForAbsentKeys) {
  EXPECT_EQ(file.get_int_opt("nope"), std::nullopt);
  EXPECT_EQ(file.get_float_opt("nope"), std::nullopt);
  EXPECT_EQ(file.get_bool_opt("nope"), std::nullopt);
  EXPECT_EQ(file.get_string_opt("nope"), std::nullopt);
  EXPECT_FALSE(file.has("nope"));
  EXPECT_EQ(file.find_tensor("nope"), nullptr);
}

TEST_F(GgufGetters, AllowedConversions) {
  EXPECT_EQ(file.get_float("u16"), 60000.0);  // integer read as float
  EXPECT_THAT(file.get_float_array("types"), ::testing::ElementsAre(1.0, -2.0, 3.0));
  EXPECT_EQ(file.get_int("general.alignment"), 32);
}

TEST_F(GgufGetters, MissingRequiredKeyAndTensor) {
  EXPECT_THAT(
      error_of([&] { file.get_int("llama.block_count"); }),
      AllOf(HasSubstr("small.gguf"), HasSubstr("missing required key 'llama.block_count'")));
  EXPECT_THAT(error_of([&] { file.get_string("tokenizer.ggml.model"); }),
              HasSubstr("missing required key 'tokenizer.ggml.model'"));
  EXPECT_THAT(error_of([&] { file.get_string_array("tokenizer.ggml.merges"); }),
              HasSubstr("missing required key 'tokenizer.ggml.merges'"));
  EXPECT_THAT(error_of([&] { file.tensor("output.weight"); }),
              AllOf(HasSubstr("small.gguf"), HasSubstr("missing required tensor 'output.weight'")));
}

TEST_F(GgufGetters, WrongTypes) {
  EXPECT_THAT(error_of([&] { file.get_int("general.architecture"); }),
              AllOf(HasSubstr("small.gguf"),
                    HasSubstr("key 'general.architecture' has type string, expected an integer")));
  EXPECT_THAT(error_of([&] { file.get_int("f32"); }),
              HasSubstr("key 'f32' has type float32, expected an integer"));
  EXPECT_THAT(error_of([&] { file.get_float("flag"); }),
              HasSubstr("key 'flag' has type bool, expected a float"));
  EXPECT_THAT(error_of([&] { file.get_bool_opt("u8"); }),
              HasSubstr("key 'u8' has type uint8, expected bool"));
  EXPECT_THAT(error_of([&] { file.get_string("u32"); }),
              HasSubstr("key 'u32' has type uint32, expected string"));
  EXPECT_THAT(error_of([&] { file.get_string_array("types"); }),
              HasSubstr("key 'types' has type array of int32, expected array of string"));
  EXPECT_THAT(error_of([&] { file.get_int_array("scores"); }),
              HasSubstr("key 'scores' has type array of float32, expected array of integers"));
  EXPECT_THAT(error_of([&] { file.get_float_array("tokens"); }),
              HasSubstr("key 'tokens' has type array of string, expected array of floats"));
  EXPECT_THAT(error_of([&] { file.get_int_array("nested"); }), HasSubstr("array of array"));
  EXPECT_THAT(error_of([&] { file.get_int("u64"); }),
              HasSubstr("key 'u64' (uint64) = 18000000000000000000 does not fit int64"));
}

}  // namespace
}  // namespace mkv::test
