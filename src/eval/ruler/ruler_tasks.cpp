#include "eval/ruler/ruler_tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "eval/ruler/haystack.h"
#include "eval/ruler/word_lists.h"

namespace mkv::eval::ruler {
namespace {

// ---- RULER's templates (scripts/data/synthetic/constants.py) ---------------------------------
constexpr std::string_view kNeedle = "One of the special magic {type_needle_v} for {key} is: {value}.";
constexpr std::string_view kNiahTemplate =
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
    "{type_needle_v} for {query} mentioned in the provided text?";
constexpr std::string_view kNiahPrefix =
    " The special magic {type_needle_v} for {query} mentioned in the provided text are";
constexpr std::string_view kVtTemplate =
    "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
    "Question: Find all variables that are assigned the value {query} in the text above.";
constexpr std::string_view kVtPrefix =
    " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are "
    "assigned the value {query}, they are: ";
constexpr std::string_view kCweTemplate =
    "Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
    "ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?";
constexpr std::string_view kCwePrefix = " Answer: The top 10 words that appear most often in the list are:";
constexpr std::string_view kFweTemplate =
    "Read the following coded text and track the frequency of each coded word. Find the three most "
    "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
    "the dots '....'. What are the three most frequently appeared words in the above coded text?";
constexpr std::string_view kFwePrefix =
    " Answer: According to the coded text above, the three most frequently appeared words are:";

constexpr int kVtHops = 4;         // synthetic.yaml vt: num_chains 1, num_hops 4
constexpr int kCommonWords = 10;   // cwe num_cw
constexpr double kZeta2 = 1.6449340668482264;  // zeta(2) = pi^2 / 6, fwe alpha = 2

using Vars = std::map<std::string_view, std::string_view>;

// str.format over {name} fields in one pass: substituted text is never re-scanned.
std::string fill(std::string_view text, const Vars& vars) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('{', i);
    const size_t close = open == std::string_view::npos ? open : text.find('}', open);
    if (close == std::string_view::npos) break;
    out.append(text.substr(i, open - i));
    auto it = vars.find(text.substr(open + 1, close - open - 1));
    MKV_ASSERT(it != vars.end());
    out.append(it->second);
    i = close + 1;
  }
  out.append(text.substr(std::min(i, text.size())));
  return out;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

const char* type_name(NeedleType type) {
  return type == NeedleType::words ? "words" : type == NeedleType::numbers ? "numbers" : "uuids";
}

std::string random_needle_item(NeedleType type, SeededRng& rng) {
  switch (type) {
    case NeedleType::numbers: return std::to_string(rng.between(1000000, 9999999));
    case NeedleType::words: {
      const auto& adjs = adjectives();
      const auto& ns = nouns();
      const uint64_t pick = rng.below(adjs.size() * ns.size());
      return adjs[pick / ns.size()] + "-" + ns[pick % ns.size()];
    }
    case NeedleType::uuids: {  // uuid.UUID(int=getrandbits(128), version=4)
      const uint64_t hi = (rng.next() & ~0xF000ULL) | 0x4000ULL;
      const uint64_t lo = (rng.next() & ~(0xC000ULL << 48)) | (0x8000ULL << 48);
      return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF,
                         lo >> 48, lo & 0xFFFFFFFFFFFFULL);
    }
  }
  return {};
}

// Sorted depths (percent) for `count` needles, drawn without replacement from the 40 depths.
std::vector<int> draw_depths(size_t count, SeededRng& rng) {
  std::vector<int> depths;
  for (size_t i : rng.sample_indices(needle_depths().size(), count)) depths.push_back(needle_depths()[i]);
  std::sort(depths.begin(), depths.end());
  return depths;
}

// Python int(n * (depth / 100)).
int64_t depth_position(int64_t n, int depth) {
  return static_cast<int64_t>(static_cast<double>(n) * (depth / 100.0));
}

// niah.py essay branch: needles between sentence chunks at their depths, all joined by spaces.
std::string essay_context(const std::vector<std::string>& words, int64_t size,
                          const std::vector<std::string>& needles, const std::vector<int>& depths) {
  const std::vector<std::string> sentences = split_sentences(essay_prefix(words, size));
  const auto n = static_cast<int64_t>(sentences.size());
  std::vector<int64_t> cuts = {0};
  for (int depth : depths) cuts.push_back(depth_position(n, depth));
  cuts.push_back(n);
  std::vector<std::string> parts;
  for (size_t i = 1; i < cuts.size(); ++i) {
    parts.push_back(join(std::vector<std::string>(sentences.begin() + cuts[i - 1], sentences.begin() + cuts[i]), " "));
    if (i - 1 < needles.size()) parts.push_back(needles[i - 1]);
  }
  return join(parts, " ");
}

// One sentence per line with the needles inserted at their depths (deepest first, so each
// position refers to the haystack sentences before it).
std::string line_context(std::vector<std::string> sentences, const std::vector<std::string>& needles,
                         const std::vector<int>& depths) {
  const auto n = static_cast<int64_t>(sentences.size());
  for (size_t i = needles.size(); i-- > 0;)
    sentences.insert(sentences.begin() + depth_position(n, depths[i]), needles[i]);
  return join(sentences, "\n");
}

std::string numbered_list(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += fmt::format("{}{}. {}", i > 0 ? " " : "", i + 1, words[i]);
  return out;
}

std::string random_letters(size_t count, char first, SeededRng& rng) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text.push_back(static_cast<char>(first + rng.below(26)));
  return text;
}

// cwe get_example: `num_words` distinct words, the first 10 repeated `common_repeats` times, the rest
// `uncommon_repeats` times, shuffled and numbered.
std::pair<std::string, std::vector<std::string>> common_words_example(int64_t num_words, int common_repeats,
                                                                      int uncommon_repeats, SeededRng& rng) {
  const auto& pool_words = common_words();
  const auto& adjs = adjectives();
  const auto& ns = nouns();
  const size_t pool = static_cast<size_t>(num_words) <= pool_words.size() ? pool_words.size() : adjs.size() * ns.size();
  MKV_CHECK(static_cast<size_t>(num_words) <= pool, "cwe needs {} distinct words, more than the {} available",
            num_words, pool);
  std::vector<std::string> chosen;
  for (size_t i : rng.sample_indices(pool, static_cast<size_t>(num_words)))
    chosen.push_back(pool == pool_words.size() ? pool_words[i] : adjs[i / ns.size()] + "-" + ns[i % ns.size()]);
  const std::vector<std::string> common(chosen.begin(), chosen.begin() + kCommonWords);
  std::vector<std::string> list;
  for (int r = 0; r < common_repeats; ++r) list.insert(list.end(), common.begin(), common.end());
  for (int r = 0; r < uncommon_repeats; ++r) list.insert(list.end(), chosen.begin() + kCommonWords, chosen.end());
  rng.shuffle(list);
  return {numbered_list(list), common};
}

}  // namespace

const std::vector<TaskSpec>& all_task_specs() {
  using H = HaystackKind;
  using N = NeedleType;
  static const std::vector<TaskSpec> specs = {
      {"niah_single_1", TaskFamily::niah, 128, H::noise, N::words, N::numbers, 1, 1, 1},
      {"niah_single_2", TaskFamily::niah, 128, H::essay, N::words, N::numbers, 1, 1, 1},
      {"niah_single_3", TaskFamily::niah, 128, H::essay, N::words, N::uuids, 1, 1, 1},
      {"niah_multikey_1", TaskFamily::niah, 128, H::essay, N::words, N::numbers, 4, 1, 1},
      {"niah_multikey_2", TaskFamily::niah, 128, H::needle, N::words, N::numbers, 1, 1, 1},
      {"niah_multikey_3", TaskFamily::niah, 128, H::needle, N::uuids, N::uuids, 1, 1, 1},
      {"niah_multivalue", TaskFamily::niah, 128, H::essay, N::words, N::numbers, 1, 4, 1},
      {"niah_multiquery", TaskFamily::niah, 128, H::essay, N::words, N::numbers, 1, 1, 4},
      {"vt", TaskFamily::variable_tracking, 30},
      {"cwe", TaskFamily::common_words, 120},
      {"fwe", TaskFamily::freq_words, 50},
      {"qa_1", TaskFamily::qa, 32},
      {"qa_2", TaskFamily::qa, 32},
  };
  return specs;
}

const TaskSpec& task_spec(std::string_view name) {
  std::vector<std::string> names;
  for (const TaskSpec& spec : all_task_specs()) {
    if (spec.name == name) return spec;
    names.push_back(spec.name);
  }
  fail("unknown RULER task '{}' (known: {})", name, join(names, ", "));
}

int64_t haystack_increment(const TaskSpec& spec, int64_t max_seq_length) {
  switch (spec.family) {
    case TaskFamily::niah:
      if (spec.haystack == HaystackKind::essay) return 500;
      return max_seq_length < 4096 ? 5 : 25;
    case TaskFamily::variable_tracking: return max_seq_length < 4096 ? 5 : 10;
    case TaskFamily::common_words: return 10;
    case TaskFamily::freq_words: return 10;
    case TaskFamily::qa: return 10;
  }
  return 10;
}

const std::vector<int>& needle_depths() {
  static const std::vector<int> depths = [] {
    std::vector<int> d;
    for (int i = 0; i < 40; ++i) d.push_back(static_cast<int>(std::nearbyint(100.0 * i / 39)));
    return d;
  }();
  return depths;
}

BuiltPrompt build_niah(const TaskContext& context, int64_t haystack_size, SeededRng& rng) {
  const TaskSpec& spec = context.spec;
  const int num_keys = std::max(spec.num_keys, spec.num_queries);
  const std::string value_type = type_name(spec.value_type);
  std::vector<std::string> keys, needles;
  std::vector<std::vector<std::string>> values(num_keys);
  for (int k = 0; k < num_keys; ++k) {
    keys.push_back(random_needle_item(spec.key_type, rng));
    for (int v = 0; v < spec.num_values; ++v) {
      values[k].push_back(random_needle_item(spec.value_type, rng));
      needles.push_back(fill(kNeedle, {{"type_needle_v", value_type}, {"key", keys[k]}, {"value", values[k].back()}}));
    }
  }
  rng.shuffle(needles);
  const std::vector<int> depths = draw_depths(needles.size(), rng);

  std::string context_text;
  if (spec.haystack == HaystackKind::essay) {
    MKV_ASSERT(context.essay_words != nullptr);
    context_text = essay_context(*context.essay_words, haystack_size, needles, depths);
  } else {
    std::vector<std::string> sentences;
    for (int64_t i = 0; i < haystack_size; ++i) {
      if (spec.haystack == HaystackKind::noise) {
        sentences.emplace_back(kNoiseSentence);
      } else {  // distractor needles
        const std::string key = random_needle_item(spec.key_type, rng);
        const std::string value = random_needle_item(spec.value_type, rng);
        sentences.push_back(fill(kNeedle, {{"type_needle_v", value_type}, {"key", key}, {"value", value}}));
      }
    }
    context_text = line_context(std::move(sentences), needles, depths);
  }

  BuiltPrompt prompt;
  std::vector<std::string> queries;
  for (size_t i : rng.sample_indices(keys.size(), static_cast<size_t>(spec.num_queries))) {
    queries.push_back(keys[i]);
    prompt.outputs.insert(prompt.outputs.end(), values[i].begin(), values[i].end());
  }
  const std::string query = queries.size() > 1
                                ? join(std::vector<std::string>(queries.begin(), queries.end() - 1), ", ") +
                                      ", and " + queries.back()
                                : queries[0];
  std::string task_template(kNiahTemplate), prefix(kNiahPrefix), shown_type = value_type;
  if (spec.num_queries * spec.num_values == 1) {  // niah.py's singular wording
    for (std::string* text : {&task_template, &prefix}) {
      *text = replace_all(*text, "Some", "A");
      *text = replace_all(*text, "are all", "is");
      *text = replace_all(*text, "are", "is");
      *text = replace_all(*text, "answers", "answer");
    }
    shown_type.pop_back();
  }
  const Vars vars = {{"type_needle_v", shown_type}, {"context", context_text}, {"query", query}};
  prompt.input = fill(task_template, vars);
  prompt.answer_prefix = fill(prefix, vars);
  prompt.others["depths"] = depths;
  prompt.others["haystack_size"] = haystack_size;
  return prompt;
}

BuiltPrompt build_variable_tracking(const TaskContext& context, int64_t num_noise, SeededRng& rng,
                                    bool with_example) {
  const size_t name_length = with_example ? 5 : 3;  // the in-context example uses 3-letter names
  MKV_CHECK(num_noise >= kVtHops + 1, "vt needs at least {} noise sentences, got {}", kVtHops + 1, num_noise);
  std::vector<std::string> names;
  std::set<std::string> used;
  while (names.size() < kVtHops + 1) {
    std::string name = random_letters(name_length, 'A', rng);
    if (used.insert(name).second) names.push_back(std::move(name));
  }
  const std::string value = std::to_string(rng.between(10000, 99998));  // np.random.randint(10000, 99999)
  std::vector<std::string> chain = {fmt::format("VAR {} = {}", names[0], value)};
  for (int j = 0; j < kVtHops; ++j) chain.push_back(fmt::format("VAR {} = VAR {} ", names[j + 1], names[j]));

  std::vector<std::string> sentences(static_cast<size_t>(num_noise), std::string(kNoiseSentence));
  std::vector<size_t> positions = rng.sample_indices(sentences.size(), chain.size());
  std::sort(positions.begin(), positions.end());
  for (size_t j = 0; j < chain.size(); ++j) sentences.insert(sentences.begin() + positions[j] + j, chain[j]);
  const std::string context_text = replace_all(join(sentences, "\n"), ". \n", ".\n");

  const std::string num_v = std::to_string(kVtHops + 1);
  const Vars vars = {{"context", context_text}, {"query", value}, {"num_v", num_v}};
  BuiltPrompt prompt;
  prompt.input = fill(kVtTemplate, vars);
  prompt.answer_prefix = fill(kVtPrefix, vars);
  prompt.outputs = names;
  prompt.others["haystack_size"] = num_noise;
  if (with_example) {
    const BuiltPrompt example = build_variable_tracking(context, context.vt_example_noise, rng, false);
    prompt.input = example.input + example.answer_prefix + " " + join(example.outputs, " ") + "\n\n" + prompt.input;
  }
  return prompt;
}

BuiltPrompt build_common_words(const TaskContext& context, int64_t num_words, SeededRng& rng) {
  MKV_CHECK(num_words >= kCommonWords, "cwe needs at least {} words, got {}", kCommonWords, num_words);
  const bool short_context = context.max_seq_length < 4096;
  const auto [example_list, example_answer] =
      short_context ? common_words_example(20, 3, 1, rng) : common_words_example(40, 10, 3, rng);
  const auto [list, answer] =
      short_context ? common_words_example(num_words, 6, 1, rng) : common_words_example(num_words, 30, 3, rng);
  const std::string example = fill(kCweTemplate, {{"context", example_list}}) + std::string(kCwePrefix) + " " +
                              numbered_list(example_answer);
  BuiltPrompt prompt;
  prompt.input = example + "\n" + fill(kCweTemplate, {{"context", list}});
  prompt.answer_prefix = kCwePrefix;
  prompt.outputs = answer;
  prompt.others["haystack_size"] = num_words;
  return prompt;
}

BuiltPrompt build_freq_words(const TaskContext& context, int64_t num_words, SeededRng& rng) {
  const int64_t vocab_size = (context.max_seq_length - context.spec.tokens_to_generate) / 50;
  MKV_CHECK(vocab_size >= 4, "fwe needs a target length of at least {} tokens, got {}",
            200 + context.spec.tokens_to_generate, context.max_seq_length);
  std::vector<std::string> vocab;
  std::set<std::string> used;
  while (static_cast<int64_t>(vocab.size()) < vocab_size) {
    std::string word = random_letters(6, 'a', rng);
    if (used.insert(word).second) vocab.push_back(std::move(word));
  }
  vocab[0] = "...";  // the most frequent coded word is noise
  std::vector<std::string> words;
  for (int64_t k = 1; k <= vocab_size; ++k) {
    const double kd = static_cast<double>(k);
    const auto count = static_cast<int64_t>(static_cast<double>(num_words) * (1.0 / (kd * kd)) / kZeta2);
    words.insert(words.end(), static_cast<size_t>(count), vocab[static_cast<size_t>(k - 1)]);
  }
  rng.shuffle(words);
  BuiltPrompt prompt;
  prompt.input = fill(kFweTemplate, {{"context", join(words, " ")}});
  prompt.answer_prefix = kFwePrefix;
  prompt.outputs = {vocab[1], vocab[2], vocab[3]};
  prompt.others["haystack_size"] = num_words;
  return prompt;
}

}  // namespace mkv::eval::ruler
