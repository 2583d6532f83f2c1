// Append-only per-sample results (JSONL) that survive a killed run, plus `--shard i/n` selection.
//
// Every row is a JSON object with an integer "index". append() writes the row and its newline in
// one write(), then fsyncs, so a row is either complete on disk or is the unterminated last line.
// Opening an existing file resumes: complete rows are loaded (done()), an unterminated last line
// left by a kill is dropped (the file is truncated back to the last newline) with a note on the
// log stream, and any malformed complete line is an error naming the file and line.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mkv::eval {

class ResultsStore {
 public:
  explicit ResultsStore(std::filesystem::path path);
  ResultsStore(std::filesystem::path path, std::ostream& log);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  bool done(int64_t index) const { return done_.count(index) != 0; }
  size_t size() const { return rows_.size(); }
  const std::vector<nlohmann::json>& rows() const { return rows_; }  // in file order
  // The 1-based line of rows()[i] in the file.
  int line_of(size_t i) const { return lines_.at(i); }

  // Resuming (or scoring) a results file against a data set: every stored row must be a sample of
  // that data. MkvError "FILE:LINE: prediction for index N, which is not in <data>" otherwise (the
  // folder holds a run on other data: another --data, --length, --samples or --seed); a row for a
  // sample that is no longer in the data would otherwise be scored.
  void require_indices_in(const std::set<int64_t>& indices, std::string_view data) const;
  // MkvError "FILE:LINE: ..." when a stored row lacks `field` or it has the wrong JSON type
  // (rows are read back to score them). `type` is "string", "array of strings" or "integer".
  void require_field(std::string_view field, std::string_view type) const;
  const std::filesystem::path& path() const { return path_; }

  // MkvError if the row has no integer "index" or that index is already stored.
  void append(const nlohmann::json& row);

 private:
  void load(std::ostream& log);

  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<nlohmann::json> rows_;
  std::vector<int> lines_;
  int next_line_ = 1;
  std::set<int64_t> done_;
};

// "--shard i/n": this process handles the samples with index % n == i.
struct ShardSpec {
  int64_t shard = 0;
  int64_t count = 1;

  bool selects(int64_t index) const { return (index % count + count) % count == shard; }  // also for index < 0
  // Parses "i/n" with 0 ≤ i < n (both decimal integers); MkvError saying what is wrong otherwise.
  static ShardSpec parse(std::string_view spec);
};

}  // namespace mkv::eval
