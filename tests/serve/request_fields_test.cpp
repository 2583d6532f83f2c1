// The request fields serve reads (src/serve/openai_api.cpp), without a server: fields that would
// change the reply and are not implemented are refused with a 400 naming them, unless given with
// the value that asks for nothing; logit_bias in both its forms; llama-server's extra error and
// response fields.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <limits>
#include <string>
#include <vector>

#include "serve/openai_api.h"

namespace mkv::serve {
namespace {

using nlohmann::json;

constexpr int kVocab = 512;

CompletionRequest parse(json body) {
  body["prompt"] = "Once upon a time";
  return parse_completion_request(body.dump(), /*chat=*/false, /*random_seed=*/7, kVocab);
}

// The 400 a body gets: its param, and whether the message names the field.
std::string refused_param(const json& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(std::string(e.what()).find("'" + e.param + "' is not supported"), std::string::npos) << e.what();
    return e.param;
  }
  return "";
}

TEST(RequestFields, FieldsThatWouldChangeTheReplyAreRefusedNotIgnored) {
  const json refused[] = {
      {{"grammar", "root ::= \"a\""}},
      {{"json_schema", {{"type", "object"}}}},
      {{"response_format", {{"type", "json_object"}}}},
      {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", json::object()}}}}}},
      {{"presence_penalty", 0.5}},
      {{"frequency_penalty", -1}},
      {{"repeat_penalty", 1.1}},
      {{"mirostat", 2}},
      {{"typical_p", 0.5}},
      {{"dry_multiplier", 0.8}},
      {{"tools", json::array({{{"type", "function"}}})}},
      {{"suffix", "The end."}},
      {{"best_of", 3}},
      {{"return_tokens", true}},
      {{"post_sampling_probs", true}},
      {{"response_fields", json::array({"content"})}},
      {{"samplers", json::array({"top_k"})}},
  };
  for (const json& body : refused) EXPECT_EQ(refused_param(body), body.begin().key()) << body.dump();
}

TEST(RequestFields, TheValueThatAsksForNothingAndSpeedOnlyFieldsAreAccepted) {
  const json accepted[] = {
      {{"grammar", ""}},
      {{"json_schema", nullptr}},
      {{"response_format", {{"type", "text"}}}},
      {{"logit_bias", json::object()}},
      {{"presence_penalty", 0}},
      {{"frequency_penalty", 0.0}},
      {{"repeat_penalty", 1}},
      {{"tools", json::array()}},
      {{"return_tokens", false}},
      {{"cache_prompt", true}},
      {{"id_slot", 0}},
      {{"n_keep", 16}},
      {{"user", "someone"}},
  };
  for (const json& body : accepted) EXPECT_EQ(refused_param(body), "") << body.dump();
  EXPECT_EQ(parse({{"temperature", 0}, {"logit_bias", json::object()}}).sampling.temperature, 0.0f);
}

TEST(RequestFields, ErrorsCarryLlamaServersExtraFieldsAndQuoteAShortPrefix) {
  ApiError error(400, "exceed_context_size_error", "the prompt has 3000 tokens, the context holds 2048", "prompt");
  error.extra = {{"n_prompt_tokens", 3000}, {"n_ctx", 2048}};
  const json body = error_body(error);
  EXPECT_EQ(body["error"]["n_prompt_tokens"], 3000);
  EXPECT_EQ(body["error"]["n_ctx"], 2048);
  EXPECT_EQ(body["error"]["code"], 400);
  EXPECT_EQ(body["error"]["type"], "exceed_context_size_error");
  // A message quoting a megabyte goes back as its first KiB, cut between characters.
  const std::string long_text = std::string(1023, 'a') + "\xc3\xa9" + std::string(1 << 20, 'b');
  const std::string message = error_body(ApiError(400, "invalid_request_error", long_text))["error"]["message"];
  EXPECT_LT(message.size(), 1200u);
  EXPECT_EQ(message.substr(0, 1023), std::string(1023, 'a'));
  EXPECT_EQ(message.substr(1023, 3), "...");  // the two-byte character is not cut in half
  EXPECT_NE(message.find("bytes in all"), std::string::npos);
}

TEST(RequestFields, NativeResponsesCarryLlamaServersFields) {
  CompletionRequest r = parse({{"n_predict", 3}, {"temperature", 0.8}, {"stop", "x"}});
  CompletionOutcome o;
  o.press = "full";
  const json with_newline = native_response(r, o, "model", "a\nb");
  EXPECT_EQ(with_newline["has_new_line"], true);
  EXPECT_EQ(native_response(r, o, "model", "ab")["has_new_line"], false);
  EXPECT_TRUE(with_newline["tokens"].is_array());
  const json& settings = with_newline["generation_settings"];
  EXPECT_EQ(settings["n_predict"], 3);
  EXPECT_EQ(settings["temperature"], 0.8);
  EXPECT_EQ(settings["stop"], json::array({"x"}));
  EXPECT_EQ(settings["seed"], 7);
}

TEST(RequestFields, LogitBiasInOpenAIsAndLlamaServersForms) {
  const float ban = -std::numeric_limits<float>::infinity();
  const CompletionRequest openai = parse({{"logit_bias", {{"15", -100}, {"3", 5.5}}}});
  EXPECT_EQ(openai.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{15, -100.0f}, {3, 5.5f}}));
  CompletionRequest llama = parse({{"logit_bias", json::array({json::array({15, false}), json::array({"Once", 2}),
                                                               json::array({4, -1.5})})}});
  EXPECT_EQ(llama.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{15, ban}, {4, -1.5f}}));
  ASSERT_EQ(llama.logit_bias_text.size(), 1u);
  resolve_logit_bias(llama, kVocab, [](const std::string& text) {
    EXPECT_EQ(text, "Once");
    return std::vector<int32_t>{40, 41};
  });
  EXPECT_EQ(llama.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{15, ban}, {4, -1.5f}, {40, 2.0f}, {41, 2.0f}}));
  EXPECT_TRUE(llama.logit_bias_text.empty());
  // Bad forms: a 400 naming logit_bias.
  for (const json& bad : {json{{"logit_bias", {{"999", 1}}}}, json{{"logit_bias", {{"15", "x"}}}},
                          json{{"logit_bias", {{"15", true}}}}, json{{"logit_bias", json::array({json::array({15})})}},
                          json{{"logit_bias", json::array({json::array({1.5, 1})})}}, json{{"logit_bias", 3}},
                          json{{"logit_bias", {{"99999999999999999999999999", 1}}}}, json{{"logit_bias", {{"1", 1e300}}}}}) {
    try {
      parse(bad);
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param, "logit_bias") << bad.dump();
    }
  }
  json ban_all = json::object();
  for (int id = 0; id < kVocab; ++id) ban_all[std::to_string(id)] = false;
  CompletionRequest all = parse({{"logit_bias", ban_all}});
  EXPECT_THROW(resolve_logit_bias(all, kVocab, [](const std::string&) { return std::vector<int32_t>{}; }), ApiError);
}

}  // namespace
}  // namespace mkv::serve
