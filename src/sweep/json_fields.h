// Reading one JSON object of a configuration file field by field, with messages that name the file
// and the field ("sweep.json: slurm.time: must be a string"), and unknown keys refused: after the
// known fields are read, finish() names any key that was not asked for and lists the known ones.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mkv::sweep {

class JsonFields {
 public:
  // `object` must outlive the reader. `file` and `prefix` ("", "benchmark.", "slurm.") locate it.
  JsonFields(const nlohmann::json& object, std::string file, std::string prefix);

  bool has(const std::string& key) const;
  std::optional<std::string> string(const std::string& key);
  // An integer in [min, max]; a float or a string is an error.
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  std::optional<bool> boolean(const std::string& key);
  // A list of strings; a single string is accepted as a list of one when `allow_single`.
  std::optional<std::vector<std::string>> strings(const std::string& key, bool allow_single = false);
  std::optional<std::vector<int64_t>> integers(const std::string& key, int64_t min, int64_t max);
  // A nested object (nullptr when absent); an error when the key holds another type.
  const nlohmann::json* object(const std::string& key);
  // The value of any type (nullptr when absent), for fields the caller checks itself.
  const nlohmann::json* value(const std::string& key) { return get(key); }

  // "FILE: PREFIXKEY" for messages about a field of this object.
  std::string where(const std::string& key) const;
  const std::string& file() const { return file_; }
  // MkvError naming the first key that no getter asked for.
  void finish() const;

 private:
  const nlohmann::json* get(const std::string& key);

  const nlohmann::json& object_;
  std::string file_, prefix_;
  std::set<std::string> asked_;
};

}  // namespace mkv::sweep
