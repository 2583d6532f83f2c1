// The RULER synthetic tasks (NVIDIA/RULER scripts/synthetic.yaml + data/synthetic/*.py): their
// parameters, templates and one prompt builder per family. Used by RulerGenerator; builders take
// the haystack size (the unit the fit searches over) and a seeded stream.
//
// Deliberate differences from RULER's Python (documented so numbers are read correctly):
// - Needles go at depths drawn without replacement from RULER's 40 depths
//   round(linspace(0, 100, 40)) for every haystack (RULER draws a uniform sentence index for the
//   noise/needle haystacks); the depths are recorded in `others.depths`.
// - Shuffles use the sample's stream, not random.Random(seed) (which repeats the same permutation).
// - vt: the in-context example is rebuilt per sample (3-letter names, new value) rather than
//   renamed from one example; cwe: beyond the built-in word pool, words are adjective-noun pairs
//   (RULER switches to a larger English word list); fwe: only alpha = 2 (zeta(2) = pi^2/6).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eval/ruler/seeded_rng.h"

namespace mkv::eval::ruler {

enum class TaskFamily { niah, variable_tracking, common_words, freq_words, qa };
enum class HaystackKind { noise, essay, needle };
enum class NeedleType { words, numbers, uuids };

struct TaskSpec {
  std::string name;
  TaskFamily family;
  int tokens_to_generate;
  // niah only
  HaystackKind haystack = HaystackKind::noise;
  NeedleType key_type = NeedleType::words;
  NeedleType value_type = NeedleType::numbers;
  int num_keys = 1, num_values = 1, num_queries = 1;
};

// The 13 RULER tasks; MkvError naming the known tasks for any other name.
const TaskSpec& task_spec(std::string_view name);
const std::vector<TaskSpec>& all_task_specs();

// RULER's step for haystack sizes (also the lower bound and the per-sample shrink step).
int64_t haystack_increment(const TaskSpec& spec, int64_t max_seq_length);

struct BuiltPrompt {
  std::string input;          // task prompt without the answer prefix
  std::string answer_prefix;  // starts with a space, as in RULER's constants
  std::vector<std::string> outputs;
  nlohmann::ordered_json others = nlohmann::ordered_json::object();
};

struct TaskContext {
  const TaskSpec& spec;
  int64_t max_seq_length;
  const std::vector<std::string>* essay_words;  // essay haystack only
  int64_t vt_example_noise = 0;                 // vt: noise sentences of the in-context example
};

BuiltPrompt build_niah(const TaskContext& context, int64_t haystack_size, SeededRng& rng);
// `with_example` = false builds vt's in-context example itself (3-letter names, value 12345 drawn
// afresh, answer prefix and answer kept in the input).
BuiltPrompt build_variable_tracking(const TaskContext& context, int64_t num_noise, SeededRng& rng,
                                    bool with_example = true);
BuiltPrompt build_common_words(const TaskContext& context, int64_t num_words, SeededRng& rng);
BuiltPrompt build_freq_words(const TaskContext& context, int64_t num_words, SeededRng& rng);

// The 40 needle depths in percent: round(linspace(0, 100, 40)).
const std::vector<int>& needle_depths();

}  // namespace mkv::eval::ruler
