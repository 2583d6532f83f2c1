// Writer -> reader round trips: every value type, tensor bytes and dims, alignment, the file path
// (mmap) and the in-memory path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gguf/gguf_test_files.h"
#include "ops/quant.h"
#include "support/test_support.h"

namespace mkv::test {
namespace {

using ::testing::HasSubstr;

class GgufRoundTrip : public ::testing::TestWithParam<uint32_t> {};

void expect_same_as_written(const GgufFile& file, uint32_t alignment) {
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), alignment);
  EXPECT_EQ(file.data_offset() % alignment, 0u);

  // Metadata in insertion order (small_writer calls set_alignment first).
  std::vector<std::string> keys;
  for (const auto& [key, value] : file.metadata()) keys.push_back(key);
  EXPECT_THAT(keys, ::testing::ElementsAre("general.alignment", "general.architecture", "u8", "i8",
                                           "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64",
                                           "flag", "tokens", "scores", "types", "bools", "u8s",
                                           "f64s", "empty", "nested"));
  EXPECT_EQ(file.find("u8")->type, GgufValueType::UINT8);
  EXPECT_EQ(file.get_int("u8"), 200);
  EXPECT_EQ(file.find("i8")->type, GgufValueType::INT8);
  EXPECT_EQ(file.get_int("i8"), -100);
  EXPECT_EQ(file.get_int("u16"), 60000);
  EXPECT_EQ(file.get_int("i16"), -30000);
  EXPECT_EQ(file.get_int("u32"), 4000000000);
  EXPECT_EQ(file.get_int("i32"), -2000000000);
  EXPECT_EQ(std::get<uint64_t>(file.find("u64")->data), 18000000000000000000ull);
  EXPECT_EQ(file.get_int("i64"), -9000000000000000000);
  EXPECT_EQ(file.find("f32")->type, GgufValueType::FLOAT32);
  EXPECT_EQ(file.get_float("f32"), 0.15625);
  EXPECT_EQ(file.find("f64")->type, GgufValueType::FLOAT64);
  EXPECT_EQ(file.get_float("f64"), 1e-300);
  EXPECT_EQ(file.get_bool_opt("flag"), true);
  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  EXPECT_THAT(file.get_string_array("tokens"),
              ::testing::ElementsAre("a", "", "hello world", std::string("nul\0byte", 8)));
  EXPECT_EQ(file.find("scores")->array_type, GgufValueType::FLOAT32);
  EXPECT_THAT(file.get_float_array("scores"), ::testing::ElementsAre(0.5, -1.25, 3e8));
  EXPECT_THAT(file.get_int_array("types"), ::testing::ElementsAre(1, -2, 3));
  EXPECT_EQ(std::get<std::vector<bool>>(file.find("bools")->data),
            (std::vector<bool>{true, false, true}));
  EXPECT_THAT(file.get_int_array("u8s"), ::testing::ElementsAre(0, 255));
  EXPECT_THAT(file.get_float_array("f64s"), ::testing::ElementsAre(1.0 / 3));
  EXPECT_EQ(file.find("empty")->array_type, GgufValueType::UINT64);
  EXPECT_TRUE(file.get_int_array("empty").empty());
  EXPECT_TRUE(same_value(*file.find("nested"), small_nested_value()));

  // Tensors keep type, dims and bytes; each starts aligned; the last one ends at EOF.
  ASSERT_EQ(file.tensors().size(), 3u);
  const struct {
    const char* name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::size_t nbytes;
    uint8_t seed;
  } expected[] = {{"f32", GgmlType::F32, {8, 3}, 96, 1},
                  {"f16", GgmlType::F16, {16, 2}, 64, 2},
                  {"q8_0", GgmlType::Q8_0, {64, 2}, 136, 3}};
  for (std::size_t i = 0; i < 3; ++i) {
    const GgufTensorInfo& t = file.tensors()[i];
    EXPECT_EQ(t.name, expected[i].name);
    EXPECT_EQ(t.type, expected[i].type) << t.name;
    EXPECT_EQ(t.dims, expected[i].dims) << t.name;
    ASSERT_EQ(t.nbytes, expected[i].nbytes) << t.name;
    EXPECT_EQ(t.offset % alignment, 0u) << t.name;
    EXPECT_EQ(t.data, file.tensors()[0].data + t.offset) << t.name;
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.nbytes),
              patterned_bytes(t.nbytes, expected[i].seed));
  }
  EXPECT_EQ(file.tensor("q8_0").rows(), 2);
  EXPECT_EQ(file.tensor("f32").n_elements(), 24);
  const GgufTensorInfo& last = file.tensors().back();
  EXPECT_EQ(file.data_offset() + last.offset + last.nbytes, file.file_size());
}

TEST_P(GgufRoundTrip, InMemoryKeepsEveryValueAndTensor) {
  const GgufFile file = GgufFile::from_bytes(small_writer(GetParam()).to_bytes(), "mem.gguf");
  expect_same_as_written(file, GetParam());
}

TEST_P(GgufRoundTrip, ThroughAFileKeepsEveryValueAndTensor) {
  const auto path = (temp_dir() / "small.gguf").string();
  small_writer(GetParam()).write(path);
  const GgufFile file = GgufFile::open(path);
  EXPECT_EQ(file.path(), path);
  expect_same_as_written(file, GetParam());
}

TEST_P(GgufRoundTrip, ReadIntoMemoryKeepsEveryValueAndTensor) {
  const auto path = (temp_dir() / "small.gguf").string();
  small_writer(GetParam()).write(path);
  const GgufFile file = GgufFile::open(path, GgufFile::Load::Read);
  expect_same_as_written(file, GetParam());
  // The copy starts on a 2 MiB boundary, so every tensor keeps the file's alignment in memory.
  for (const auto& t : file.tensors()) EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % GetParam(), 0u) << t.name;
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufRoundTrip, ::testing::Values(32u, 64u));

TEST(GgufWriter, SettingAKeyTwiceKeepsTheFirstPositionAndTheLastValue) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "again");
  const GgufFile file = GgufFile::from_bytes(w.to_bytes(), "mem");
  ASSERT_EQ(file.metadata().size(), 2u);
  EXPECT_EQ(file.metadata()[0].first, "a");
  EXPECT_EQ(file.get_string("a"), "again");
  EXPECT_EQ(file.alignment(), 32u);  // the default, without a general.alignment key
}

TEST(GgufWriter, EncodesF32SourcesWithTheQuantiser) {
  std::vector<float> values(64 * 3);  // (rows 3, ne0 64)
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.37f * i) * 2.0f;
  GgufWriter w;
  w.add_tensor_f32("exact", GgmlType::F32, {64, 3}, values);
  w.add_tensor_f32("q8", GgmlType::Q8_0, {64, 3}, values);
  const GgufFile file = GgufFile::from_bytes(w.to_bytes(), "mem");

  const GgufTensorInfo& exact = file.tensor("exact");
  EXPECT_EQ(std::memcmp(exact.data, values.data(), values.size() * sizeof(float)), 0);
  const GgufTensorInfo& q8 = file.tensor("q8");
  ASSERT_EQ(q8.nbytes, 3 * ggml_row_bytes(GgmlType::Q8_0, 64));
  std::vector<float> decoded(values.size());
  dequantize_row(GgmlType::Q8_0, q8.data, decoded.data(), static_cast<int64_t>(decoded.size()));
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(decoded[i], values[i], 2.0 / 127) << i;
}

TEST(GgufWriter, RejectsBadTensorsAndValues) {
  GgufWriter w;
  EXPECT_THAT(error_of([&] {
                w.add_tensor("t", GgmlType::Q8_0, {64, 2}, std::vector<uint8_t>(135));
              }),
              HasSubstr("tensor 't' (Q8_0 [64, 2]) needs 136 bytes, got 135"));
  EXPECT_THAT(error_of([&] { w.add_tensor("t", GgmlType::Q4_0, {48}, std::vector<uint8_t>(18)); }),
              HasSubstr("ne0 = 48 is not a multiple of the Q4_0 block size 32"));
  EXPECT_THAT(error_of([&] {
                w.add_tensor_f32("t", GgmlType::F32, {4, 2}, std::vector<float>(7));
              }),
              HasSubstr("hold 8 values, got 7"));
  w.add_tensor("t", GgmlType::F32, {2}, std::vector<uint8_t>(8));
  EXPECT_THAT(error_of([&] { w.add_tensor("t", GgmlType::F32, {2}, std::vector<uint8_t>(8)); }),
              HasSubstr("tensor 't' added twice"));
  EXPECT_THAT(error_of([&] { w.set_alignment(48); }),
              HasSubstr("alignment 48 is not a nonzero power of two"));

  w.set("small", scalar_value(GgufValueType::UINT8, uint64_t{300}));
  EXPECT_THAT(error_of([&] { w.to_bytes(); }), HasSubstr("key 'small': value 300 is out of range"));
  w.set("small", scalar_value(GgufValueType::STRING, uint64_t{3}));
  EXPECT_THAT(error_of([&] { w.to_bytes(); }),
              HasSubstr("key 'small': a string value does not hold matching data"));
}

}  // namespace
}  // namespace mkv::test
