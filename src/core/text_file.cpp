#include "core/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace mkv {
namespace {

std::string describe(const std::filesystem::path& path, std::string_view what) {
  const std::string shown = escape_for_message(path.string(), 300);
  return what.empty() ? fmt::format("'{}'", shown) : fmt::format("{} '{}'", what, shown);
}

std::string mib(std::uint64_t bytes) {
  return bytes % (std::uint64_t{1} << 20) == 0 ? fmt::format("{} MiB", bytes >> 20) : fmt::format("{} bytes", bytes);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Writes all of `text` to fd; false with errno set on failure.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Opens `path` for writing with `flags` (O_WRONLY | O_CREAT | ...), writes `text` and closes it.
void write_to(const std::filesystem::path& path, int flags, std::string_view text, const std::string& name) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  MKV_CHECK(fd >= 0, "cannot create {}: {}", name, std::strerror(errno));
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  // close() reports what delayed writes could not store (NFS, quotas).
  const bool closed = ::close(fd) == 0;
  MKV_CHECK(written, "cannot write {}: {}", name, std::strerror(write_errno));
  MKV_CHECK(closed, "cannot write {}: {}", name, std::strerror(errno));
}

}  // namespace

void write_text_file(const std::filesystem::path& path, std::string_view text, std::string_view what) {
  MKV_CHECK(!path.empty(), "{}: no file name given", what.empty() ? "output file" : what);
  const std::string name = describe(path, what);
  // A device, a pipe (-o /dev/stdout) or a symlink is written through, not replaced by a file.
  std::error_code ec;
  const auto link = std::filesystem::symlink_status(path, ec);
  if (std::filesystem::exists(link) && !std::filesystem::is_regular_file(link))
    return write_to(path, O_WRONLY | O_CREAT | O_TRUNC, text, name);
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
  try {
    write_to(tmp, O_WRONLY | O_CREAT | O_TRUNC, text, name);
  } catch (const MkvError&) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot write {}: {}", name, std::strerror(err));
  }
}

void append_text_file(const std::filesystem::path& path, std::string_view text, std::string_view what) {
  MKV_CHECK(!path.empty(), "{}: no file name given", what.empty() ? "output file" : what);
  write_to(path, O_WRONLY | O_CREAT | O_APPEND, text, describe(path, what));
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what, TextFileLimits limits) {
  MKV_CHECK(!path.empty(), "{}: no file name given", what.empty() ? "file" : what);
  const std::string name = describe(path, what);
  // O_NONBLOCK: opening a FIFO nobody writes to must not block (it then reads as empty).
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (raw < 0) {
    const int err = errno;
    if (err == ENOENT) fail("{} does not exist", name);
    fail("cannot open {}: {}", name, std::strerror(err));
  }
  Fd fd(raw);
  struct stat st {};
  MKV_CHECK(::fstat(fd.get(), &st) == 0, "cannot stat {}: {}", name, std::strerror(errno));
  MKV_CHECK(!S_ISDIR(st.st_mode), "{} is a directory, not a file", name);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);

  const bool regular = S_ISREG(st.st_mode);
  const std::uint64_t cap = regular ? limits.max_file_bytes : limits.max_stream_bytes;
  if (regular)
    MKV_CHECK(static_cast<std::uint64_t>(st.st_size) <= cap, "{} is {} bytes, more than the {} limit for a text file",
              name, static_cast<std::uint64_t>(st.st_size), mib(cap));
  std::string text;
  if (regular) text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // a non-blocking device: wait for input like a blocking read
      ::usleep(1000);
      continue;
    }
    MKV_CHECK(n >= 0, "cannot read {}: {}", name, std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<std::uint64_t>(n) > cap) {
      if (regular) fail("{} grew past the {} limit for a text file while being read", name, mib(cap));
      fail("{} is not a regular file and streams more than {}; save the input to a regular file first", name,
           mib(cap));
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

std::vector<TextLine> split_lines(std::string_view text) {
  std::vector<TextLine> lines;
  std::size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({number, line});
    start = end + 1;
  }
  return lines;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }

std::string json_error_text(std::string_view what) {
  if (what.starts_with("[json.exception.")) {
    const std::size_t close = what.find("] ");
    if (close != std::string_view::npos) what.remove_prefix(close + 2);
  }
  return std::string(what);
}

}  // namespace mkv
