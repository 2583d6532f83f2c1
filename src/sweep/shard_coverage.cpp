#include "sweep/shard_coverage.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "core/text_file.h"
#include "eval/report/result_records.h"
#include "eval/results_store.h"

namespace mkv::sweep {
namespace fs = std::filesystem;

namespace {

struct Shard {
  eval::ShardSpec spec;
  fs::path folder;
};

// The "shard" of folder/run.json, when it has one.
std::optional<eval::ShardSpec> shard_of(const fs::path& folder) {
  const fs::path path = folder / "run.json";
  if (!fs::exists(path)) return std::nullopt;
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(read_text_file(path, "run.json"));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // reading the results reports a malformed run.json
  }
  if (!run.is_object() || !run.contains("shard") || !run["shard"].is_string()) return std::nullopt;
  try {
    return eval::ShardSpec::parse(run["shard"].get<std::string>());
  } catch (const MkvError& e) {
    fail("{}: \"shard\": {}", path.string(), e.what());
  }
}

}  // namespace

std::vector<std::string> check_shard_coverage(const std::vector<fs::path>& run_folders) {
  using Key = std::tuple<std::string, std::string, int64_t, std::string>;  // model, press, budget, task
  std::map<Key, std::vector<Shard>> shards;
  for (const fs::path& folder : run_folders) {
    const std::optional<eval::ShardSpec> shard = shard_of(folder);
    if (!shard) continue;
    for (const eval::report::ResultRecord& r : eval::report::read_result_folder(folder))
      shards[{r.model, r.press, r.budget, r.task}].push_back({*shard, folder});
  }
  std::vector<std::string> warnings;
  for (const auto& [key, list] : shards) {
    const auto& [model, press, budget, task] = key;
    const std::string what = fmt::format("{} / {} / budget {} / {}", model, press, budget, task);
    std::map<int64_t, const Shard*> seen;  // shard index → where
    for (const Shard& s : list) {
      const Shard& first = list.front();
      MKV_CHECK(s.spec.count == first.spec.count,
                "report: {}: {} holds shard {}/{} and {} shard {}/{}: different splits overlap, so samples would "
                "be counted twice (keep one split)",
                what, first.folder.string(), first.spec.shard, first.spec.count, s.folder.string(), s.spec.shard,
                s.spec.count);
      const auto [it, inserted] = seen.emplace(s.spec.shard, &s);
      MKV_CHECK(inserted,
                "report: {}: shard {}/{} is in both {} and {}: its samples would be counted twice (pass one of them)",
                what, s.spec.shard, s.spec.count, it->second->folder.string(), s.folder.string());
    }
    const int64_t count = list.front().spec.count;
    if (static_cast<int64_t>(seen.size()) < count) {
      std::vector<std::string> present;
      for (const auto& [index, shard] : seen) present.push_back(fmt::format("{}/{}", index, count));
      warnings.push_back(fmt::format("report: {}: only shard(s) {} of {} are finished: the score covers part of the samples",
                                     what, fmt::join(present, ", "), count));
    }
  }
  return warnings;
}

}  // namespace mkv::sweep
