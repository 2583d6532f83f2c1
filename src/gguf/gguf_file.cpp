#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "gguf/gguf_format.h"
#include "gguf/gguf_parse.h"

namespace mkv {

using gguf_format::describe_type;

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // validated by the reader not to overflow
  return n;
}

int64_t GgufTensorInfo::rows() const {
  int64_t n = 1;
  for (std::size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

struct GgufFile::Impl {
  std::string path;
  std::vector<uint8_t> owned;  // the image, when parsed from memory
  void* mapping = nullptr;     // the image, when opened from disk (read-only mmap)
  std::size_t mapping_size = 0;
  std::span<const uint8_t> bytes;  // views whichever of the two holds the image
  GgufHeader header;               // its names and tensor data point into `bytes`

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (mapping) ::munmap(mapping, mapping_size);
  }

  const GgufValue& require(std::string_view key) const;
  [[noreturn]] void wrong_type(std::string_view key, const GgufValue& value,
                               std::string_view expected) const {
    fail("{}: key '{}' has type {}, expected {}", path, key, describe_type(value), expected);
  }
  int64_t to_int(std::string_view key, const GgufValue& value, uint64_t unsigned_value) const;
};

namespace {

// Closes a file descriptor on every path out of GgufFile::open.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path, Load load) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("{}: cannot stat: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("{}: not a regular file", path);
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > 0 && load == Load::Mmap) {  // an empty file maps nothing; the parser reports it as truncated
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED)
      fail("{}: cannot map {} bytes: {}", path, size, std::strerror(errno));
    // Advisory: pages not yet in the page cache are then read in 2 MiB folios, which the mapping
    // maps whole (one TLB entry each) where the filesystem allows; decode streams every weight
    // once per token, and 4 KiB pages cost it TLB misses.
    ::madvise(mapping, size, MADV_HUGEPAGE);
    impl->mapping = mapping;
    impl->mapping_size = size;
    impl->bytes = {static_cast<const uint8_t*>(mapping), size};
  } else if (size > 0) {
    constexpr std::size_t kHugePage = std::size_t{2} << 20;
    const std::size_t mapped = (size + kHugePage - 1) / kHugePage * kHugePage;
    // Over-allocate by one huge page so that the image can start on a 2 MiB boundary.
    void* region = ::mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) fail("{}: cannot allocate {} bytes to read the model into: {}", path, size, std::strerror(errno));
    impl->mapping = region;
    impl->mapping_size = mapped + kHugePage;
    auto* image = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(region) + kHugePage - 1) / kHugePage * kHugePage);
    ::madvise(image, mapped, MADV_HUGEPAGE);  // advisory: without THP the copy still works
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pread(fd, image + done, std::min<std::size_t>(size - done, std::size_t{1} << 30), done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("{}: read failed at byte {} of {}: {}", path, done, size, n < 0 ? std::strerror(errno) : "unexpected end of file");
      done += static_cast<std::size_t>(n);
    }
    impl->bytes = {image, size};
  }
  impl->header = parse_gguf(impl->bytes, impl->path);
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  auto impl = std::make_unique<Impl>();
  impl->path = std::move(name);
  impl->owned = std::move(bytes);
  impl->bytes = impl->owned;
  impl->header = parse_gguf(impl->bytes, impl->path);
  return GgufFile(std::move(impl));
}

const std::string& GgufFile::path() const { return impl_->path; }
uint32_t GgufFile::version() const { return impl_->header.version; }
std::size_t GgufFile::alignment() const { return impl_->header.alignment; }
std::size_t GgufFile::data_offset() const { return impl_->header.data_offset; }
std::size_t GgufFile::file_size() const { return impl_->bytes.size(); }
std::span<const uint8_t> GgufFile::image() const { return impl_->bytes; }

// ---- metadata ----------------------------------------------------------------

const std::vector<std::pair<std::string, GgufValue>>& GgufFile::metadata() const {
  return impl_->header.metadata;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = impl_->header.key_index.find(key);
  return it == impl_->header.key_index.end() ? nullptr : &impl_->header.metadata[it->second].second;
}

const GgufValue& GgufFile::Impl::require(std::string_view key) const {
  const auto it = header.key_index.find(key);
  if (it == header.key_index.end()) fail("{}: missing required key '{}'", path, key);
  return header.metadata[it->second].second;
}

int64_t GgufFile::Impl::to_int(std::string_view key, const GgufValue& value,
                               uint64_t unsigned_value) const {
  if (unsigned_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail("{}: key '{}' ({}) = {} does not fit int64", path, key, describe_type(value),
         unsigned_value);
  return static_cast<int64_t>(unsigned_value);
}

std::optional<int64_t> GgufFile::get_int_opt(std::string_view key) const {
  const GgufValue* value = find(key);
  if (!value) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&value->data)) return impl_->to_int(key, *value, *u);
  if (const auto* i = std::get_if<int64_t>(&value->data)) return *i;
  impl_->wrong_type(key, *value, "an integer");
}

int64_t GgufFile::get_int(std::string_view key) const {
  impl_->require(key);
  return *get_int_opt(key);
}

std::optional<double> GgufFile::get_float_opt(std::string_view key) const {
  const GgufValue* value = find(key);
  if (!value) return std::nullopt;
  if (const auto* d = std::get_if<double>(&value->data)) return *d;
  if (gguf_format::is_int(value->type)) return static_cast<double>(*get_int_opt(key));
  impl_->wrong_type(key, *value, "a float");
}

double GgufFile::get_float(std::string_view key) const {
  impl_->require(key);
  return *get_float_opt(key);
}

std::optional<bool> GgufFile::get_bool_opt(std::string_view key) const {
  const GgufValue* value = find(key);
  if (!value) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&value->data)) return *b;
  impl_->wrong_type(key, *value, "bool");
}

std::optional<std::string> GgufFile::get_string_opt(std::string_view key) const {
  const GgufValue* value = find(key);
  if (!value) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&value->data)) return *s;
  impl_->wrong_type(key, *value, "string");
}

std::string GgufFile::get_string(std::string_view key) const {
  impl_->require(key);
  return *get_string_opt(key);
}

const std::vector<std::string>& GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& value = impl_->require(key);
  if (const auto* v = std::get_if<std::vector<std::string>>(&value.data)) return *v;
  impl_->wrong_type(key, value, "array of string");
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& value = impl_->require(key);
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value.data)) return *v;
  if (const auto* v = std::get_if<std::vector<uint64_t>>(&value.data)) {
    std::vector<int64_t> out;
    out.reserve(v->size());
    for (uint64_t u : *v) out.push_back(impl_->to_int(key, value, u));
    return out;
  }
  impl_->wrong_type(key, value, "array of integers");
}

std::vector<double> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue& value = impl_->require(key);
  if (const auto* v = std::get_if<std::vector<double>>(&value.data)) return *v;
  if (value.type == GgufValueType::ARRAY && gguf_format::is_int(value.array_type)) {
    const std::vector<int64_t> ints = get_int_array(key);
    return {ints.begin(), ints.end()};
  }
  impl_->wrong_type(key, value, "array of floats");
}

// ---- tensors -----------------------------------------------------------------

const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->header.tensors; }

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = impl_->header.tensor_index.find(name);
  return it == impl_->header.tensor_index.end() ? nullptr : &impl_->header.tensors[it->second];
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
  if (const GgufTensorInfo* t = find_tensor(name)) return *t;
  fail("{}: missing required tensor '{}'", impl_->path, name);
}

}  // namespace mkv
