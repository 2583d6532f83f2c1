// The ggml tensor types that GGUF files store, with their block layout.
// Values are the on-disk ids (GGUF tensor info "type").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mkv {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as llama.cpp prints it: "F32", "Q4_K", ...
  int block_size;         // values per block (1 for F32/F16/BF16)
  std::size_t block_bytes;
  bool computable;        // dequantisation and matmul implemented by src/ops
};

// Info for a raw type id read from a file; nullopt for ids this engine does not know.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t raw_type);
const GgmlTypeInfo& ggml_type_info(GgmlType type);
std::optional<GgmlType> ggml_type_from_name(std::string_view name);  // case-insensitive

// Bytes of one row of n values; n must be a multiple of the block size (checked by callers).
std::size_t ggml_row_bytes(GgmlType type, int64_t n);

}  // namespace mkv
