// RULER data rows: `{task}/validation.jsonl` with {index, input, outputs[], length, answer_prefix,
// others}. `input` holds the task prompt without chat template and without the answer prefix (the
// engine applies the model's chat template to `input`, then appends `answer_prefix`, as RULER's
// prepare.py builds `template + answer_prefix`). Older RULER files (and the shared
// ruler_4096_niah_multikey_3.jsonl) keep the answer prefix inside `input`: answer_prefix is "".
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace mkv::eval::ruler {

struct RulerSample {
  int64_t index = 0;
  std::string input;
  std::vector<std::string> outputs;
  int64_t length = 0;  // prompt tokens (with template and answer prefix) + tokens to generate
  std::string answer_prefix;
  nlohmann::ordered_json others = nlohmann::ordered_json::object();  // depths, haystack size, ...
};

nlohmann::ordered_json to_json(const RulerSample& sample);

// One line, no trailing newline; keys in RULER's order.
std::string to_jsonl_line(const RulerSample& sample);

// Writes `dir/{task}/validation.jsonl` (creating folders); returns the file path.
std::filesystem::path write_validation_jsonl(const std::filesystem::path& dir, const std::string& task,
                                             const std::vector<RulerSample>& samples);

// Reads a RULER jsonl file. Required: index (integer), input (string), outputs (array of strings);
// optional: length (integer, default 0), answer_prefix (string), others (object). Blank lines are
// skipped. Errors name the file, the line number and the field; a repeated index is an error.
std::vector<RulerSample> read_ruler_jsonl(const std::filesystem::path& path);

}  // namespace mkv::eval::ruler
