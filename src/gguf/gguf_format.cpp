#include "gguf/gguf_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace mkv {

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "unknown";
}

namespace gguf_format {

std::size_t min_encoded_size(GgufValueType type) {
  std::size_t size = 0;
  if (with_number_type(type, [&](auto tag) { size = sizeof(tag); })) return size;
  switch (type) {
    case GgufValueType::BOOL: return 1;
    case GgufValueType::STRING: return sizeof(uint64_t);                    // length only
    case GgufValueType::ARRAY: return sizeof(uint32_t) + sizeof(uint64_t);  // type + count
    default: return 1;
  }
}

bool is_unsigned_int(GgufValueType type) {
  return type == GgufValueType::UINT8 || type == GgufValueType::UINT16 ||
         type == GgufValueType::UINT32 || type == GgufValueType::UINT64;
}

bool is_signed_int(GgufValueType type) {
  return type == GgufValueType::INT8 || type == GgufValueType::INT16 ||
         type == GgufValueType::INT32 || type == GgufValueType::INT64;
}

std::string describe_type(const GgufValue& value) {
  if (value.type != GgufValueType::ARRAY) return std::string(gguf_value_type_name(value.type));
  return fmt::format("array of {}", gguf_value_type_name(value.array_type));
}

TensorSize tensor_size(GgmlType type, std::span<const int64_t> dims) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (dims.size() > kMaxDims)
    return {0, fmt::format("has {} dimensions (at most {})", dims.size(), kMaxDims)};
  int64_t n_elements = 1;
  for (int64_t d : dims) {
    if (d < 0) return {0, fmt::format("has a negative dimension in {}", dims)};
    if (d != 0 && n_elements > std::numeric_limits<int64_t>::max() / d)
      return {0, fmt::format("element count of dims {} overflows int64", dims)};
    n_elements *= d;
  }
  const int64_t ne0 = dims.empty() ? 1 : dims[0];
  if (ne0 % info.block_size != 0)
    return {0, fmt::format("ne0 = {} is not a multiple of the {} block size {}", ne0, info.name,
                           info.block_size)};
  // n_elements is a multiple of the block size too, so the byte count is exact.
  const uint64_t blocks = static_cast<uint64_t>(n_elements / info.block_size);
  if (blocks > std::numeric_limits<std::size_t>::max() / info.block_bytes)
    return {0, fmt::format("byte size of dims {} overflows", dims)};
  return {blocks * info.block_bytes, {}};
}

}  // namespace gguf_format
}  // namespace mkv
