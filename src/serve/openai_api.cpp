#include "serve/openai_api.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/text_file.h"

namespace mkv::serve {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", message, param);
}

// A field the request gives: present and not null (OpenAI clients send explicit nulls for unset
// options).
bool given(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

double number(const json& body, const char* key, double lo, double hi) {
  const json& v = body.at(key);
  if (!v.is_number()) bad(key, fmt::format("'{}' must be a number", key));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) bad(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, shown(v)));
  return x;
}

// A whole number that int64_t cannot hold: JSON parses it as unsigned (up to 2^64) or as a float
// (more digits, or an exponent form like 1e23).
bool whole_beyond_int64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max());
  if (!v.is_number_float()) return false;
  const double x = v.get<double>();
  return x == std::floor(x) && (x >= 0x1p63 || x < -0x1p63);
}

int64_t integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  const json& v = body.at(key);
  if (whole_beyond_int64(v)) bad(key, fmt::format("'{}' must be in [{}, {}], got {} (out of range)", key, lo, hi, shown(v)));
  if (!v.is_number_integer()) bad(key, fmt::format("'{}' must be an integer", key));
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) bad(key, fmt::format("'{}' must be in [{}, {}], got {}", key, lo, hi, x));
  return x;
}

std::string text(const json& v, const std::string& key) {
  if (!v.is_string()) bad(key, fmt::format("'{}' must be a string", key));
  return v.get<std::string>();
}

bool boolean(const json& body, const char* key) {
  const json& v = body.at(key);
  if (!v.is_boolean()) bad(key, fmt::format("'{}' must be true or false", key));
  return v.get<bool>();
}

bool is_text_part(const json& part) {
  if (!part.is_object()) return false;
  const auto type = part.find("type"), text = part.find("text");
  return type != part.end() && *type == "text" && text != part.end() && text->is_string();
}

// OpenAI's message content: a string, or an array of {"type": "text", "text": ...} parts.
std::string message_content(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad(where, fmt::format("'{}' must be a string or an array of text parts", where));
  std::string out;
  for (std::size_t i = 0; i < content.size(); ++i) {
    if (!is_text_part(content[i]))
      bad(where, fmt::format("'{}[{}]': only {{\"type\": \"text\", \"text\": ...}} parts are supported", where, i));
    out += content[i]["text"].get<std::string>();
  }
  return out;
}

// A parse error's text, cut short: nlohmann quotes the last token read, which may be a string of
// megabytes.
std::string parse_error_text(const json::exception& e) {
  constexpr std::size_t kMaxChars = 300;
  std::string message = json_error_text(e.what());
  if (message.size() > kMaxChars) message = message.substr(0, kMaxChars) + "...";
  return message;
}

}  // namespace

std::string shown(const json& value) {
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  if (value.is_number_float()) return fmt::format("{}", value.get<double>());  // shortest form: 1e+23
  return value.dump();  // an integer, true, false or null
}

// A message that quotes the request (a bad kv_press, a field's value) goes back at most this long,
// cut at a UTF-8 character boundary: a 400 never echoes a megabyte.
constexpr std::size_t kMaxErrorMessageBytes = 1024;

std::string bounded_message(std::string_view message) {
  if (message.size() <= kMaxErrorMessageBytes) return std::string(message);
  std::size_t cut = kMaxErrorMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return fmt::format("{}... (message cut: {} bytes in all)", message.substr(0, cut), message.size());
}

json error_body(const ApiError& error) {
  json fields = {{"message", bounded_message(error.what())},
                 {"type", error.type},
                 {"param", error.param.empty() ? json(nullptr) : json(error.param)},
                 {"code", error.status}};
  fields.update(error.extra);
  return {{"error", std::move(fields)}};
}

std::vector<int32_t> token_ids(const json& array, int n_vocab, const std::string& where, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const json& t = array[i];
    const bool id = t.is_number_integer() && !whole_beyond_int64(t) && t.get<int64_t>() >= 0 && t.get<int64_t>() < n_vocab;
    if (!id)
      throw ApiError(400, "invalid_request_error",
                     fmt::format("{}[{}] must be a token id in [0, {}), got {}", where, i, n_vocab, shown(t)), param);
    ids.push_back(t.get<int32_t>());
  }
  return ids;
}

namespace {

// Fields of OpenAI's and llama-server's requests that would change the reply and that momentkv does
// not implement: given with any value but the one that changes nothing, they are refused (400
// naming the field) rather than ignored. Fields that change only speed or bookkeeping
// (cache_prompt, id_slot, n_keep, user, ...) are accepted.
struct UnsupportedField {
  const char* key;
  const char* what;                        // why it is refused, for the message
  bool (*neutral)(const json& value);      // the value that asks for nothing (accepted)
};

bool is_false(const json& v) { return v.is_boolean() && !v.get<bool>(); }
bool is_empty(const json& v) {  // json::empty() is false for every string
  return v.is_string() ? v.get_ref<const std::string&>().empty() : (v.is_array() || v.is_object()) && v.empty();
}
template <int N, int D = 1>
bool equals(const json& v) { return v.is_number() && v.get<double>() == double(N) / D; }

constexpr UnsupportedField kUnsupported[] = {
    {"grammar", "GBNF grammars are not implemented yet", is_empty},
    {"json_schema", "JSON-schema constrained decoding is not implemented yet", is_empty},
    {"response_format", "only {\"type\": \"text\"} is supported (JSON modes are not implemented yet)",
     [](const json& v) { return v.is_object() && v.size() == 1 && v.contains("type") && v["type"] == "text"; }},
    {"presence_penalty", "presence_penalty is not implemented (0 only)", equals<0>},
    {"frequency_penalty", "frequency_penalty is not implemented (0 only)", equals<0>},
    {"repeat_penalty", "repeat_penalty is not implemented (1 only)", equals<1>},
    {"mirostat", "mirostat sampling is not implemented (0 only)", equals<0>},
    {"typical_p", "typical_p is not implemented (1 only)", equals<1>},
    {"dynatemp_range", "dynamic temperature is not implemented (0 only)", equals<0>},
    {"xtc_probability", "XTC sampling is not implemented (0 only)", equals<0>},
    {"dry_multiplier", "DRY sampling is not implemented (0 only)", equals<0>},
    {"top_n_sigma", "top-n-sigma sampling is not implemented (-1 only)", equals<-1>},
    {"samplers", "a custom sampler order is not supported", is_empty},
    {"tools", "tool calls are not implemented", is_empty},
    {"functions", "function calls are not implemented", is_empty},
    {"suffix", "insertion (suffix) is not supported", is_empty},
    {"best_of", "best_of is not supported (1 only)", equals<1>},
    {"return_tokens", "return_tokens is not implemented", is_false},
    {"post_sampling_probs", "post_sampling_probs is not implemented", is_false},
    {"response_fields", "response_fields is not implemented", is_empty},
    {"return_progress", "return_progress is not implemented", is_false},
    {"lora", "LoRA adapters are not supported", is_empty},
    {"image_data", "images are not supported", is_empty},
    {"multimodal_data", "multimodal input is not supported", is_empty},
};

// logit_bias as OpenAI gives it, {"15": -100} (a token id as a decimal key), or as llama-server
// does, also [[15, -1.5], ["Hello", false]] and text keys: a bias is a number, or false to ban the
// token; a text's tokens each get its bias.
void parse_logit_bias(const json& value, int n_vocab, CompletionRequest& r) {
  constexpr std::size_t kMaxEntries = 4096;
  constexpr double kMaxBias = 1e9;
  const auto bias_of = [](const json& v, const std::string& where) -> float {
    if (v.is_boolean() && !v.get<bool>()) return -std::numeric_limits<float>::infinity();
    if (!v.is_number() || !(std::fabs(v.get<double>()) <= kMaxBias))
      bad("logit_bias", fmt::format("{} must be a number in [-1e9, 1e9], or false to ban the token; got {}", where,
                                    shown(v)));
    return float(v.get<double>());
  };
  const auto add = [&](const json& token, float bias, const std::string& where) {
    // A decimal key or an integer is a token id; any other text is tokenized.
    const bool decimal_text = token.is_string() && !token.get_ref<const std::string&>().empty() &&
                              token.get_ref<const std::string&>().find_first_not_of("0123456789") == std::string::npos;
    if (token.is_number_integer() || decimal_text) {
      const double id = !token.is_string() ? token.get<double>()
                        : token.get_ref<const std::string&>().size() > 10 ? double(n_vocab)  // out of range
                                                                           : std::stod(token.get<std::string>());
      if (!(id >= 0 && id < n_vocab))
        bad("logit_bias", fmt::format("{}: token id {} is outside the vocabulary [0, {})", where, shown(token), n_vocab));
      r.sampling.logit_bias.emplace_back(int32_t(id), bias);
    } else if (token.is_string()) {
      r.logit_bias_text.emplace_back(token.get<std::string>(), bias);
    } else {
      bad("logit_bias", fmt::format("{}: a token must be an id or a text, got {}", where, shown(token)));
    }
  };
  if (value.is_object()) {
    if (value.size() > kMaxEntries) bad("logit_bias", fmt::format("'logit_bias' has more than {} entries", kMaxEntries));
    for (const auto& [key, bias] : value.items()) add(json(key), bias_of(bias, "logit_bias[\"" + key + "\"]"), "logit_bias");
  } else if (value.is_array()) {
    if (value.size() > kMaxEntries) bad("logit_bias", fmt::format("'logit_bias' has more than {} entries", kMaxEntries));
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string where = fmt::format("logit_bias[{}]", i);
      if (!value[i].is_array() || value[i].size() != 2) bad("logit_bias", where + " must be [token, bias]");
      add(value[i][0], bias_of(value[i][1], where + "[1]"), where);
    }
  } else {
    bad("logit_bias", "'logit_bias' must be an object {\"token id\": bias} or a list of [token, bias]");
  }
}

void refuse_unsupported(const json& body) {
  for (const UnsupportedField& f : kUnsupported)
    if (given(body, f.key) && !f.neutral(body[f.key]))
      bad(f.key, fmt::format("'{}' is not supported: {}; leave it out", f.key, f.what));
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body, bool chat, uint64_t random_seed, int n_vocab) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {
    bad("", fmt::format("the request body is not valid JSON ({})", parse_error_text(e)));
  }
  if (!j.is_object()) bad("", "the request body must be a JSON object");
  refuse_unsupported(j);
  CompletionRequest r;
  r.chat = chat;
  r.sampling.seed = random_seed;
  if (chat) {
    if (!j.contains("messages")) bad("messages", "'messages' is required");
    const json& messages = j["messages"];
    if (!messages.is_array() || messages.empty()) bad("messages", "'messages' must be a non-empty array");
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const std::string where = fmt::format("messages[{}]", i);
      const json& m = messages[i];
      if (!m.is_object() || !m.contains("role") || !m.contains("content"))
        bad(where, fmt::format("'{}' must be an object with 'role' and 'content'", where));
      const std::string role = text(m["role"], where + ".role");
      if (role != "system" && role != "user" && role != "assistant" && role != "tool")
        bad(where + ".role", fmt::format("'{}.role' must be system, user, assistant or tool, got '{}'", where, role));
      r.messages.push_back({role, message_content(m["content"], where + ".content")});
    }
  } else {
    if (!j.contains("prompt")) bad("prompt", "'prompt' is required");
    const json& prompt = j["prompt"];
    if (!prompt.is_array()) {
      r.prompt = text(prompt, "prompt");
    } else if (prompt.size() == 1 && prompt[0].is_string()) {
      r.prompt = prompt[0].get<std::string>();
    } else if (prompt.size() == 1 && prompt[0].is_array()) {
      r.prompt_ids = token_ids(prompt[0], n_vocab, "prompt[0]", "prompt");
    } else if (!prompt.empty() && !prompt[0].is_string() && !prompt[0].is_array()) {
      r.prompt_ids = token_ids(prompt, n_vocab, "prompt", "prompt");
    } else {
      bad("prompt", "'prompt' must be a string, token ids, or an array holding one of them (one prompt per request)");
    }
  }
  constexpr int64_t kMaxTokens = 1 << 24;
  if (given(j, "max_tokens")) r.max_tokens = int(integer(j, "max_tokens", -1, kMaxTokens));
  if (given(j, "max_completion_tokens")) r.max_tokens = int(integer(j, "max_completion_tokens", -1, kMaxTokens));
  if (given(j, "n_predict")) r.max_tokens = int(integer(j, "n_predict", -1, kMaxTokens));
  if (given(j, "temperature")) r.sampling.temperature = float(number(j, "temperature", 0, 100));
  if (given(j, "top_p")) {
    const json& top_p = j["top_p"];  // (0, 1]: one message for every value outside
    if (top_p.is_number() && !(top_p.get<double>() > 0 && top_p.get<double>() <= 1))
      bad("top_p", fmt::format("'top_p' must be in (0, 1], got {}", shown(top_p)));
    r.sampling.top_p = float(number(j, "top_p", 0, 1));
  }
  if (given(j, "top_k")) r.sampling.top_k = int(integer(j, "top_k", 0, 1 << 30));
  if (given(j, "min_p")) r.sampling.min_p = float(number(j, "min_p", 0, 1));
  if (given(j, "seed")) {
    const int64_t seed = integer(j, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (seed != -1) r.sampling.seed = uint64_t(seed);  // -1: random, as when absent (llama-server's convention)
  }
  if (given(j, "stop")) {
    const json& stop = j["stop"];
    if (stop.is_string()) {
      r.stop.push_back(stop.get<std::string>());
    } else if (stop.is_array() && stop.size() <= 16) {
      for (const json& s : stop) r.stop.push_back(text(s, "stop"));
    } else {
      bad("stop", "'stop' must be a string or an array of at most 16 strings");
    }
  }
  if (given(j, "n") && integer(j, "n", 1, 1) != 1) bad("n", "only n=1 is supported");
  constexpr int64_t kMaxTopLogprobs = 20;
  if (chat) {
    const bool wanted = given(j, "logprobs") && boolean(j, "logprobs");
    if (given(j, "top_logprobs")) {
      const int top = int(integer(j, "top_logprobs", 0, kMaxTopLogprobs));
      if (!wanted) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
      r.logprobs = top;
    } else if (wanted) {
      r.logprobs = 0;
    }
  } else {
    if (given(j, "logprobs")) r.logprobs = int(integer(j, "logprobs", 0, kMaxTopLogprobs));
    if (given(j, "n_probs"))  // llama-server: 0 asks for none
      if (const int n = int(integer(j, "n_probs", 0, kMaxTopLogprobs)); n > 0) r.logprobs = n;
  }
  if (given(j, "logit_bias")) parse_logit_bias(j["logit_bias"], n_vocab, r);
  if (given(j, "echo") && boolean(j, "echo")) bad("echo", "'echo' is not supported: the reply never repeats the prompt");
  if (given(j, "stream")) r.stream = boolean(j, "stream");
  if (given(j, "ignore_eos")) r.ignore_eos = boolean(j, "ignore_eos");
  if (j.contains("stream_options") && j["stream_options"].is_object() && j["stream_options"].contains("include_usage"))
    r.include_usage = j["stream_options"]["include_usage"].is_boolean() && j["stream_options"]["include_usage"].get<bool>();
  if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
  if (given(j, "kv_press")) r.kv_press = text(j["kv_press"], "kv_press");
  if (given(j, "kv_budget")) r.kv_budget = integer(j, "kv_budget", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (given(j, "kv_compression_ratio")) {
    if (!j["kv_compression_ratio"].is_number()) bad("kv_compression_ratio", "'kv_compression_ratio' must be a number");
    r.kv_compression_ratio = j["kv_compression_ratio"].get<double>();
  }
  return r;
}

void resolve_logit_bias(CompletionRequest& r, int n_vocab,
                        const std::function<std::vector<int32_t>(const std::string&)>& tokenize) {
  for (const auto& [text, bias] : r.logit_bias_text)
    for (const int32_t id : tokenize(text)) r.sampling.logit_bias.emplace_back(id, bias);
  r.logit_bias_text.clear();
  std::vector<bool> banned(std::size_t(n_vocab), false);
  int64_t bans = 0;
  for (const auto& [id, bias] : r.sampling.logit_bias)
    if (bias == -std::numeric_limits<float>::infinity() && !banned[std::size_t(id)]) banned[std::size_t(id)] = true, ++bans;
  if (bans == n_vocab) bad("logit_bias", "'logit_bias' bans every token of the vocabulary");
}

PressConfig request_press(const CompletionRequest& request, const PressConfig& server_press) {
  const std::string budget_field = request.kv_budget ? "kv_budget" : "kv_compression_ratio";
  std::optional<Budget> budget;
  try {
    budget = PressConfig::budget_from_flags(request.kv_budget, request.kv_compression_ratio,
                                            {"kv_budget", "kv_compression_ratio"});
  } catch (const MkvError& e) {
    bad(budget_field, e.what());
  }
  // The press: the request's, else the server's; the budget: the request's, else the spec's, else
  // the server press's.
  PressConfig press = server_press;
  if (request.kv_press) {
    try {
      press = PressConfig::parse(*request.kv_press);
    } catch (const MkvError& e) {
      bad("kv_press", e.what());
    }
  }
  if (budget) {
    if (press.is_full()) bad(budget_field, fmt::format("{} needs a compressing press: give kv_press too (the {} press is 'full')",
                                                       budget_field, request.kv_press ? "requested" : "server's"));
    if (request.kv_press && press.budget())
      bad(budget_field, fmt::format("kv_press '{}' carries its own budget; give {} or the spec's budget, not both",
                                    *request.kv_press, budget_field));
    return press.without_budget().with_budget(*budget);
  }
  if (!press.budget() && !press.is_full()) {
    if (!server_press.budget())
      bad("kv_press", fmt::format("press '{}' needs a budget: give kv_budget or kv_compression_ratio (or budget= in kv_press)",
                                  press.name()));
    press = press.with_budget(*server_press.budget());
  }
  return press;
}

json usage_json(const CompletionOutcome& o) {
  return {{"prompt_tokens", o.prompt_tokens},
          {"completion_tokens", o.completion_tokens},
          {"total_tokens", o.prompt_tokens + o.completion_tokens},
          {"kv_bytes_held", o.kv_bytes_held},
          {"kv_bytes_full", o.kv_bytes_full},
          {"kv_press", o.press}};
}

TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_n,
                           const std::function<std::string(int32_t)>& piece) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float l : logits) sum += std::exp(double(l - max));
  const float log_z = max + float(std::log(sum));
  auto alternative = [&](int32_t id) { return TokenLogprob::Alternative{id, piece(id), logits[std::size_t(id)] - log_z}; };
  TokenLogprob t;
  t.chosen = alternative(token);
  if (top_n <= 0) return t;
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto n = std::min<std::size_t>(std::size_t(top_n), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), [&](int32_t a, int32_t b) {
    return logits[std::size_t(a)] > logits[std::size_t(b)] || (logits[std::size_t(a)] == logits[std::size_t(b)] && a < b);
  });
  for (std::size_t i = 0; i < n; ++i) t.top.push_back(alternative(ids[i]));
  return t;
}

namespace {

json bytes_of(const std::string& piece) {
  json bytes = json::array();
  for (const char c : piece) bytes.push_back(int(static_cast<unsigned char>(c)));
  return bytes;
}

}  // namespace

json openai_logprobs(const CompletionRequest& request, std::span<const TokenLogprob> logprobs, std::size_t first_offset) {
  if (request.chat) {
    json content = json::array();
    for (const TokenLogprob& t : logprobs) {
      json top = json::array();
      for (const auto& a : t.top) top.push_back({{"token", a.piece}, {"logprob", a.logprob}, {"bytes", bytes_of(a.piece)}});
      content.push_back({{"token", t.chosen.piece}, {"logprob", t.chosen.logprob}, {"bytes", bytes_of(t.chosen.piece)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  std::size_t offset = first_offset;
  for (const TokenLogprob& t : logprobs) {
    tokens.push_back(t.chosen.piece);
    token_logprobs.push_back(t.chosen.logprob);
    json top = json::object();
    for (const auto& a : t.top) top[a.piece] = a.logprob;
    top_logprobs.push_back(top);
    offsets.push_back(offset);
    offset += t.chosen.piece.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", request.logprobs > 0 ? top_logprobs : json(nullptr)},
          {"text_offset", offsets}};
}

json native_probabilities(std::span<const TokenLogprob> logprobs) {
  json probabilities = json::array();
  for (const TokenLogprob& t : logprobs) {
    json top = json::array();
    for (const auto& a : t.top)
      top.push_back({{"id", a.id}, {"token", a.piece}, {"logprob", a.logprob}, {"bytes", bytes_of(a.piece)}});
    probabilities.push_back({{"id", t.chosen.id}, {"token", t.chosen.piece}, {"logprob", t.chosen.logprob},
                             {"bytes", bytes_of(t.chosen.piece)}, {"top_logprobs", top}});
  }
  return probabilities;
}

json timings_json(const CompletionOutcome& o) {
  auto part = [](int64_t n, double seconds, const char* prefix) {
    const double ms = 1000.0 * seconds;
    const std::string p = prefix;
    return json{{p + "_n", n},
                {p + "_ms", ms},
                {p + "_per_token_ms", n > 0 ? ms / double(n) : 0.0},
                {p + "_per_second", seconds > 0 ? double(n) / seconds : 0.0}};
  };
  json timings = part(o.prompt_tokens, o.prompt_seconds, "prompt");
  timings.update(part(o.completion_tokens, o.decode_seconds, "predicted"));
  return timings;
}

json native_response(const CompletionRequest& r, const CompletionOutcome& o, const std::string& model,
                     const std::string& content) {
  // The shortest decimal that reads back as the float (0.8, not 0.800000011920929).
  const auto shortest = [](float x) { return std::stod(fmt::format("{}", x)); };
  json body = {{"index", 0},
               {"content", content},
               {"tokens", json::array()},  // llama-server fills it only for return_tokens, which is refused
               {"has_new_line", content.find('\n') != std::string::npos},
               {"generation_settings", {{"n_predict", r.max_tokens},
                                        {"seed", r.sampling.seed},
                                        {"temperature", shortest(r.sampling.temperature)},
                                        {"top_k", r.sampling.top_k},
                                        {"top_p", shortest(r.sampling.top_p)},
                                        {"min_p", shortest(r.sampling.min_p)},
                                        {"stop", r.stop},
                                        {"ignore_eos", r.ignore_eos},
                                        {"n_probs", std::max(r.logprobs, 0)},
                                        {"stream", r.stream},
                                        {"kv_press", o.press}}},
               {"stop", true},
               {"model", model},
               {"stop_type", o.stop_type},
               {"stopping_word", o.stopping_word},
               {"tokens_predicted", o.completion_tokens},
               {"tokens_evaluated", o.prompt_tokens},
               {"truncated", false},
               {"timings", timings_json(o)},
               {"kv_bytes_held", o.kv_bytes_held},
               {"kv_bytes_full", o.kv_bytes_full},
               {"kv_press", o.press}};
  if (!o.logprobs.empty()) body["completion_probabilities"] = native_probabilities(o.logprobs);
  return body;
}

json native_stream_piece(const CompletionRequest& request, const std::string& text,
                         std::span<const TokenLogprob> logprobs) {
  json piece = {{"index", 0}, {"content", text}, {"stop", false}};
  if (request.logprobs >= 0) piece["completion_probabilities"] = native_probabilities(logprobs);
  return piece;
}

json completion_response(const CompletionRequest& request, const CompletionOutcome& outcome,
                         const ResponseHeader& header) {
  json choice = {{"index", 0}, {"finish_reason", outcome.finish_reason}};
  choice["logprobs"] = request.logprobs >= 0 ? openai_logprobs(request, outcome.logprobs) : json(nullptr);
  if (request.chat)
    choice["message"] = {{"role", "assistant"}, {"content", outcome.text}};
  else
    choice["text"] = outcome.text;
  return {{"id", header.id},
          {"object", request.chat ? "chat.completion" : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", header.system_fingerprint},
          {"choices", json::array({choice})},
          {"usage", usage_json(outcome)},
          {"timings", timings_json(outcome)}};
}

namespace {

json chunk_of(const ResponseHeader& header, const char* object, json choice) {
  return {{"id", header.id},
          {"object", object},
          {"created", header.created},
          {"model", header.model},
          {"system_fingerprint", header.system_fingerprint},
          {"choices", json::array({std::move(choice)})}};
}

}  // namespace

json stream_chunk(const CompletionRequest& request, const ResponseHeader& header, const std::string& text,
                  const std::optional<std::string>& finish_reason, const json& logprobs) {
  json choice = {{"index", 0}, {"finish_reason", finish_reason ? json(*finish_reason) : json(nullptr)}};
  choice["logprobs"] = logprobs;
  if (request.chat) {
    json delta = json::object();
    if (!text.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  return chunk_of(header, request.chat ? "chat.completion.chunk" : "text_completion", std::move(choice));
}

json stream_role_chunk(const ResponseHeader& header) {
  return chunk_of(header, "chat.completion.chunk",
                  {{"index", 0},
                   {"finish_reason", nullptr},
                   {"logprobs", nullptr},
                   {"delta", {{"role", "assistant"}, {"content", nullptr}}}});
}

}  // namespace mkv::serve
