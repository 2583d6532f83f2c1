// The one generation loop (engine/generation.h) on stories260K: the independent greedy golden,
// streamed text, stop strings, cancelling, the context limit and the token budget.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "engine/generation.h"
#include "gguf/gguf_file.h"
#include "model/transformer.h"
#include "support/test_support.h"
#include "text/tokenizer.h"
#include "text/vocab.h"

namespace mkv {
namespace {

class GenerationLoop : public ::testing::Test {
 protected:
  void SetUp() override {
    MKV_REQUIRE_ASSET(model_path, "stories260K.gguf");
    MKV_REQUIRE_ASSET(golden_path, "golden/stories260K_golden.json");
    file_ = std::make_unique<GgufFile>(GgufFile::open(model_path.string()));
    model_ = std::make_unique<Transformer>(*file_, 512);
    tokenizer_ = Tokenizer::create(Vocab::from_gguf(*file_));
    const auto greedy = nlohmann::json::parse(test::read_file(golden_path))["prompt_greedy"];
    prompt_ = greedy["input_ids_with_bos"].get<std::vector<int32_t>>();
    expected_ = greedy["generated"].get<std::vector<int32_t>>();
  }

  Session session(int n_ctx = 0) {
    SessionOptions o;
    o.n_ctx = n_ctx;
    return Session(*model_, o);
  }

  // Greedy generation, every streamed piece collected into `streamed`.
  GenerationResult run(Session& s, GenerationParams params, std::string* streamed,
                       std::function<bool(std::string_view)> on_text = {}) {
    GenerationCallbacks callbacks;
    callbacks.pick = pick_greedy;
    callbacks.on_text = [&](std::string_view text) {
      streamed->append(text);
      return on_text ? on_text(text) : true;
    };
    return generate(s, *tokenizer_, {prompt_, {}}, params, callbacks);
  }

  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> prompt_, expected_;
};

TEST_F(GenerationLoop, GreedyContinuationMatchesTheIndependentGolden) {
  Session s = session();
  GenerationParams params;
  params.max_new_tokens = int(expected_.size());
  params.ignore_eos = true;
  params.reply_starts_text = true;
  std::string streamed;
  const GenerationResult r = run(s, params, &streamed);
  EXPECT_EQ(r.tokens, expected_);
  EXPECT_EQ(r.stop, StopReason::MaxTokens);
  EXPECT_EQ(r.prompt_tokens, int32_t(prompt_.size()));
  EXPECT_EQ(r.text, tokenizer_->decode(expected_));  // the reply as Tokenizer::decode gives it
  EXPECT_EQ(streamed, r.text);                       // and every byte of it was streamed, once
  // The last token is not fed: the cache holds the prompt and all but the last reply token.
  EXPECT_EQ(s.n_past(), int32_t(prompt_.size() + expected_.size() - 1));
}

TEST_F(GenerationLoop, StopStringCutsTheReplyAndIsNeverStreamed) {
  Session reference = session();
  GenerationParams params;
  params.max_new_tokens = int(expected_.size());
  params.ignore_eos = true;
  std::string all;
  const std::string full = run(reference, params, &all).text;
  ASSERT_GT(full.size(), 30u);
  const std::string stop = full.substr(20, 6);
  const std::size_t at = full.find(stop);
  params.stop = {"never-appears", stop};
  Session s = session();
  std::string streamed;
  const GenerationResult r = run(s, params, &streamed);
  EXPECT_EQ(r.stop, StopReason::StopString);
  EXPECT_EQ(r.stop_string, stop);
  EXPECT_EQ(r.text, full.substr(0, at));
  EXPECT_EQ(streamed, r.text);  // the held-back prefix of the stop string was not given out
  EXPECT_LT(r.tokens.size(), expected_.size());
}

TEST_F(GenerationLoop, CallerCancelsAfterTheFirstPiece) {
  Session s = session();
  GenerationParams params;
  params.max_new_tokens = 20;
  params.ignore_eos = true;
  std::string streamed;
  const GenerationResult r = run(s, params, &streamed, [](std::string_view) { return false; });
  EXPECT_EQ(r.stop, StopReason::Cancelled);
  EXPECT_EQ(r.tokens.size(), 1u);
  EXPECT_EQ(s.n_past(), int32_t(prompt_.size()));  // nothing decoded after the cancel
}

// keep_going is asked before every prefill chunk but the first: false stops the prompt there,
// with nothing generated, and the result counts the prompt tokens fed so far.
TEST_F(GenerationLoop, CallerCancelsBetweenPrefillChunks) {
  ASSERT_GE(prompt_.size(), 4u);
  SessionOptions o;
  o.ubatch = 1;
  Session s(*model_, o);
  int asked = 0;
  GenerationCallbacks callbacks;
  callbacks.pick = pick_greedy;
  std::string streamed;
  callbacks.on_text = [&](std::string_view text) {
    streamed.append(text);
    return true;
  };
  callbacks.keep_going = [&] { return ++asked < 3; };  // chunks 2 and 3 go ahead, 4 does not
  GenerationParams params;
  params.max_new_tokens = 5;
  const GenerationResult r = generate(s, *tokenizer_, {prompt_, {}}, params, callbacks);
  EXPECT_EQ(r.stop, StopReason::Cancelled);
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(r.prompt_tokens, 3);
  EXPECT_EQ(s.n_past(), 3);
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_EQ(streamed, "");
  // After a reset the session runs the whole prompt again: the golden continuation.
  s.reset();
  callbacks.keep_going = [] { return true; };
  params.max_new_tokens = int(expected_.size());
  params.ignore_eos = true;
  EXPECT_EQ(generate(s, *tokenizer_, {prompt_, {}}, params, callbacks).tokens, expected_);
}

TEST_F(GenerationLoop, StopsWhenTheContextIsFull) {
  Session s = session(int(prompt_.size()) + 3);
  GenerationParams params;  // unlimited tokens
  params.ignore_eos = true;
  std::string streamed;
  const GenerationResult r = run(s, params, &streamed);
  EXPECT_EQ(r.stop, StopReason::ContextFull);
  EXPECT_EQ(r.tokens.size(), 4u);  // three fit the context; the fourth is picked but never fed
  EXPECT_EQ(s.n_past(), s.n_ctx());
  EXPECT_EQ(std::vector<int32_t>(expected_.begin(), expected_.begin() + 4), r.tokens);
}

TEST_F(GenerationLoop, TokenBudgetAndFeedingTheLastToken) {
  Session s = session();
  GenerationParams params;
  params.max_new_tokens = 0;
  std::string streamed;
  EXPECT_TRUE(run(s, params, &streamed).tokens.empty());
  // A benchmark's tgN: no tokenizer, random picks, N decodes.
  Session bench = session();
  int decodes = 0, picks = 0;
  GenerationCallbacks callbacks;
  callbacks.pick = [&](std::span<const float>) { return int32_t(++picks % 100); };
  callbacks.on_decode = [&] { ++decodes; };
  params.max_new_tokens = 5;
  params.feed_last_token = true;
  const GenerationResult r = continue_generation(bench, nullptr, {}, params, callbacks);
  EXPECT_EQ(r.tokens.size(), 5u);
  EXPECT_EQ(decodes, 5);
  EXPECT_EQ(bench.n_past(), 5);
  EXPECT_TRUE(r.text.empty());
}

TEST_F(GenerationLoop, BadPromptsAreErrors) {
  ASSERT_GT(prompt_.size(), 2u);
  Session s = session(int(prompt_.size()) - 1);
  GenerationCallbacks callbacks;
  callbacks.pick = pick_greedy;
  EXPECT_THROW(generate(s, *tokenizer_, {{}, {}}, {}, callbacks), MkvError);
  EXPECT_THROW(generate(s, *tokenizer_, {prompt_, {}}, {}, callbacks), MkvError);  // longer than the context
  GenerationParams bad;
  bad.max_new_tokens = -2;
  EXPECT_THROW(continue_generation(s, nullptr, {}, bad, callbacks), MkvError);
}

}  // namespace
}  // namespace mkv
