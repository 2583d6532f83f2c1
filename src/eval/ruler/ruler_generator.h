// Seeded RULER dataset generation with the haystack fitted to a target length.
//
// Fitting follows RULER: the prompt as the model will see it (the caller's renderer: chat template
// around `input`, then `answer_prefix`) is tokenized with the caller's counter, and the haystack
// size is the largest one for which  tokens(prompt) + tokens_to_generate ≤ max_seq_length. The
// search probes a dedicated seeded stream, so f(size) is deterministic: the result fits and
// size + 1 does not. RULER bounds its binary search with an estimate from one probe; we double from
// RULER's increment until the prompt no longer fits, then bisect (same answer, no estimate). Each
// sample is then built from its own stream at the fitted size; if its prompt is longer (random
// UUIDs tokenise differently), the size shrinks by RULER's increment until it fits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/ruler/ruler_sample.h"
#include "eval/ruler/ruler_tasks.h"

namespace mkv::eval::ruler {

using TokenCounter = std::function<int64_t(std::string_view text)>;
// Builds the full prompt text from a sample's input and answer prefix (chat template included).
using PromptRenderer = std::function<std::string(std::string_view input, std::string_view answer_prefix)>;

struct RulerConfig {
  std::string task;              // one of all_task_specs()
  int64_t max_seq_length = 4096; // prompt tokens + tokens to generate ≤ this
  int64_t num_samples = 500;
  uint64_t seed = 42;
  std::vector<std::filesystem::path> essay_paths;  // essay haystack: .txt files or directories
  TokenCounter count_tokens;     // required: the model's tokenizer
  PromptRenderer render_prompt;  // empty: input + answer_prefix (RULER's "base" template)
};

struct HaystackFit {
  int64_t haystack_size;  // words (essay, cwe, fwe) or sentences (noise, needle, vt)
  int64_t length;         // tokens(prompt) + tokens_to_generate at that size
};

class RulerGenerator {
 public:
  // Validates the config (task, counter, essay texts when needed); qa_1/qa_2 are refused.
  explicit RulerGenerator(RulerConfig config);

  const TaskSpec& spec() const { return spec_; }
  HaystackFit fit() const;
  // One sample at an explicit size, from stream `index` (no length check).
  RulerSample sample(int64_t index, int64_t haystack_size) const;
  // fit() then num_samples samples, each shrunk until it fits.
  std::vector<RulerSample> generate() const;

  // tokens(rendered prompt) + tokens_to_generate.
  int64_t prompt_length(const RulerSample& sample) const;
  // Length of the fitting probe (a fixed stream) at a haystack size; fit() bisects on it.
  int64_t probe_length(int64_t haystack_size) const;

 private:
  BuiltPrompt build(int64_t haystack_size, SeededRng& rng) const;
  RulerSample to_sample(int64_t index, BuiltPrompt prompt) const;
  int64_t fit_vt_example() const;

  RulerConfig config_;
  const TaskSpec& spec_;
  std::vector<std::string> essay_words_;
  int64_t vt_example_noise_ = 0;
};

// Largest n ≥ lower with fits(n), assuming fits is monotone (true then false). Doubles from
// `lower`, then bisects. MkvError if even `lower` does not fit or no bound below `limit` fails.
int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t lower, int64_t limit);

}  // namespace mkv::eval::ruler
