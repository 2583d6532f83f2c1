#include "ops/ggml_type.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "core/error.h"

namespace mkv {
namespace {

// Block sizes and byte sizes follow ggml's block structs (ggml-common.h).
constexpr std::array<GgmlTypeInfo, 15> kTypes = {{
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 18, true},
    {GgmlType::Q4_1, "Q4_1", 32, 20, true},
    {GgmlType::Q5_0, "Q5_0", 32, 22, true},
    {GgmlType::Q5_1, "Q5_1", 32, 24, true},
    {GgmlType::Q8_0, "Q8_0", 32, 34, true},
    {GgmlType::Q8_1, "Q8_1", 32, 36, false},
    {GgmlType::Q2_K, "Q2_K", 256, 84, false},
    {GgmlType::Q3_K, "Q3_K", 256, 110, false},
    {GgmlType::Q4_K, "Q4_K", 256, 144, true},
    {GgmlType::Q5_K, "Q5_K", 256, 176, true},
    {GgmlType::Q6_K, "Q6_K", 256, 210, true},
    {GgmlType::Q8_K, "Q8_K", 256, 292, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
}};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t raw_type) {
  for (const auto& info : kTypes)
    if (static_cast<uint32_t>(info.type) == raw_type) return info;
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& info : kTypes)
    if (info.type == type) return info;
  fail("internal error: unknown ggml type {}", static_cast<uint32_t>(type));
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  auto upper = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
    return out;
  };
  const std::string wanted = upper(name);
  for (const auto& info : kTypes)
    if (info.name == wanted) return info.type;
  return std::nullopt;
}

std::size_t ggml_row_bytes(GgmlType type, int64_t n) {
  const auto& info = ggml_type_info(type);
  return static_cast<std::size_t>(n / info.block_size) * info.block_bytes;
}

}  // namespace mkv
