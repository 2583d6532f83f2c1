#include "eval/ruler/ruler_sample.h"

#include <limits>
#include <map>

#include "core/error.h"
#include "core/text_file.h"

namespace mkv::eval::ruler {
namespace {

using json = nlohmann::json;

const json& require(const json& row, const char* field, const std::filesystem::path& path, int line) {
  auto it = row.find(field);
  MKV_CHECK(it != row.end(), "{}:{}: missing field '{}'", path.string(), line, field);
  return *it;
}

RulerSample parse_row(const json& row, const std::filesystem::path& path, int line) {
  MKV_CHECK(row.is_object(), "{}:{}: a row must be a JSON object", path.string(), line);
  RulerSample sample;
  const json& index = require(row, "index", path, line);
  const bool in_range = index.is_number_unsigned()
                            ? index.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                            : index.is_number_integer() && index.get<int64_t>() >= 0;
  MKV_CHECK(in_range, "{}:{}: field 'index' must be an integer from 0 to 2^63-1, got {}", path.string(), line,
            index.is_number() ? index.dump() : std::string("a ") + index.type_name());
  sample.index = index.get<int64_t>();
  const json& input = require(row, "input", path, line);
  MKV_CHECK(input.is_string(), "{}:{}: field 'input' must be a string", path.string(), line);
  sample.input = input.get<std::string>();
  const json& outputs = require(row, "outputs", path, line);
  MKV_CHECK(outputs.is_array() && !outputs.empty(), "{}:{}: field 'outputs' must be a non-empty array",
            path.string(), line);
  for (const json& output : outputs) {
    MKV_CHECK(output.is_string(), "{}:{}: field 'outputs' must hold strings only", path.string(), line);
    sample.outputs.push_back(output.get<std::string>());
  }
  if (auto it = row.find("length"); it != row.end()) {
    MKV_CHECK(it->is_number_integer(), "{}:{}: field 'length' must be an integer", path.string(), line);
    sample.length = it->get<int64_t>();
  }
  if (auto it = row.find("answer_prefix"); it != row.end()) {
    MKV_CHECK(it->is_string(), "{}:{}: field 'answer_prefix' must be a string", path.string(), line);
    sample.answer_prefix = it->get<std::string>();
  }
  if (auto it = row.find("others"); it != row.end()) {
    MKV_CHECK(it->is_object(), "{}:{}: field 'others' must be an object", path.string(), line);
    sample.others = nlohmann::ordered_json::parse(it->dump());
  }
  return sample;
}

}  // namespace

nlohmann::ordered_json to_json(const RulerSample& sample) {
  nlohmann::ordered_json row;
  row["index"] = sample.index;
  row["input"] = sample.input;
  row["outputs"] = sample.outputs;
  row["length"] = sample.length;
  row["answer_prefix"] = sample.answer_prefix;
  row["others"] = sample.others;
  return row;
}

// Essay haystacks may hold invalid UTF-8 (any user text file): it is written as U+FFFD instead of
// failing the dump.
std::string to_jsonl_line(const RulerSample& sample) {
  return to_json(sample).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::filesystem::path write_validation_jsonl(const std::filesystem::path& dir, const std::string& task,
                                             const std::vector<RulerSample>& samples) {
  const std::filesystem::path path = dir / task / "validation.jsonl";
  std::filesystem::create_directories(path.parent_path());
  std::string lines;
  for (const RulerSample& sample : samples) lines += to_jsonl_line(sample) + '\n';
  write_text_file(path, lines, "RULER samples");
  return path;
}

std::vector<RulerSample> read_ruler_jsonl(const std::filesystem::path& path) {
  const std::string content = read_text_file(path, "RULER file");
  std::vector<RulerSample> samples;
  std::map<int64_t, int> line_of_index;  // a repeated index would make resume skip a sample
  for (const TextLine& l : split_lines(content)) {
    if (is_blank(l.text)) continue;
    json row;
    try {
      row = json::parse(l.text);
    } catch (const json::exception& e) {
      fail("{}:{}: not valid JSON ({})", path.string(), l.number, json_error_text(e.what()));
    }
    samples.push_back(parse_row(row, path, l.number));
    const auto [first, inserted] = line_of_index.emplace(samples.back().index, l.number);
    MKV_CHECK(inserted, "{}:{}: index {} appears twice (first on line {}); every sample needs its own index",
              path.string(), l.number, samples.back().index, first->second);
  }
  return samples;
}

}  // namespace mkv::eval::ruler
