// GGUF reader (versions 2 and 3): memory-maps a file (or owns an in-memory image), parses and
// validates the whole header eagerly, and exposes metadata and tensors.
//
// Every offset and size is bounds-checked before use. Any malformed input throws MkvError whose
// message names the file, the key or tensor, the problem and, where it applies, the byte offset:
//   "m.gguf: header: unsupported GGUF version 4 (expected 2 or 3) at byte 4"
//   "m.gguf: key #7 'llama.block_count': truncated while reading the value (needs 4 bytes, 2 left)
//    at byte 1234"
//   "m.gguf: tensor #3 'blk.0.attn_q.weight': data [14176, 30560) lies outside the file (20000 bytes)"
// It never crashes, reads out of bounds or allocates unbounded memory on hostile input (counts are
// checked against the bytes remaining before anything is allocated for them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ops/ggml_type.h"

namespace mkv {

enum class GgufValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
std::string_view gguf_value_type_name(GgufValueType type);

// One metadata value. Scalars keep their exact on-disk type; arrays are stored typed by their
// element kind (unsigned integer kinds widen to uint64 storage, signed ones to int64, floats to
// double). Nested arrays (arrays of arrays) keep `data` empty and hold one GgufValue of type ARRAY
// per element in `elements`.
struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  GgufValueType array_type = GgufValueType::UINT8;  // element type when type == ARRAY
  std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string,  //
               std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
               std::vector<bool>, std::vector<uint64_t>>
      data;
  uint64_t array_size = 0;  // element count when type == ARRAY
  std::vector<GgufValue> elements;  // the inner arrays when type == ARRAY and array_type == ARRAY
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;  // ggml order: dims[0] = ne0 (innermost, contiguous)
  uint64_t offset = 0;        // relative to the start of the tensor data section
  std::size_t nbytes = 0;     // exact size implied by type and dims
  const uint8_t* data = nullptr;  // points into the mapping; valid while the GgufFile lives
  int64_t n_elements() const;
  int64_t rows() const;  // product of dims[1..]; 1 for a vector
};

class GgufFile {
 public:
  // How the image reaches memory. Mmap (the default) shares the page cache and loads lazily;
  // Read copies the file into anonymous memory with transparent huge pages requested (2 MiB
  // pages: one TLB entry and no 4 KiB prefetch stop per 2 MiB of weights), at the cost of a
  // private copy and an up-front read (llama.cpp's --no-mmap).
  enum class Load { Mmap, Read };
  // Opens and validates a file; throws MkvError naming the path on any problem.
  static GgufFile open(const std::string& path, Load load = Load::Mmap);
  // Parses an in-memory image (tests, fuzzing); `name` stands in for the path in messages.
  static GgufFile from_bytes(std::vector<uint8_t> bytes, std::string name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const;
  uint32_t version() const;
  std::size_t alignment() const;   // general.alignment or 32
  std::size_t data_offset() const; // byte offset of the tensor data section
  std::size_t file_size() const;
  // The file's bytes as loaded: the mapping, or the copy read with --no-mmap.
  std::span<const uint8_t> image() const;

  // ---- metadata (keys in file order) ----
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const;
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters. The *_opt forms return nullopt when the key is absent and throw when it is
  // present with an incompatible type; the plain forms also throw "missing required key".
  // Integers accept any integer type (range-checked), floats accept FLOAT32/FLOAT64 and integers.
  std::optional<int64_t> get_int_opt(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  std::optional<double> get_float_opt(std::string_view key) const;
  double get_float(std::string_view key) const;
  std::optional<bool> get_bool_opt(std::string_view key) const;
  std::optional<std::string> get_string_opt(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  // Arrays; the required forms throw when absent or when the element type does not fit.
  const std::vector<std::string>& get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;

  // ---- tensors (file order) ----
  const std::vector<GgufTensorInfo>& tensors() const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  const GgufTensorInfo& tensor(std::string_view name) const;  // throws "missing required tensor"

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mkv
