#include "gguf/gguf_test_files.h"

#include <bit>

namespace mkv::test {

GgufValue scalar_value(GgufValueType type, decltype(GgufValue::data) data) {
  GgufValue v;
  v.type = type;
  v.data = std::move(data);
  return v;
}

GgufValue nested_array_value(std::vector<GgufValue> inner_arrays) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.array_type = GgufValueType::ARRAY;
  v.array_size = inner_arrays.size();
  v.elements = std::move(inner_arrays);
  return v;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type || a.data != b.data || a.elements.size() != b.elements.size()) return false;
  if (a.type == GgufValueType::ARRAY &&
      (a.array_type != b.array_type || a.array_size != b.array_size))
    return false;
  for (std::size_t i = 0; i < a.elements.size(); ++i)
    if (!same_value(a.elements[i], b.elements[i])) return false;
  return true;
}

std::vector<uint8_t> patterned_bytes(std::size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

GgufValue small_nested_value() {
  using T = GgufValueType;
  return nested_array_value({array_value(T::INT16, std::vector<int64_t>{-1, 2}),
                             array_value(T::STRING, std::vector<std::string>{"x"}),
                             nested_array_value({array_value(T::BOOL, std::vector<bool>{false})})});
}

GgufWriter small_writer(uint32_t alignment) {
  using T = GgufValueType;
  GgufWriter w;
  w.set_alignment(alignment);
  w.set_string("general.architecture", "llama");
  w.set("u8", scalar_value(T::UINT8, uint64_t{200}));
  w.set("i8", scalar_value(T::INT8, int64_t{-100}));
  w.set("u16", scalar_value(T::UINT16, uint64_t{60000}));
  w.set("i16", scalar_value(T::INT16, int64_t{-30000}));
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_u64("u64", 18000000000000000000ull);
  w.set("i64", scalar_value(T::INT64, int64_t{-9000000000000000000}));
  w.set_f32("f32", 0.15625f);
  w.set("f64", scalar_value(T::FLOAT64, 1e-300));
  w.set_bool("flag", true);
  w.set_string_array("tokens", {"a", "", "hello world", std::string("nul\0byte", 8)});
  w.set_f32_array("scores", {0.5f, -1.25f, 3e8f});
  w.set_i32_array("types", {1, -2, 3});
  w.set("bools", array_value(T::BOOL, std::vector<bool>{true, false, true}));
  w.set("u8s", array_value(T::UINT8, std::vector<uint64_t>{0, 255}));
  w.set("f64s", array_value(T::FLOAT64, std::vector<double>{1.0 / 3}));
  w.set("empty", array_value(T::UINT64, std::vector<uint64_t>{}));
  w.set("nested", small_nested_value());
  w.add_tensor("f32", GgmlType::F32, {8, 3}, patterned_bytes(8 * 3 * 4, 1));
  w.add_tensor("f16", GgmlType::F16, {16, 2}, patterned_bytes(16 * 2 * 2, 2));
  w.add_tensor("q8_0", GgmlType::Q8_0, {64, 2}, patterned_bytes(2 * 2 * 34, 3));
  return w;
}

std::string parse_error(std::vector<uint8_t> bytes, std::string name) {
  return error_of([&] { GgufFile::from_bytes(std::move(bytes), std::move(name)); });
}

uint64_t touch_everything(const GgufFile& file) {
  uint64_t checksum = file.version() + file.alignment() + file.data_offset();
  for (const auto& entry : file.metadata()) {
    // Not a structured binding: clang 14 lambdas cannot capture those.
    const std::string& key = entry.first;
    const auto swallow = [&](auto&& get) {
      try {
        get();
      } catch (const MkvError&) {
      }
    };
    swallow([&] { checksum += file.get_int_opt(key).value_or(0); });
    swallow([&] { checksum += std::bit_cast<uint64_t>(file.get_float_opt(key).value_or(0)); });
    swallow([&] { checksum += file.get_bool_opt(key).value_or(false); });
    swallow([&] { checksum += file.get_string_opt(key).value_or("").size(); });
    swallow([&] { checksum += file.get_string_array(key).size(); });
    swallow([&] { checksum += file.get_int_array(key).size(); });
    swallow([&] { checksum += file.get_float_array(key).size(); });
    checksum += entry.second.elements.size();
  }
  for (const GgufTensorInfo& t : file.tensors()) {
    checksum += static_cast<uint64_t>(t.n_elements() + t.rows());
    for (std::size_t i = 0; i < t.nbytes; ++i) checksum += t.data[i];
  }
  return checksum;
}

}  // namespace mkv::test
