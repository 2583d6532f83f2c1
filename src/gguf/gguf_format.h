// GGUF on-disk format facts shared by the reader and the writer (internal to src/gguf).
//
// Layout (all little-endian):
//   u32 magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//   kv_count  x { string key | u32 value_type | value }
//   tensor_count x { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset }
//   zero padding up to a multiple of the alignment, then the tensor data section
// where string = u64 length + bytes (no terminator) and array = u32 element_type + u64 count +
// elements. Tensor offsets are relative to the data section and multiples of the alignment.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "gguf/gguf_file.h"

namespace mkv::gguf_format {

static_assert(std::endian::native == std::endian::little, "GGUF I/O assumes a little-endian host");

inline constexpr uint32_t kMagic = 0x46554747;  // the bytes "GGUF" read as a little-endian u32
inline constexpr uint32_t kWriteVersion = 3;
inline constexpr std::size_t kDefaultAlignment = 32;
inline constexpr const char* kAlignmentKey = "general.alignment";
inline constexpr uint32_t kMaxDims = 4;
inline constexpr int kMaxArrayNesting = 8;  // bounds reader recursion on hostile files
inline constexpr uint32_t kLastValueType = static_cast<uint32_t>(GgufValueType::FLOAT64);

// n rounded up to a multiple of `alignment` (a power of two, at most 2^31; n a file offset).
inline std::size_t align_up(std::size_t n, std::size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// Smallest encoding of one value of `type`: lets the reader reject a count that cannot fit in the
// bytes left before it allocates anything.
std::size_t min_encoded_size(GgufValueType type);

bool is_unsigned_int(GgufValueType type);
bool is_signed_int(GgufValueType type);
inline bool is_int(GgufValueType type) { return is_unsigned_int(type) || is_signed_int(type); }
inline bool is_float(GgufValueType type) {
  return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64;
}
inline bool is_number(GgufValueType type) { return is_int(type) || is_float(type); }

// "uint32", "array of string", ... for messages.
std::string describe_type(const GgufValue& value);

// Calls f(T{}) with the C++ type of a numeric (integer or float) value type; false otherwise.
template <typename F>
bool with_number_type(GgufValueType type, F&& f) {
  switch (type) {
    case GgufValueType::UINT8: f(uint8_t{}); return true;
    case GgufValueType::INT8: f(int8_t{}); return true;
    case GgufValueType::UINT16: f(uint16_t{}); return true;
    case GgufValueType::INT16: f(int16_t{}); return true;
    case GgufValueType::UINT32: f(uint32_t{}); return true;
    case GgufValueType::INT32: f(int32_t{}); return true;
    case GgufValueType::UINT64: f(uint64_t{}); return true;
    case GgufValueType::INT64: f(int64_t{}); return true;
    case GgufValueType::FLOAT32: f(float{}); return true;
    case GgufValueType::FLOAT64: f(double{}); return true;
    default: return false;
  }
}

// The in-memory storage type of a numeric on-disk type (see GgufValue).
template <typename T>
using NumberStorage =
    std::conditional_t<std::is_floating_point_v<T>, double,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// Size of a tensor from its type and dims (ggml order), or the reason it has none: more than
// kMaxDims dims, a negative dim, ne0 not a multiple of the block size, or an overflowing count.
struct TensorSize {
  std::size_t nbytes = 0;
  std::string problem;  // empty when the shape is valid
};
TensorSize tensor_size(GgmlType type, std::span<const int64_t> dims);

}  // namespace mkv::gguf_format
