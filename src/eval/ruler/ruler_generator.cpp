#include "eval/ruler/ruler_generator.h"

#include <limits>

#include "core/error.h"
#include "eval/ruler/haystack.h"

namespace mkv::eval::ruler {
namespace {

constexpr uint64_t kProbeStream = std::numeric_limits<uint64_t>::max();  // fitting probes
constexpr uint64_t kVtExampleStream = kProbeStream - 1;                  // vt example fit
constexpr int64_t kVtExampleTokens = 500;  // variable_tracking.py fits its example to 500 tokens
constexpr int64_t kSizeLimit = int64_t{1} << 40;

}  // namespace

int64_t largest_fitting(const std::function<bool(int64_t)>& fits, int64_t lower, int64_t limit) {
  MKV_CHECK(fits(lower), "the target length is too small: even the smallest haystack ({}) does not fit", lower);
  int64_t good = lower, bad = lower * 2;
  while (fits(bad)) {
    good = bad;
    bad *= 2;
    MKV_CHECK(bad <= limit, "the haystack never exceeds the target length (size {}); is the token counter right?", bad);
  }
  while (bad - good > 1) {  // invariant: fits(good), !fits(bad)
    const int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

RulerGenerator::RulerGenerator(RulerConfig config) : config_(std::move(config)), spec_(task_spec(config_.task)) {
  MKV_CHECK(spec_.family != TaskFamily::qa,
            "RULER task '{}' needs SQuAD/HotpotQA documents; reading them is not implemented yet, so it cannot "
            "be generated (run an existing RULER jsonl file for it instead)",
            spec_.name);
  MKV_CHECK(static_cast<bool>(config_.count_tokens), "RULER generation needs a token counter");
  MKV_CHECK(config_.max_seq_length > spec_.tokens_to_generate,
            "max_seq_length {} must exceed the {} tokens task '{}' generates", config_.max_seq_length,
            spec_.tokens_to_generate, spec_.name);
  MKV_CHECK(config_.num_samples >= 0, "num_samples must not be negative");
  if (!config_.render_prompt)
    config_.render_prompt = [](std::string_view input, std::string_view prefix) {
      return std::string(input) + std::string(prefix);
    };
  if (spec_.family == TaskFamily::niah && spec_.haystack == HaystackKind::essay)
    essay_words_ = load_essay_words(config_.essay_paths);
  if (spec_.family == TaskFamily::variable_tracking) vt_example_noise_ = fit_vt_example();
}

BuiltPrompt RulerGenerator::build(int64_t haystack_size, SeededRng& rng) const {
  const TaskContext context{spec_, config_.max_seq_length, &essay_words_, vt_example_noise_};
  switch (spec_.family) {
    case TaskFamily::niah: return build_niah(context, haystack_size, rng);
    case TaskFamily::variable_tracking: return build_variable_tracking(context, haystack_size, rng);
    case TaskFamily::common_words: return build_common_words(context, haystack_size, rng);
    case TaskFamily::freq_words: return build_freq_words(context, haystack_size, rng);
    case TaskFamily::qa: break;
  }
  MKV_ASSERT(false);
  return {};
}

int64_t RulerGenerator::fit_vt_example() const {
  // The example alone (template, answer prefix and answer included, no chat template) fits 500 tokens.
  const TaskContext context{spec_, config_.max_seq_length, nullptr, 0};
  const auto fits = [&](int64_t noise) {
    SeededRng rng(config_.seed, spec_.name, kVtExampleStream);
    const BuiltPrompt example = build_variable_tracking(context, noise, rng, false);
    return config_.count_tokens(example.input + example.answer_prefix) <= kVtExampleTokens;
  };
  return largest_fitting(fits, 5, kSizeLimit);
}

RulerSample RulerGenerator::to_sample(int64_t index, BuiltPrompt prompt) const {
  RulerSample sample;
  sample.index = index;
  sample.input = std::move(prompt.input);
  sample.answer_prefix = std::move(prompt.answer_prefix);
  sample.outputs = std::move(prompt.outputs);
  sample.others = std::move(prompt.others);
  sample.others["seed"] = config_.seed;
  sample.length = prompt_length(sample);
  return sample;
}

int64_t RulerGenerator::prompt_length(const RulerSample& sample) const {
  return config_.count_tokens(config_.render_prompt(sample.input, sample.answer_prefix)) + spec_.tokens_to_generate;
}

int64_t RulerGenerator::probe_length(int64_t haystack_size) const {
  SeededRng rng(config_.seed, spec_.name, kProbeStream);
  return to_sample(0, build(haystack_size, rng)).length;
}

HaystackFit RulerGenerator::fit() const {
  const int64_t lower = haystack_increment(spec_, config_.max_seq_length);
  const int64_t size = largest_fitting(
      [&](int64_t n) { return probe_length(n) <= config_.max_seq_length; }, lower, kSizeLimit);
  return {size, probe_length(size)};
}

RulerSample RulerGenerator::sample(int64_t index, int64_t haystack_size) const {
  SeededRng rng(config_.seed, spec_.name, static_cast<uint64_t>(index));
  return to_sample(index, build(haystack_size, rng));
}

std::vector<RulerSample> RulerGenerator::generate() const {
  const int64_t step = haystack_increment(spec_, config_.max_seq_length);
  const int64_t fitted = fit().haystack_size;
  std::vector<RulerSample> samples;
  for (int64_t index = 0; index < config_.num_samples; ++index) {
    int64_t size = fitted;
    RulerSample candidate = sample(index, size);
    while (candidate.length > config_.max_seq_length) {
      MKV_CHECK(size > step, "sample {} of '{}' does not fit {} tokens even at haystack size {}", index,
                spec_.name, config_.max_seq_length, size);
      size -= step;
      candidate = sample(index, size);
    }
    samples.push_back(std::move(candidate));
  }
  return samples;
}

}  // namespace mkv::eval::ruler
