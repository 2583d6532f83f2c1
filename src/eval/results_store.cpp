#include "eval/results_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/text_file.h"

namespace mkv::eval {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};  // a new run
  return read_text_file(path, "results file");
}

int64_t parse_decimal(std::string_view text, std::string_view spec, const char* what) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  MKV_CHECK(!text.empty() && error == std::errc() && end == text.data() + text.size(),
            "--shard '{}': the {} '{}' is not a decimal integer", spec, what, text);
  return value;
}

}  // namespace

ResultsStore::ResultsStore(std::filesystem::path path) : ResultsStore(std::move(path), std::cerr) {}

ResultsStore::ResultsStore(std::filesystem::path path, std::ostream& log) : path_(std::move(path)) {
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  load(log);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  MKV_CHECK(fd_ >= 0, "cannot open results file {} for appending: {}", path_.string(), std::strerror(errno));
}

ResultsStore::~ResultsStore() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsStore::load(std::ostream& log) {
  const std::string text = read_all(path_);
  const size_t complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (complete < text.size()) {
    log << "note: " << path_.string() << ": dropping an incomplete last line (" << text.size() - complete
        << " bytes) left by an interrupted run; that sample will be redone\n";
    std::filesystem::resize_file(path_, complete);
  }
  size_t start = 0;
  int line = 1;
  for (; start < complete; ++line) {
    const size_t end = text.find('\n', start);
    const std::string_view row_text(text.data() + start, end - start);
    start = end + 1;
    if (row_text.empty()) continue;
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(row_text);
    } catch (const nlohmann::json::exception& e) {  // a parse error, or a number past double's range
      fail("{}:{}: not valid JSON ({})", path_.string(), line, json_error_text(e.what()));
    }
    MKV_CHECK(row.is_object() && row.contains("index") && row["index"].is_number_integer(),
              "{}:{}: a result row needs an integer 'index'", path_.string(), line);
    const auto index = row["index"].get<int64_t>();
    MKV_CHECK(done_.insert(index).second, "{}:{}: index {} appears twice", path_.string(), line, index);
    rows_.push_back(std::move(row));
    lines_.push_back(line);
  }
  next_line_ = line;
}

void ResultsStore::append(const nlohmann::json& row) {
  MKV_CHECK(row.is_object() && row.contains("index") && row["index"].is_number_integer(),
            "a result row needs an integer 'index'");
  const auto index = row["index"].get<int64_t>();
  MKV_CHECK(!done(index), "{}: index {} is already stored", path_.string(), index);
  // Generated text may end inside a multi-byte character (byte-fallback tokens): invalid UTF-8 is
  // stored as U+FFFD, and the row is kept as it will read back on resume.
  const std::string line = row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    MKV_CHECK(n > 0, "cannot append to {}: {}", path_.string(), std::strerror(errno));
    written += static_cast<size_t>(n);
  }
  MKV_CHECK(::fsync(fd_) == 0, "cannot flush {} to disk: {}", path_.string(), std::strerror(errno));
  done_.insert(index);
  rows_.push_back(nlohmann::json::parse(line));
  lines_.push_back(next_line_++);
}

void ResultsStore::require_indices_in(const std::set<int64_t>& indices, std::string_view data) const {
  for (size_t i = 0; i < rows_.size(); ++i) {
    const auto index = rows_[i]["index"].get<int64_t>();
    MKV_CHECK(indices.count(index) != 0,
              "{}:{}: prediction for index {}, which is not in {}; this results file belongs to a run on other data "
              "(use another -o folder or remove the file)",
              path_.string(), lines_[i], index, data);
  }
}

void ResultsStore::require_field(std::string_view field, std::string_view type) const {
  const std::string key(field);
  for (size_t i = 0; i < rows_.size(); ++i) {
    const nlohmann::json& row = rows_[i];
    bool ok = row.contains(key);
    if (ok && type == "string") ok = row[key].is_string();
    else if (ok && type == "integer") ok = row[key].is_number_integer();
    else if (ok && type == "array of strings") {
      ok = row[key].is_array();
      for (const auto& v : ok ? row[key] : nlohmann::json::array()) ok = ok && v.is_string();
    }
    MKV_CHECK(ok, "{}:{}: a result row needs field '{}' ({})", path_.string(), lines_[i], field, type);
  }
}

ShardSpec ShardSpec::parse(std::string_view spec) {
  const size_t slash = spec.find('/');
  MKV_CHECK(slash != std::string_view::npos, "--shard '{}' must look like i/n (e.g. 0/4)", spec);
  ShardSpec shard;
  shard.shard = parse_decimal(spec.substr(0, slash), spec, "shard index");
  shard.count = parse_decimal(spec.substr(slash + 1), spec, "shard count");
  MKV_CHECK(shard.count >= 1, "--shard '{}': the shard count must be at least 1", spec);
  MKV_CHECK(shard.shard >= 0 && shard.shard < shard.count, "--shard '{}': the shard index must be in [0, {})",
            spec, shard.count);
  return shard;
}

}  // namespace mkv::eval
