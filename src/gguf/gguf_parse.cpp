#include "gguf/gguf_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/message_text.h"
#include "gguf/gguf_format.h"

namespace mkv {
namespace {

using namespace gguf_format;

// Smallest key-value pair: key length (u64) + value type (u32) + a 1-byte value.
constexpr std::size_t kMinKeyValueBytes = 8 + 4 + 1;
// Smallest tensor info: name length (u64) + n_dims (u32) + ggml type (u32) + offset (u64).
constexpr std::size_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
constexpr std::size_t kMaxNameInMessage = 120;

// A key or tensor name as it may appear in a message: control bytes (a NUL included), DEL and
// invalid UTF-8 are shown as \xNN, and very long (hostile) names are cut.
std::string printable(std::string_view name) { return escape_for_message(name, kMaxNameInMessage); }

std::string item_context(std::string_view kind, uint64_t index, std::string_view name) {
  return fmt::format("{} #{} '{}'", kind, index, printable(name));
}

// Reads little-endian fields from the image and never past its end. Every failure names the file,
// the item being read (the context, e.g. "key #7 'llama.block_count'"), the problem and the byte.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& file) : bytes_(bytes), file_(file) {}

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  void set_context(std::string context) { context_ = std::move(context); }

  [[noreturn]] void fail_at(std::size_t offset, std::string_view problem) const {
    fail("{}: {}: {} at byte {}", file_, context_, problem, offset);
  }
  [[noreturn]] void fail_here(std::string_view problem) const { fail_at(pos_, problem); }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail_here(fmt::format("truncated while reading {} (needs {} bytes, {} left)", what, n,
                            remaining()));
  }
  // Rejects `count` items of at least `min_each` bytes each that cannot fit in the bytes left,
  // before anything is allocated for them.
  void need_items(uint64_t count, std::size_t min_each, std::string_view what) const {
    if (count > remaining() / min_each)
      fail_here(
          fmt::format("{} count {} cannot fit in the {} bytes left", what, count, remaining()));
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }

  // A GGUF string: u64 length, then that many bytes. The view points into the image.
  std::string_view read_string(std::string_view what) {
    const uint64_t length = read<uint64_t>(what);
    need(length, what);
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  const std::string& file_;
  std::string context_ = "header";
  std::size_t pos_ = 0;
};

GgufValueType read_value_type(Cursor& c, std::string_view what) {
  const std::size_t at = c.offset();
  const uint32_t raw = c.read<uint32_t>(what);
  if (raw > kLastValueType) c.fail_at(at, fmt::format("unknown value type id {}", raw));
  return static_cast<GgufValueType>(raw);
}

bool read_bool(Cursor& c, std::string_view what) {
  const std::size_t at = c.offset();
  const uint8_t byte = c.read<uint8_t>(what);
  if (byte > 1) c.fail_at(at, fmt::format("bool byte is {} (expected 0 or 1)", byte));
  return byte == 1;
}

template <typename Item, typename ReadOne>
std::vector<Item> read_items(uint64_t count, ReadOne&& read_one) {
  std::vector<Item> items;
  items.reserve(count);  // callers bounded count by the bytes left (Cursor::need_items)
  for (uint64_t i = 0; i < count; ++i) items.push_back(read_one());
  return items;
}

// u32 element type, u64 count, elements. `depth` counts the arrays around this one.
GgufValue read_array(Cursor& c, int depth) {
  if (depth >= kMaxArrayNesting)
    c.fail_here(fmt::format("arrays nested deeper than {} levels", kMaxArrayNesting));
  GgufValue value;
  value.type = GgufValueType::ARRAY;
  value.array_type = read_value_type(c, "the array element type");
  const uint64_t count = c.read<uint64_t>("the array length");
  c.need_items(count, min_encoded_size(value.array_type), "array element");
  value.array_size = count;
  constexpr std::string_view kElement = "an array element";
  const bool is_number_array = with_number_type(value.array_type, [&](auto tag) {
    using T = decltype(tag);
    value.data =
        read_items<NumberStorage<T>>(count, [&] { return NumberStorage<T>(c.read<T>(kElement)); });
  });
  if (is_number_array) return value;
  switch (value.array_type) {
    case GgufValueType::BOOL:
      value.data = read_items<bool>(count, [&] { return read_bool(c, kElement); });
      break;
    case GgufValueType::STRING:
      value.data =
          read_items<std::string>(count, [&] { return std::string(c.read_string(kElement)); });
      break;
    case GgufValueType::ARRAY:
      value.elements = read_items<GgufValue>(count, [&] { return read_array(c, depth + 1); });
      break;
    default: break;  // every numeric type was handled above
  }
  return value;
}

GgufValue read_value(Cursor& c, GgufValueType type) {
  constexpr std::string_view kValue = "the value";
  GgufValue value;
  value.type = type;
  const bool is_number = with_number_type(type, [&](auto tag) {
    using T = decltype(tag);
    value.data = NumberStorage<T>(c.read<T>(kValue));
  });
  if (is_number) return value;
  switch (type) {
    case GgufValueType::BOOL: value.data = read_bool(c, kValue); break;
    case GgufValueType::STRING: value.data = std::string(c.read_string(kValue)); break;
    case GgufValueType::ARRAY: return read_array(c, 0);
    default: break;  // every numeric type was handled above
  }
  return value;
}

void read_metadata(Cursor& c, uint64_t kv_count, GgufHeader& h) {
  c.need_items(kv_count, kMinKeyValueBytes, "key-value");
  for (uint64_t i = 0; i < kv_count; ++i) {
    c.set_context(fmt::format("key #{}", i));
    const std::size_t key_at = c.offset();
    const std::string_view key = c.read_string("the key");
    c.set_context(item_context("key", i, key));
    const auto [first, inserted] = h.key_index.emplace(key, h.metadata.size());
    if (!inserted)
      c.fail_at(key_at, fmt::format("duplicate key (first seen as key #{})", first->second));
    const GgufValueType type = read_value_type(c, "the value type");
    h.metadata.emplace_back(std::string(key), read_value(c, type));
  }
}

void read_tensor_infos(Cursor& c, uint64_t tensor_count, GgufHeader& h) {
  // The count is checked against the bytes after the metadata: blame the tensor table (the header
  // field), not the last key read.
  c.set_context(fmt::format("tensor table (tensor count {} in the header)", tensor_count));
  c.need_items(tensor_count, kMinTensorInfoBytes, "tensor");
  for (uint64_t i = 0; i < tensor_count; ++i) {
    c.set_context(fmt::format("tensor #{}", i));
    const std::size_t name_at = c.offset();
    const std::string_view name = c.read_string("the tensor name");
    c.set_context(item_context("tensor", i, name));
    const auto [first, inserted] = h.tensor_index.emplace(name, h.tensors.size());
    if (!inserted)
      c.fail_at(name_at,
                fmt::format("duplicate tensor name (first seen as tensor #{})", first->second));

    const std::size_t dims_at = c.offset();
    const uint32_t n_dims = c.read<uint32_t>("the dimension count");
    if (n_dims > kMaxDims)
      c.fail_at(dims_at, fmt::format("has {} dimensions (at most {})", n_dims, kMaxDims));
    std::vector<int64_t> dims;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>("the dimensions");
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        c.fail_at(dims_at, fmt::format("dimension {} = {} does not fit int64", d, dim));
      dims.push_back(static_cast<int64_t>(dim));
    }
    const std::size_t type_at = c.offset();
    const uint32_t raw_type = c.read<uint32_t>("the ggml type");
    const std::optional<GgmlTypeInfo> info = ggml_type_info(raw_type);
    if (!info) c.fail_at(type_at, fmt::format("unknown ggml type id {}", raw_type));
    const uint64_t offset = c.read<uint64_t>("the data offset");

    const TensorSize size = tensor_size(info->type, dims);
    if (!size.problem.empty()) c.fail_at(dims_at, size.problem);
    h.tensors.push_back(
        {std::string(name), info->type, std::move(dims), offset, size.nbytes, nullptr});
  }
}

// general.alignment: an unsigned integer, a nonzero power of two that fits u32; 32 when absent.
std::size_t read_alignment(const GgufHeader& h, const std::string& file) {
  const auto it = h.key_index.find(kAlignmentKey);
  if (it == h.key_index.end()) return kDefaultAlignment;
  const GgufValue& value = h.metadata[it->second].second;
  const auto* alignment = std::get_if<uint64_t>(&value.data);
  if (value.type == GgufValueType::ARRAY || !alignment)
    fail("{}: key #{} '{}' has type {}, expected uint32", file, it->second, kAlignmentKey,
         describe_type(value));
  if (*alignment == 0 || !std::has_single_bit(*alignment) ||
      *alignment > std::numeric_limits<uint32_t>::max())
    fail("{}: key #{} '{}' = {} is not a valid alignment (a nonzero power of two that fits uint32)",
         file, it->second, kAlignmentKey, *alignment);
  return static_cast<std::size_t>(*alignment);
}

// Two tensors whose bytes overlap (a hand-edited or corrupted offset) would alias each other's
// weights silently; llama.cpp rejects them too.
void require_disjoint(const GgufHeader& h, const std::string& file) {
  std::vector<std::size_t> order(h.tensors.size());  // tensor indices by offset
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const GgufTensorInfo &x = h.tensors[a], &y = h.tensors[b];
    // An empty tensor overlaps nothing; ties go in file order, so that messages do not vary.
    return std::tie(x.offset, x.nbytes, a) < std::tie(y.offset, y.nbytes, b);
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& before = h.tensors[order[k - 1]];
    const GgufTensorInfo& after = h.tensors[order[k]];
    if (before.offset + before.nbytes > after.offset)  // both already checked to lie inside the file
      fail("{}: {} (data [{}, {})) overlaps {} (data from {})", file, item_context("tensor", order[k - 1], before.name),
           before.offset, before.offset + before.nbytes, item_context("tensor", order[k], after.name), after.offset);
  }
}

// Checks every tensor's offset alignment, that its bytes lie inside the image and overlap no other
// tensor's; sets data.
void place_tensors(GgufHeader& h, std::span<const uint8_t> bytes, const std::string& file) {
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    GgufTensorInfo& t = h.tensors[i];
    if (t.offset % h.alignment != 0)
      fail("{}: {}: data offset {} is not a multiple of the alignment {}", file,
           item_context("tensor", i, t.name), t.offset, h.alignment);
    // 128-bit so that hostile offsets cannot wrap around.
    const unsigned __int128 begin = static_cast<unsigned __int128>(h.data_offset) + t.offset;
    const unsigned __int128 end = begin + t.nbytes;
    if (end > bytes.size())
      fail("{}: {}: data [{}, {}) lies outside the file ({} bytes)", file,
           item_context("tensor", i, t.name), begin, end, bytes.size());
    t.data = bytes.data() + static_cast<std::size_t>(begin);
  }
  require_disjoint(h, file);
}

}  // namespace

GgufHeader parse_gguf(std::span<const uint8_t> bytes, const std::string& name) {
  Cursor c(bytes, name);
  GgufHeader h;
  const uint32_t magic = c.read<uint32_t>("the magic");
  if (magic != kMagic) {
    std::string found(reinterpret_cast<const char*>(bytes.data()), sizeof(magic));
    c.fail_at(0,
              fmt::format("bad magic '{}' (expected 'GGUF'): not a GGUF file", printable(found)));
  }
  h.version = c.read<uint32_t>("the version");
  if (h.version == 1)
    c.fail_at(4, "GGUF version 1 is not supported (only versions 2 and 3); re-convert the model");
  if (h.version != 2 && h.version != 3)
    c.fail_at(4, fmt::format("unsupported GGUF version {} (expected 2 or 3)", h.version));
  const uint64_t tensor_count = c.read<uint64_t>("the tensor count");
  const uint64_t kv_count = c.read<uint64_t>("the key-value count");

  read_metadata(c, kv_count, h);
  read_tensor_infos(c, tensor_count, h);

  h.alignment = read_alignment(h, name);
  h.data_offset = align_up(c.offset(), h.alignment);
  place_tensors(h, bytes, name);
  return h;
}

}  // namespace mkv
