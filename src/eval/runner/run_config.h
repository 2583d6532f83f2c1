// What every evaluation run (RULER, LongBench) needs besides its data: the press settings, the
// protocol, output and sharding, and how to run the model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/results_store.h"
#include "eval/runner/generation.h"

namespace mkv::eval {

struct EvalRunConfig {
  std::vector<PressSetting> settings;
  Protocol protocol = Protocol::snapkv;  // kvpress: the question appended after compression
  std::string chat_template = "auto";    // auto (the model's, none when it has none) | none | llama3 | chatml | qwen3
  std::filesystem::path output_dir;
  ShardSpec shard;
  int64_t max_samples = -1;  // stop after this many new predictions (tests, partial runs)
  SessionOptions session;  // how every sample's session runs (its press is the setting's)
  std::string model_name = "model";
};

}  // namespace mkv::eval
