#include "gguf/gguf_writer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "core/error.h"
#include "gguf/gguf_format.h"
#include "ops/quant.h"

namespace mkv {
namespace {

using namespace gguf_format;

// Appends little-endian fields to a byte vector.
class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

  template <typename T>
  void put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(std::size_t alignment) { out_.resize(align_up(out_.size(), alignment), 0); }

 private:
  std::vector<uint8_t>& out_;
};

[[noreturn]] void fail_holds(const GgufValue& value, std::string_view what) {
  fail("GGUF writer: {}: a {} value does not hold matching data", what, describe_type(value));
}

// A stored number (uint64/int64/double, see GgufValue) converted to the on-disk type T; fails when
// it does not fit (or when a float is stored for an integer type).
template <typename T, typename Stored>
T narrow_number(Stored stored, std::string_view what) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto wide = static_cast<double>(stored);
    if (std::isfinite(wide) && std::fabs(wide) > std::numeric_limits<T>::max())
      fail("GGUF writer: {}: value {} does not fit float32", what, wide);
    return static_cast<T>(wide);
  } else if constexpr (std::is_floating_point_v<Stored>) {
    fail("GGUF writer: {}: float value {} stored for an integer type", what, stored);
  } else {
    if (!std::in_range<T>(stored)) fail("GGUF writer: {}: value {} is out of range", what, stored);
    return static_cast<T>(stored);
  }
}

template <typename S>
constexpr bool kIsStoredNumber =
    std::is_same_v<S, uint64_t> || std::is_same_v<S, int64_t> || std::is_same_v<S, double>;

template <typename S>
struct IsStoredNumberVector : std::false_type {};
template <typename S>
struct IsStoredNumberVector<std::vector<S>> : std::bool_constant<kIsStoredNumber<S>> {};

// Number of elements an ARRAY value holds, whichever alternative holds them.
uint64_t array_count(const GgufValue& value, std::string_view what) {
  if (value.array_type == GgufValueType::ARRAY) return value.elements.size();
  return std::visit(
      [&](const auto& stored) -> uint64_t {
        using S = std::decay_t<decltype(stored)>;
        if constexpr (requires { stored.size(); } && !std::is_same_v<S, std::string>)
          return stored.size();
        else
          fail_holds(value, what);
      },
      value.data);
}

// Element type, count, elements. `what` names the value in messages ("key 'x'").
void put_array(ByteWriter& w, const GgufValue& value, std::string_view what) {
  w.put(static_cast<uint32_t>(value.array_type));
  w.put<uint64_t>(array_count(value, what));
  const bool is_number_array = with_number_type(value.array_type, [&](auto tag) {
    using T = decltype(tag);
    std::visit(
        [&](const auto& stored) {
          if constexpr (IsStoredNumberVector<std::decay_t<decltype(stored)>>::value) {
            for (auto x : stored) w.put(narrow_number<T>(x, what));
          } else {
            fail_holds(value, what);
          }
        },
        value.data);
  });
  if (is_number_array) return;
  if (value.array_type == GgufValueType::ARRAY) {
    for (const GgufValue& inner : value.elements) {
      if (inner.type != GgufValueType::ARRAY) fail_holds(value, what);
      put_array(w, inner, what);
    }
  } else if (const auto* bools = std::get_if<std::vector<bool>>(&value.data);
             bools && value.array_type == GgufValueType::BOOL) {
    for (bool b : *bools) w.put<uint8_t>(b ? 1 : 0);
  } else if (const auto* strings = std::get_if<std::vector<std::string>>(&value.data);
             strings && value.array_type == GgufValueType::STRING) {
    for (const std::string& s : *strings) w.put_string(s);
  } else {
    fail_holds(value, what);
  }
}

// The value's bytes (its type tag is written by the caller).
void put_value(ByteWriter& w, const GgufValue& value, std::string_view what) {
  const bool is_number = with_number_type(value.type, [&](auto tag) {
    using T = decltype(tag);
    std::visit(
        [&](const auto& stored) {
          if constexpr (kIsStoredNumber<std::decay_t<decltype(stored)>>)
            w.put(narrow_number<T>(stored, what));
          else
            fail_holds(value, what);
        },
        value.data);
  });
  if (is_number) return;
  if (value.type == GgufValueType::ARRAY) {
    put_array(w, value, what);
  } else if (const auto* b = std::get_if<bool>(&value.data);
             b && value.type == GgufValueType::BOOL) {
    w.put<uint8_t>(*b ? 1 : 0);
  } else if (const auto* s = std::get_if<std::string>(&value.data);
             s && value.type == GgufValueType::STRING) {
    w.put_string(*s);
  } else {
    fail_holds(value, what);
  }
}

GgufValue scalar(GgufValueType type, decltype(GgufValue::data) data) {
  GgufValue value;
  value.type = type;
  value.data = std::move(data);
  return value;
}

template <typename Stored>
GgufValue array_of(GgufValueType element_type, std::vector<Stored> elements) {
  GgufValue value;
  value.type = GgufValueType::ARRAY;
  value.array_type = element_type;
  value.array_size = elements.size();
  value.data = std::move(elements);
  return value;
}

}  // namespace

// ---- metadata ----------------------------------------------------------------

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [existing_key, existing_value] : metadata_) {
    if (existing_key == key) {
      existing_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
  set(key, scalar(GgufValueType::UINT32, uint64_t{v}));
}
void GgufWriter::set_i32(const std::string& key, int32_t v) {
  set(key, scalar(GgufValueType::INT32, int64_t{v}));
}
void GgufWriter::set_u64(const std::string& key, uint64_t v) {
  set(key, scalar(GgufValueType::UINT64, v));
}
void GgufWriter::set_f32(const std::string& key, float v) {
  set(key, scalar(GgufValueType::FLOAT32, double{v}));
}
void GgufWriter::set_bool(const std::string& key, bool v) {
  set(key, scalar(GgufValueType::BOOL, v));
}
void GgufWriter::set_string(const std::string& key, std::string v) {
  set(key, scalar(GgufValueType::STRING, std::move(v)));
}

void GgufWriter::set_string_array(const std::string& key, std::vector<std::string> v) {
  set(key, array_of(GgufValueType::STRING, std::move(v)));
}
void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
  set(key, array_of(GgufValueType::FLOAT32, std::vector<double>(v.begin(), v.end())));
}
void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  set(key, array_of(GgufValueType::INT32, std::vector<int64_t>(v.begin(), v.end())));
}

void GgufWriter::set_alignment(uint32_t alignment) {
  MKV_CHECK(std::has_single_bit(alignment),
            "GGUF writer: alignment {} is not a nonzero power of two", alignment);
  alignment_ = alignment;
  set_u32(kAlignmentKey, alignment);
}

// ---- tensors -----------------------------------------------------------------

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                            std::vector<uint8_t> bytes) {
  for (const Tensor& t : tensors_)
    MKV_CHECK(t.name != name, "GGUF writer: tensor '{}' added twice", name);
  const TensorSize size = tensor_size(type, dims);
  MKV_CHECK(size.problem.empty(), "GGUF writer: tensor '{}' {}", name, size.problem);
  MKV_CHECK(bytes.size() == size.nbytes, "GGUF writer: tensor '{}' ({} {}) needs {} bytes, got {}",
            name, ggml_type_info(type).name, dims, size.nbytes, bytes.size());
  tensors_.push_back({name, type, std::move(dims), std::move(bytes)});
}

void GgufWriter::add_tensor_f32(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                                const std::vector<float>& values) {
  const TensorSize size = tensor_size(type, dims);
  MKV_CHECK(size.problem.empty(), "GGUF writer: tensor '{}' {}", name, size.problem);
  const int64_t ne0 = dims.empty() ? 1 : dims[0];
  int64_t n_elements = 1;
  for (int64_t d : dims) n_elements *= d;  // tensor_size checked it does not overflow
  MKV_CHECK(values.size() == static_cast<std::size_t>(n_elements),
            "GGUF writer: tensor '{}' dims {} hold {} values, got {}", name, dims, n_elements,
            values.size());
  std::vector<uint8_t> bytes(size.nbytes);  // (rows, row_bytes) encoded in `type`
  if (type == GgmlType::F32) {
    std::memcpy(bytes.data(), values.data(), size.nbytes);
  } else if (ne0 > 0) {
    const std::size_t row_bytes = ggml_row_bytes(type, ne0);
    for (int64_t r = 0; r < n_elements / ne0; ++r)
      quantize_row(type, values.data() + r * ne0, bytes.data() + r * row_bytes, ne0);
  }
  add_tensor(name, type, std::move(dims), std::move(bytes));
}

// ---- output ------------------------------------------------------------------

void GgufWriter::emit(const std::function<void(std::span<const uint8_t>)>& sink) const {
  std::vector<uint8_t> header;  // everything before the data section, padded to the alignment
  ByteWriter w(header);
  w.put(kMagic);
  w.put(kWriteVersion);
  w.put<uint64_t>(tensors_.size());
  w.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    w.put_string(key);
    w.put(static_cast<uint32_t>(value.type));
    put_value(w, value, fmt::format("key '{}'", key));
  }
  uint64_t offset = 0;  // of the next tensor inside the data section
  for (const Tensor& t : tensors_) {
    w.put_string(t.name);
    w.put(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) w.put(static_cast<uint64_t>(d));
    w.put(static_cast<uint32_t>(t.type));
    w.put(offset);
    offset = align_up(offset + t.bytes.size(), alignment_);
  }
  w.pad_to(alignment_);
  sink(header);

  // Padding goes before each tensor but the first, never after the last: the file ends where
  // the last tensor's bytes end.
  const std::vector<uint8_t> zeros(alignment_, 0);
  std::size_t written = 0;  // bytes of the data section so far
  for (const Tensor& t : tensors_) {
    sink({zeros.data(), align_up(written, alignment_) - written});
    sink(t.bytes);
    written = align_up(written, alignment_) + t.bytes.size();
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  emit([&](std::span<const uint8_t> piece) { out.insert(out.end(), piece.begin(), piece.end()); });
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) fail("{}: cannot create: {}", path, std::strerror(errno));
  emit([&](std::span<const uint8_t> piece) {
    file.write(reinterpret_cast<const char*>(piece.data()),
               static_cast<std::streamsize>(piece.size()));
  });
  file.close();
  if (!file) fail("{}: write failed: {}", path, std::strerror(errno));
}

}  // namespace mkv
