// Parses and validates a whole GGUF image (internal to src/gguf; GgufFile is the public face).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/gguf_file.h"

namespace mkv {

struct GgufHeader {
  uint32_t version = 0;
  std::size_t alignment = 0;
  std::size_t data_offset = 0;                              // first byte of the tensor data section
  std::vector<std::pair<std::string, GgufValue>> metadata;  // file order
  std::vector<GgufTensorInfo> tensors;                      // file order, data pointers set
  // Name -> index into metadata / tensors. The keys view the parsed bytes, so the maps are valid
  // while those bytes live (GgufFile keeps both together).
  std::unordered_map<std::string_view, std::size_t> key_index;
  std::unordered_map<std::string_view, std::size_t> tensor_index;
};

// Throws MkvError naming `name`, the key or tensor, the byte offset and the problem.
GgufHeader parse_gguf(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace mkv
