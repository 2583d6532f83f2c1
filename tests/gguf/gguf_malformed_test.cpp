// Targeted malformed images (built byte by byte with RawGguf): each error message must name the
// file, the key or tensor, the problem and, where it applies, the byte offset.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "gguf/gguf_test_files.h"
#include "support/test_support.h"

namespace mkv::test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint32_t kF32 = 0, kQ8_0 = 8;
constexpr uint32_t kTypeString = 8, kTypeArray = 9, kTypeBool = 7;

// One key and one tensor "t" (type id, dims, offset as given), then the padding and `data_bytes`
// bytes of tensor data.
std::vector<uint8_t> one_tensor_file(uint32_t type_id, std::vector<uint64_t> dims, uint64_t offset,
                                     std::size_t data_bytes = 128) {
  RawGguf g;
  g.header(3, 1, 1)
      .kv_string("general.architecture", "llama")
      .tensor_info("t", dims, type_id, offset);
  return g.pad_to(32).zeros(data_bytes).bytes;
}

TEST(GgufMalformed, WellFormedBaseImageParses) {
  const GgufFile file = GgufFile::from_bytes(one_tensor_file(kF32, {32}, 0), "base.gguf");
  EXPECT_EQ(file.tensor("t").nbytes, 128u);
  EXPECT_EQ(file.data_offset() + 128, file.file_size());
}

TEST(GgufMalformed, BadMagic) {
  std::vector<uint8_t> bytes = one_tensor_file(kF32, {32}, 0);
  bytes[0] = 'X';
  EXPECT_THAT(parse_error(bytes, "model.bin"),
              AllOf(HasSubstr("model.bin"), HasSubstr("bad magic 'XGUF'"), HasSubstr("at byte 0")));
}

TEST(GgufMalformed, EmptyImageIsTruncated) {
  EXPECT_THAT(parse_error({}),
              AllOf(HasSubstr("test.gguf"), HasSubstr("truncated while reading the magic")));
}

TEST(GgufMalformed, Version1And99) {
  EXPECT_THAT(parse_error(RawGguf().header(1, 0, 0).bytes),
              AllOf(HasSubstr("test.gguf"), HasSubstr("GGUF version 1 is not supported"),
                    HasSubstr("at byte 4")));
  EXPECT_THAT(parse_error(RawGguf().header(99, 0, 0).bytes),
              HasSubstr("unsupported GGUF version 99 (expected 2 or 3)"));
}

TEST(GgufMalformed, Version2IsAccepted) {
  EXPECT_EQ(GgufFile::from_bytes(RawGguf().header(2, 0, 0).bytes, "v2").version(), 2u);
}

TEST(GgufMalformed, TensorOffsetOutOfRange) {
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {32}, 1024)),
              AllOf(HasSubstr("test.gguf"), HasSubstr("tensor #0 't'"),
                    HasSubstr("lies outside the file")));
  // An offset near 2^64 must not wrap around into the file.
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {32}, ~uint64_t{31})),
              HasSubstr("lies outside the file"));
}

// Tensors "a" and "b" of 32 floats (128 bytes) at offsets 0 and `b_offset`, in a 256-byte data section.
std::vector<uint8_t> two_tensor_file(uint64_t b_offset) {
  RawGguf g;
  g.header(3, 2, 1)
      .kv_string("general.architecture", "llama")
      .tensor_info("a", {32}, kF32, 0)
      .tensor_info("b", {32}, kF32, b_offset);
  return g.pad_to(32).zeros(256).bytes;
}

TEST(GgufMalformed, OverlappingTensors) {
  EXPECT_EQ(GgufFile::from_bytes(two_tensor_file(128), "apart.gguf").tensor("b").offset, 128u);
  for (uint64_t b_offset : {0u, 32u, 96u})
    EXPECT_THAT(parse_error(two_tensor_file(b_offset)),
                AllOf(HasSubstr("test.gguf"), HasSubstr("tensor #0 'a' (data [0, 128)) overlaps tensor #1 'b'"),
                      HasSubstr(fmt::format("data from {}", b_offset))));
}

TEST(GgufMalformed, MisalignedTensorOffset) {
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {8}, 4)),
              AllOf(HasSubstr("tensor #0 't'"),
                    HasSubstr("data offset 4 is not a multiple of the alignment 32")));
}

TEST(GgufMalformed, UnknownTensorType) {
  EXPECT_THAT(parse_error(one_tensor_file(99, {32}, 0)),
              AllOf(HasSubstr("tensor #0 't'"), HasSubstr("unknown ggml type id 99"),
                    HasSubstr("at byte")));
}

TEST(GgufMalformed, Ne0NotABlockMultiple) {
  EXPECT_THAT(parse_error(one_tensor_file(kQ8_0, {33, 2}, 0)),
              AllOf(HasSubstr("tensor #0 't'"),
                    HasSubstr("ne0 = 33 is not a multiple of the Q8_0 block size 32")));
}

TEST(GgufMalformed, ShapesThatCannotExist) {
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {1, 1, 1, 1, 1}, 0)),
              HasSubstr("has 5 dimensions (at most 4)"));
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {1ull << 40, 1ull << 40}, 0)),
              HasSubstr("overflows int64"));
  EXPECT_THAT(parse_error(one_tensor_file(kF32, {1ull << 63}, 0)), HasSubstr("does not fit int64"));
}

TEST(GgufMalformed, HugeCountsAreRefusedBeforeAllocating) {
  const uint64_t huge = 1ull << 60;
  RawGguf array;
  array.header(3, 0, 1).str("big").u32(kTypeArray).u32(kTypeString).u64(huge);
  EXPECT_THAT(parse_error(array.bytes),
              AllOf(HasSubstr("key #0 'big'"),
                    HasSubstr("array element count 1152921504606846976 cannot fit")));

  RawGguf string;
  string.header(3, 0, 1).str("long").u32(kTypeString).u64(huge).zeros(16);
  EXPECT_THAT(parse_error(string.bytes),
              AllOf(HasSubstr("key #0 'long'"), HasSubstr("truncated while reading the value"),
                    HasSubstr("at byte")));

  EXPECT_THAT(parse_error(RawGguf().header(3, 0, huge).bytes),
              HasSubstr("key-value count 1152921504606846976 cannot fit"));
  EXPECT_THAT(parse_error(RawGguf().header(3, huge, 0).bytes),
              HasSubstr("tensor count 1152921504606846976 cannot fit"));
  RawGguf key;
  key.header(3, 0, 1).u64(huge).zeros(16);
  EXPECT_THAT(parse_error(key.bytes),
              AllOf(HasSubstr("key #0"), HasSubstr("truncated while reading the key")));
}

TEST(GgufMalformed, DuplicateKeyAndTensor) {
  RawGguf keys;
  keys.header(3, 0, 2).kv_u32("a", 1).kv_u32("a", 2);
  EXPECT_THAT(parse_error(keys.bytes),
              AllOf(HasSubstr("key #1 'a'"), HasSubstr("duplicate key (first seen as key #0)")));

  RawGguf tensors;
  tensors.header(3, 2, 0)
      .tensor_info("t", {8}, kF32, 0)
      .tensor_info("t", {8}, kF32, 32)
      .pad_to(32)
      .zeros(64);
  EXPECT_THAT(parse_error(tensors.bytes),
              AllOf(HasSubstr("tensor #1 't'"), HasSubstr("duplicate tensor name")));
}

TEST(GgufMalformed, BadAlignmentValues) {
  for (uint32_t alignment : {0u, 3u, 48u}) {
    RawGguf g;
    g.header(3, 0, 1).kv_u32("general.alignment", alignment);
    EXPECT_THAT(parse_error(g.bytes),
                AllOf(HasSubstr("'general.alignment' = " + std::to_string(alignment)),
                      HasSubstr("is not a valid alignment")));
  }
  RawGguf wrong_type;
  wrong_type.header(3, 0, 1).kv_string("general.alignment", "32");
  EXPECT_THAT(parse_error(wrong_type.bytes),
              HasSubstr("'general.alignment' has type string, expected uint32"));
}

TEST(GgufMalformed, BadValueEncodings) {
  RawGguf type;
  type.header(3, 0, 1).str("k").u32(13).u32(0);
  EXPECT_THAT(parse_error(type.bytes),
              AllOf(HasSubstr("key #0 'k'"), HasSubstr("unknown value type id 13")));

  RawGguf boolean;
  boolean.header(3, 0, 1).str("b").u32(kTypeBool).put<uint8_t>(2);
  EXPECT_THAT(parse_error(boolean.bytes), HasSubstr("bool byte is 2 (expected 0 or 1)"));

  RawGguf deep;  // an array of arrays of ... nested 9 levels
  deep.header(3, 0, 1).str("deep").u32(kTypeArray);
  for (int level = 0; level < 9; ++level) deep.u32(kTypeArray).u64(1);
  deep.zeros(64);
  EXPECT_THAT(parse_error(deep.bytes), HasSubstr("arrays nested deeper than 8 levels"));
}

TEST(GgufMalformed, OpenNamesThePath) {
  const auto dir = temp_dir();
  const std::string missing = (dir / "missing.gguf").string();
  EXPECT_THAT(error_of([&] { GgufFile::open(missing); }),
              AllOf(HasSubstr(missing), HasSubstr("cannot open")));
  EXPECT_THAT(error_of([&] { GgufFile::open(dir.string()); }), HasSubstr("not a regular file"));
  const std::string empty = (dir / "empty.gguf").string();
  std::ofstream(empty).close();
  EXPECT_THAT(error_of([&] { GgufFile::open(empty); }),
              AllOf(HasSubstr(empty), HasSubstr("truncated while reading the magic")));
  // Reading into memory fails the same ways.
  EXPECT_THAT(error_of([&] { GgufFile::open(missing, GgufFile::Load::Read); }),
              AllOf(HasSubstr(missing), HasSubstr("cannot open")));
  EXPECT_THAT(error_of([&] { GgufFile::open(empty, GgufFile::Load::Read); }),
              AllOf(HasSubstr(empty), HasSubstr("truncated while reading the magic")));
  const std::string cut = (dir / "cut.gguf").string();
  std::ofstream(cut, std::ios::binary) << "GGUF\x03";
  EXPECT_THAT(error_of([&] { GgufFile::open(cut, GgufFile::Load::Read); }), AllOf(HasSubstr(cut), HasSubstr("truncated")));
}

}  // namespace
}  // namespace mkv::test
