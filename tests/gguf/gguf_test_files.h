// Builders of GGUF images for the gguf tests: a hand-rolled byte builder that is independent of
// GgufWriter (so tests can write what the writer refuses), value constructors, and a small valid
// file with every kind of metadata and three tensor types.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace mkv::test {

// Appends little-endian GGUF fields one by one.
class RawGguf {
 public:
  template <typename T>
  RawGguf& put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
    return *this;
  }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // Magic "GGUF", version, tensor count, key-value count.
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  RawGguf& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(GgufValueType::UINT32)).u32(v);
  }
  RawGguf& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(static_cast<uint32_t>(GgufValueType::STRING)).str(v);
  }
  RawGguf& tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type_id,
                       uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type_id).u64(offset);
  }
  RawGguf& zeros(std::size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
  RawGguf& pad_to(std::size_t alignment) {
    return zeros((alignment - bytes.size() % alignment) % alignment);
  }

  std::vector<uint8_t> bytes;
};

// Value constructors (the storage rules of GgufValue: unsigned -> uint64, signed -> int64,
// floats -> double).
GgufValue scalar_value(GgufValueType type, decltype(GgufValue::data) data);
template <typename Stored>
GgufValue array_value(GgufValueType element_type, std::vector<Stored> elements) {
  GgufValue v;
  v.type = GgufValueType::ARRAY;
  v.array_type = element_type;
  v.array_size = elements.size();
  v.data = std::move(elements);
  return v;
}
GgufValue nested_array_value(std::vector<GgufValue> inner_arrays);

// Structural equality of two values (type tags, sizes, data, nested elements).
bool same_value(const GgufValue& a, const GgufValue& b);

// n bytes following a pattern that depends on `seed` (tensor contents that differ per tensor).
std::vector<uint8_t> patterned_bytes(std::size_t n, uint8_t seed);
// [[int16 -1, 2], [string "x"], [[bool false]]]: arrays nested two deep.
GgufValue small_nested_value();

// A writer holding one key of every scalar type, number/bool/string/nested arrays, and three
// tensors (F32 [8,3], F16 [16,2], Q8_0 [64,2]) with patterned_bytes seeded 1, 2, 3.
GgufWriter small_writer(uint32_t alignment = 32);

// Runs `action` expecting MkvError and returns its message (fails the test if nothing is thrown).
template <typename Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const MkvError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected MkvError, but nothing was thrown";
  return "<no error>";
}

// The MkvError message of parsing `bytes` as a file called `name`.
std::string parse_error(std::vector<uint8_t> bytes, std::string name = "test.gguf");

// Reads every metadata value through the getters and every tensor byte; returns a checksum so the
// work is not optimised away. Getter errors (wrong type) are expected and swallowed.
uint64_t touch_everything(const GgufFile& file);

}  // namespace mkv::test
