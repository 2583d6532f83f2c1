// momentkv logits: writes the logits of every position of a token-id list as raw float32
// [n_tokens][n_vocab], so any reference can be compared from the command line.
#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "core/text_file.h"
#include "engine/session.h"

namespace mkv::cli {
namespace {

// Ids separated by commas and/or whitespace; an optional surrounding [ ] (a JSON array) is allowed.
std::vector<int32_t> parse_ids(const std::string& text, const std::string& source) {
  std::vector<int32_t> ids;
  std::size_t i = 0;
  auto separator = [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '[' || c == ']'; };
  while (i < text.size()) {
    if (separator(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string word = text.substr(i, end - i);
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    MKV_CHECK(used == word.size() && value >= 0 && value <= INT32_MAX, "{}: '{}' is not a token id", source, word);
    ids.push_back(static_cast<int32_t>(value));
    i = end;
  }
  return ids;
}

}  // namespace

int run_logits(const LogitsOptions& o) {
  MKV_CHECK(o.tokens.empty() != o.tokens_file.empty(), "give exactly one of --tokens and --tokens-file");
  MKV_CHECK(!o.output.empty(), "give an output file with -o");
  std::string text = o.tokens;
  std::string source = "--tokens";
  if (!o.tokens_file.empty()) {
    text = read_text_file(o.tokens_file, "--tokens-file");
    source = o.tokens_file;
  }
  const std::vector<int32_t> ids = parse_ids(text, source);
  MKV_CHECK(!ids.empty(), "{}: no token ids given", source);

  LoadedModel m = load_model(o.model);
  SessionOptions so;
  so.ubatch = o.model.ubatch;
  so.n_ctx = o.model.ctx;
  so.kv_storage = m.kv_storage;
  Session session(*m.transformer, so);
  const int n_vocab = m.transformer->config().n_vocab;
  std::vector<float> logits(ids.size() * n_vocab);  // (n_tokens, n_vocab)
  session.evaluate(ids, logits.data());

  std::FILE* out = std::fopen(o.output.c_str(), "wb");
  MKV_CHECK(out != nullptr, "cannot write '{}'", o.output);
  const std::size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), out);
  const bool ok = std::fclose(out) == 0 && written == logits.size();
  MKV_CHECK(ok, "failed writing '{}'", o.output);
  fmt::print(stderr, "wrote {} x {} float32 logits to {}\n", ids.size(), n_vocab, o.output);
  return 0;
}

}  // namespace mkv::cli
