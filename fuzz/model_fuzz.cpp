// libFuzzer target for model files past the GGUF reader: the model's configuration, its tensors'
// shapes and types, its vocabulary and tokenizer. Any input must be refused with MkvError or load
// and run: a short prompt prefilled in chunks with a press compressing after each one, then a few
// greedy decode steps, without a crash. Seeds are tiny random models (`momentkv make-model`
// shapes, written by fuzz/make_model_seeds.sh); the mutations then change their metadata,
// shapes and weights.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/session.h"
#include "fuzz/fuzz_input.h"
#include "gguf/gguf_file.h"
#include "kv/press_config.h"
#include "model/transformer.h"
#include "text/tokenizer.h"

namespace {

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (int32_t i = 1; i < int32_t(logits.size()); ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const mkv::GgufFile file = mkv::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz-input");
    mkv::Transformer model(file, /*max_batch=*/8);
    const auto tokenizer = mkv::Tokenizer::create(mkv::Vocab::from_gguf(file));
    const std::vector<int32_t> prompt = tokenizer->encode("Once upon", true, false);
    constexpr int kContext = 64;  // the seeds' byte vocab makes 15 tokens of the prompt
    if (prompt.empty() || int64_t(prompt.size()) + 4 > kContext) return 0;  // a vocab that spells it longer
    for (const int32_t id : prompt)
      mkv::fuzz::require(id >= 0 && id < model.config().n_vocab, "the tokenizer gave an id the model does not have");

    const auto press = mkv::PressConfig::parse("momentkv:budget=4").make();
    mkv::SessionOptions options;
    options.ubatch = 4;
    options.n_ctx = kContext;
    options.press = press.get();
    options.compress_each_chunk = true;
    mkv::Session session(model, options);
    int32_t token = argmax(session.prefill(prompt));
    for (int step = 0; step < 3; ++step) {
      (void)tokenizer->token_to_piece(token);
      token = argmax(session.decode(token));
    }
  } catch (const mkv::MkvError&) {
    // Refusing a malformed model is the expected outcome for most inputs.
  }
  return 0;
}
