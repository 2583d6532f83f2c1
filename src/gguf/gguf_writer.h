// GGUF v3 writer. Tests use it to build their own tiny models of every architecture and tensor
// type; `momentkv make-model` uses it for random-weight models at real shapes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace mkv {

class GgufWriter {
 public:
  // Metadata; a key set twice keeps the last value (order of first insertion). For arrays the
  // count written is the size of the held vector (array_size is not consulted).
  void set(const std::string& key, GgufValue value);
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, std::string v);
  void set_string_array(const std::string& key, std::vector<std::string> v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);

  void set_alignment(uint32_t alignment);  // writes general.alignment

  // Adds a tensor whose bytes are already encoded in `type` (dims ggml order, ne0 first).
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                  std::vector<uint8_t> bytes);
  // Adds an F32 source tensor encoded to `type` with the reference quantiser of src/ops.
  void add_tensor_f32(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                      const std::vector<float>& values);

  std::vector<uint8_t> to_bytes() const;
  void write(const std::string& path) const;  // throws MkvError on I/O failure

 private:
  // Passes the encoded file to `sink` piece by piece (header, then each tensor's padding and bytes).
  void emit(const std::function<void(std::span<const uint8_t>)>& sink) const;

  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace mkv
