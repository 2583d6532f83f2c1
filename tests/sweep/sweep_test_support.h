// Helpers of the sweep tests: small sweep files on the repository's trained model, and reading
// back every prediction a sweep wrote.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "support/test_support.h"

namespace mkv::test {

// models/stories-needle-2k.gguf of this repository.
std::filesystem::path needle_model();
// The first `lines` samples of models/eval/own_niah_single.jsonl (RULER jsonl, ~2K tokens
// each), written to `path`; all 30 when lines is 0.
std::filesystem::path needle_samples(const std::filesystem::path& path, int lines);

void write_text(const std::filesystem::path& path, const std::string& text);

// A sweep over RULER `data` on the needle model: snapkv:kernel=15 and streaming_llm at `budgets`
// with `shards` shards, one thread per task, into `output`.
nlohmann::json needle_sweep(const std::filesystem::path& data, const std::filesystem::path& output,
                            const std::vector<int>& budgets, int shards);

// Every prediction under a sweep's output folder, keyed "model/label/task#index" (shards folded
// together); `duplicates` counts keys found more than once.
struct Predictions {
  std::map<std::string, std::string> by_key;  // → the "pred" text
  int duplicates = 0;
};
Predictions read_predictions(const std::filesystem::path& output);

}  // namespace mkv::test
