#include "sweep/sweep_test_support.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_support.h"

namespace mkv::test {
namespace fs = std::filesystem;

fs::path needle_model() { return fs::path(MOMENTKV_SOURCE_DIR) / "models" / "stories-needle-2k.gguf"; }

fs::path needle_samples(const fs::path& path, int lines) {
  const fs::path source = fs::path(MOMENTKV_SOURCE_DIR) / "models" / "eval" / "own_niah_single.jsonl";
  std::ifstream in(source);
  std::ofstream out(path);
  std::string line;
  int written = 0;
  for (; (lines == 0 || written < lines) && std::getline(in, line); ++written) out << line << '\n';
  EXPECT_TRUE(written > 0 && (lines == 0 || written == lines)) << source << ": " << written << " samples";
  return path;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

nlohmann::json needle_sweep(const fs::path& data, const fs::path& output, const std::vector<int>& budgets, int shards) {
  return {{"name", "needle"},
          {"models", {needle_model().string()}},
          {"benchmark", {{"name", "ruler"}, {"data", {data.string()}}}},
          {"presses", {"snapkv:kernel=15", "streaming_llm"}},
          {"budgets", budgets},
          {"shards", shards},
          {"threads", 1},
          {"output", output.string()},
          {"slurm", {{"time", "00:10:00"}}}};
}

Predictions read_predictions(const fs::path& output) {
  Predictions p;
  if (!fs::exists(output)) return p;
  for (const auto& entry : fs::recursive_directory_iterator(output)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || path.extension() != ".jsonl" || path.parent_path().filename() != "pred") continue;
    // OUTPUT/{model}/{label}/shard{i}of{n}/{run}/pred/{task}.jsonl
    const fs::path relative = fs::relative(path, output);
    auto part = relative.begin();
    const std::string model = (part++)->string();
    const std::string label = (part++)->string();
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const nlohmann::json row = nlohmann::json::parse(line);
      const std::string key = model + "/" + label + "/" + path.stem().string() + "#" + std::to_string(row.at("index").get<int64_t>());
      if (!p.by_key.emplace(key, row.at("pred").get<std::string>()).second) ++p.duplicates;
    }
  }
  return p;
}

}  // namespace mkv::test
