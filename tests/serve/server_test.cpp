// `momentkv serve` end to end: the real binary on a loopback port, driven with cpp-httplib's client.
// Greedy completions equal `momentkv generate --temp 0` (full cache and a press), streams carry the
// same text, every bad request gets OpenAI's error body and the server keeps serving.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "serve/server_process.h"
#include "support/test_support.h"

namespace mkv {
namespace {

using nlohmann::json;

// The CLI's greedy continuation of the prompt in `prompt_file` (stdout minus the echoed prompt).
std::string cli_continuation(const std::string& prompt_file, const std::string& flags) {
  const std::string out_file = (test::temp_dir() / "generate.out").string();
  const std::string command = std::string(MOMENTKV_BIN) + " generate -m " + test::trained_model_path() + " -f " +
                              prompt_file + " --temp 0 " + flags + " > " + out_file + " 2>/dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  const std::string out = test::read_file(out_file), prompt = test::read_file(prompt_file);
  EXPECT_EQ(out.substr(0, prompt.size()), prompt);
  return out.substr(prompt.size(), out.size() - prompt.size() - 1);  // and the final newline
}

json post(httplib::Client& client, const std::string& path, const json& body, int expect_status = 200) {
  const auto res = client.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res) << path;
  if (!res) return json();
  EXPECT_EQ(res->status, expect_status) << path << " " << body.dump() << " -> " << res->body;
  return json::parse(res->body, nullptr, false);
}

// The data: events of a server-sent-events body, [DONE] as the string "[DONE]".
std::vector<json> events_of(const std::string& body) {
  std::vector<json> events;
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const std::size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    events.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    at = end;
  }
  return events;
}

// Asserts an OpenAI error body of this status, type and param.
void expect_error(const json& body, int status, const std::string& type, const std::string& param) {
  ASSERT_TRUE(body.contains("error")) << body.dump();
  EXPECT_EQ(body["error"]["code"], status) << body.dump();
  EXPECT_EQ(body["error"]["type"], type) << body.dump();
  if (param.empty()) EXPECT_TRUE(body["error"]["param"].is_null()) << body.dump();
  else EXPECT_EQ(body["error"]["param"], param) << body.dump();
  EXPECT_FALSE(body["error"]["message"].get<std::string>().empty());
}

using test::connect_loopback;
using test::raw_exchange;
using test::RawReply;
using test::responses_in;

class Serve : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new test::ServerProcess({"-m", test::trained_model_path(), "--metrics"}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120);
    return c;
  }
  static test::ServerProcess* server_;
};
test::ServerProcess* Serve::server_ = nullptr;

const std::string kNeedlePrompt = std::string(MOMENTKV_SOURCE_DIR) + "/tests/engine/data/trained_model_needle.txt";

TEST_F(Serve, HealthModelsAndUnknownRoutes) {
  auto c = client();
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  const json models = json::parse(c.Get("/v1/models")->body);
  EXPECT_EQ(models["object"], "list");
  EXPECT_EQ(models["data"][0]["id"], "stories-needle-2k");
  EXPECT_EQ(models["data"][0]["meta"]["n_ctx"], 2048);
  const json props = json::parse(c.Get("/props")->body);  // llama-server's
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 2048);
  EXPECT_EQ(props["default_generation_settings"]["params"]["top_k"], 40);
  EXPECT_EQ(props["default_generation_settings"]["params"]["temperature"], 0.8);
  EXPECT_EQ(props["default_generation_settings"]["params"]["kv_press"], "full");
  EXPECT_EQ(props["total_slots"], 1);
  EXPECT_TRUE(props["chat_template"].is_string());
  const auto missing = c.Get("/v2/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  expect_error(json::parse(missing->body), 404, "not_found_error", "");
}

TEST_F(Serve, GreedyCompletionsEqualTheCliWithAndWithoutAPress) {
  auto c = client();
  const std::string prompt = test::read_file(kNeedlePrompt);
  const json full = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(full["object"], "text_completion");
  EXPECT_EQ(full["choices"][0]["text"], cli_continuation(kNeedlePrompt, "-n 12"));
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(full["usage"]["completion_tokens"], 12);
  EXPECT_EQ(full["usage"]["kv_bytes_held"], full["usage"]["kv_bytes_full"]);
  EXPECT_EQ(full["usage"]["kv_press"], "full");

  const json pressed = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0},
                                                   {"kv_press", "momentkv:kernel=15"}, {"kv_budget", 64}});
  EXPECT_EQ(pressed["choices"][0]["text"], cli_continuation(kNeedlePrompt, "-n 12 --press momentkv:kernel=15 --kv-budget 64"));
  const json usage = pressed["usage"];
  EXPECT_LT(usage["kv_bytes_held"].get<int64_t>(), usage["kv_bytes_full"].get<int64_t>() / 5);  // 64 of ~1K tokens kept
  EXPECT_NE(usage["kv_press"].get<std::string>().find("budget=64"), std::string::npos) << usage.dump();
  EXPECT_EQ(usage["prompt_tokens"], full["usage"]["prompt_tokens"]);
}

TEST_F(Serve, StreamedChunksCarryTheSameTextAndEndWithDone) {
  auto c = client();
  const json request = {{"prompt", "Once upon a time"}, {"max_tokens", 10}, {"temperature", 0}};
  const json whole = post(c, "/v1/completions", request);
  json streamed_request = request;
  streamed_request["stream"] = true;
  streamed_request["stream_options"] = {{"include_usage", true}};
  const auto res = c.Post("/v1/completions", streamed_request.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::vector<json> events = events_of(res->body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (std::size_t i = 0; i + 2 < events.size(); ++i) text += events[i]["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, whole["choices"][0]["text"]);
  EXPECT_EQ(events[events.size() - 3]["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(events[events.size() - 2]["choices"].empty());  // the usage chunk
  EXPECT_EQ(events[events.size() - 2]["usage"]["completion_tokens"], 10);
}

// POST /completion speaks llama-server's native shape: the same text as /v1/completions, with
// stop_type ("limit", "word" and its stopping_word), the token counts and timings; its stream is
// {"content", "stop": false} events and a last one with "stop": true and no [DONE]. /completions
// answers the same.
TEST(ServeShapes, MetricsOnlyWithTheFlagAndUnderLlamaServersNamesToo) {
  {
    test::ServerProcess quiet({"-m", test::trained_model_path(), "--no-slots"});
    httplib::Client c("127.0.0.1", quiet.port());
    const auto metrics = c.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 501);  // llama-server's default: no metrics without --metrics
    expect_error(json::parse(metrics->body), 501, "not_supported_error", "");
    EXPECT_EQ(c.Get("/slots")->status, 501);
  }
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  post(c, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(c.Get("/slots")->status, 200);  // on by default
  const std::string body = c.Get("/metrics")->body;
  for (const char* name : {"llamacpp:prompt_tokens_total 5", "llamacpp:tokens_predicted_total 4", "llamacpp:n_decode_total",
                           "llamacpp:prompt_seconds_total", "llamacpp:requests_processing 0", "momentkv:prompt_tokens_total 5"})
    EXPECT_NE(body.find(name), std::string::npos) << name << "\n" << body;
}

TEST(ServeShapes, CorsApplyTemplateAndNoWebUi) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--chat-template", "chatml", "--api-key", "k"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  // Every reply names the request's origin as allowed, refusals included; preflights need no key.
  const auto health = c.Get("/health", {{"Origin", "http://a.example"}});
  EXPECT_EQ(health->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
  const auto refused = c.Get("/props", {{"Origin", "http://a.example"}});
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
  const auto preflight = c.Options("/v1/chat/completions", {{"Origin", "http://a.example"},
                                                           {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(preflight);
  EXPECT_EQ(preflight->status, 200);
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Methods"), "GET, POST");
  EXPECT_EQ(preflight->get_header_value("Access-Control-Allow-Origin"), "http://a.example");
  // llama-server's /apply-template: the prompt the chat template renders.
  c.set_bearer_token_auth("k");
  const json applied = post(c, "/apply-template", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}});
  EXPECT_EQ(applied["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n") << applied.dump();
  EXPECT_EQ(c.Get("/")->status, 200);  // the page
  // --cors-origins names the origins allowed; --no-webui takes the page away.
  test::ServerProcess strict({"-m", test::trained_model_path(), "--cors-origins", "http://b.example", "--no-webui"});
  httplib::Client d("127.0.0.1", strict.port());
  EXPECT_EQ(d.Get("/health", {{"Origin", "http://a.example"}})->get_header_value("Access-Control-Allow-Origin"), "");
  EXPECT_EQ(d.Get("/health", {{"Origin", "http://b.example"}})->get_header_value("Access-Control-Allow-Origin"),
            "http://b.example");
  EXPECT_EQ(d.Get("/")->status, 404);
}

TEST(ServeShapes, ChatStreamsOpenWithTheRoleAndEveryResponseNamesTheBuild) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--chat-template", "chatml"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  const json request = {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}},
                        {"max_tokens", 6}, {"temperature", 0}};
  // /chat/completions without /v1 is the same route (llama-server's), and names the build.
  const json whole = post(c, "/chat/completions", request);
  EXPECT_EQ(post(c, "/v1/chat/completions", request)["choices"], whole["choices"]);  // greedy: the same reply
  EXPECT_TRUE(whole["system_fingerprint"].get<std::string>().starts_with("momentkv-")) << whole.dump();
  json streamed = request;
  streamed["stream"] = true;
  const auto res = c.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(res);
  const std::vector<json> events = events_of(res->body);
  ASSERT_GE(events.size(), 3u);
  // The first chunk carries the role only, the rest the text without it (OpenAI's and llama-server's).
  EXPECT_EQ(events[0]["choices"][0]["delta"], (json{{"role", "assistant"}, {"content", nullptr}})) << events[0].dump();
  std::string text;
  for (std::size_t i = 1; i + 1 < events.size(); ++i) {
    const json& delta = events[i]["choices"][0]["delta"];
    EXPECT_FALSE(delta.contains("role")) << events[i].dump();
    if (delta.contains("content")) text += delta["content"].get<std::string>();
    EXPECT_EQ(events[i]["system_fingerprint"], whole["system_fingerprint"]);
  }
  EXPECT_EQ(text, whole["choices"][0]["message"]["content"]);
  EXPECT_EQ(events.back(), "[DONE]");
  const json props = json::parse(c.Get("/props")->body);
  EXPECT_EQ(props["model_path"], test::trained_model_path());
}

TEST_F(Serve, NativeCompletionSpeaksLlamaServersShape) {
  auto c = client();
  const json openai = post(c, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 12}, {"temperature", 0}});
  EXPECT_EQ(openai["timings"]["predicted_n"], 12);
  EXPECT_EQ(openai["timings"]["prompt_n"], openai["usage"]["prompt_tokens"]);
  EXPECT_GT(openai["timings"]["predicted_ms"].get<double>(), 0);
  const json request = {{"prompt", "Once upon a time"}, {"n_predict", 12}, {"temperature", 0}};
  for (const char* path : {"/completion", "/completions"}) {
    const json native = post(c, path, request);
    EXPECT_EQ(native["content"], openai["choices"][0]["text"]) << path;
    EXPECT_EQ(native["stop"], true);
    EXPECT_EQ(native["stop_type"], "limit");
    EXPECT_EQ(native["stopping_word"], "");
    EXPECT_EQ(native["tokens_predicted"], 12);
    EXPECT_EQ(native["tokens_evaluated"], openai["usage"]["prompt_tokens"]);
    EXPECT_EQ(native["timings"]["predicted_n"], 12);
    EXPECT_EQ(native["timings"]["prompt_n"], native["tokens_evaluated"]);
    EXPECT_EQ(native["kv_press"], "full");
  }
  const std::string text = openai["choices"][0]["text"];
  const std::string stop = text.substr(text.find("little") == std::string::npos ? 3 : text.find("little"), 3);
  json stopped_request = request;
  stopped_request["stop"] = {stop};
  const json stopped = post(c, "/completion", stopped_request);
  EXPECT_EQ(stopped["stop_type"], "word");
  EXPECT_EQ(stopped["stopping_word"], stop);
  EXPECT_EQ(stopped["content"], text.substr(0, text.find(stop)));

  json streamed_request = request;
  streamed_request["stream"] = true;
  const auto res = c.Post("/completion", streamed_request.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body.find("[DONE]"), std::string::npos);
  const std::vector<json> events = events_of(res->body);
  ASSERT_GE(events.size(), 2u);
  std::string streamed;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i]["stop"], false);
    streamed += events[i]["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(events.back()["stop"], true);
  EXPECT_EQ(events.back()["content"], "");
  EXPECT_EQ(events.back()["stop_type"], "limit");
  EXPECT_EQ(events.back()["tokens_predicted"], 12);
}

// Log-probabilities are the model's: each reply token's log-softmax, checked against `momentkv
// logits` on the prompt and the reply (the same fp16 cache; the reply decoded one token at a time
// there, evaluated in one pass here), with the most probable alternatives in order. The OpenAI
// completion shape carries the same numbers and text offsets, streamed or not; nothing past a
// stop string's cut.
TEST_F(Serve, LogprobsAreTheModelsLogSoftmax) {
  auto c = client();
  const json native = post(c, "/completion", {{"prompt", "Once upon a time"}, {"n_predict", 6}, {"temperature", 0}, {"n_probs", 3}});
  const json& probs = native["completion_probabilities"];
  ASSERT_EQ(probs.size(), 6u);
  std::vector<int32_t> ids = post(c, "/tokenize", {{"content", "Once upon a time"}, {"add_special", true}})["tokens"];
  const std::size_t n_prompt = ids.size();
  ASSERT_EQ(native["tokens_evaluated"], n_prompt);
  for (const json& p : probs) ids.push_back(p["id"].get<int32_t>());
  const std::string logits_file = (test::temp_dir() / "logprobs.f32").string();
  const std::string command = fmt::format("{} logits -m {} --tokens {} -ctk f16 -ctv f16 -o {} 2>/dev/null", MOMENTKV_BIN,
                                          test::trained_model_path(), fmt::join(ids, ","), logits_file);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string bytes = test::read_file(logits_file);
  const std::size_t n_vocab = bytes.size() / sizeof(float) / ids.size();
  ASSERT_EQ(bytes.size(), ids.size() * n_vocab * sizeof(float));
  std::vector<float> logits(ids.size() * n_vocab);
  std::memcpy(logits.data(), bytes.data(), bytes.size());
  std::string text;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const float* row = logits.data() + (n_prompt - 1 + i) * n_vocab;  // predicts reply token i
    double sum = 0;
    const float max = *std::max_element(row, row + n_vocab);
    for (std::size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(row[v] - max));
    const double log_z = max + std::log(sum);
    EXPECT_NEAR(probs[i]["logprob"].get<double>(), row[ids[n_prompt + i]] - log_z, 1e-3) << "reply token " << i;
    const json& top = probs[i]["top_logprobs"];
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0]["id"], probs[i]["id"]) << "a greedy pick is the most probable token";
    for (std::size_t k = 0; k < top.size(); ++k) {
      EXPECT_NEAR(top[k]["logprob"].get<double>(), row[top[k]["id"].get<int32_t>()] - log_z, 1e-3);
      if (k > 0) {
        EXPECT_GE(top[k - 1]["logprob"].get<double>(), top[k]["logprob"].get<double>());
      }
    }
    text += probs[i]["token"].get<std::string>();
  }
  EXPECT_EQ(text, native["content"]);

  const json openai = post(c, "/v1/completions",
                           {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2}});
  const json& lp = openai["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 6u);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(lp["tokens"][i], probs[i]["token"]);
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), probs[i]["logprob"].get<double>(), 1e-6);
    EXPECT_EQ(lp["text_offset"][i], offset);
    EXPECT_EQ(lp["top_logprobs"][i].size(), 2u);
    offset += lp["tokens"][i].get<std::string>().size();
  }
  EXPECT_TRUE(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}})["choices"][0]["logprobs"].is_null());
  // A stop string inside the third token: the entries end with it.
  json stopped_request = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 0}};
  const std::string third = probs[2]["token"];
  stopped_request["stop"] = third.substr(1);
  const json stopped = post(c, "/v1/completions", stopped_request)["choices"][0];
  EXPECT_EQ(stopped["logprobs"]["tokens"].size(), 3u) << stopped.dump();
  EXPECT_TRUE(stopped["logprobs"]["top_logprobs"].is_null());

  // Streamed, each chunk carries its tokens' entries: together the same as the whole reply's.
  json streamed_request = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 2},
                           {"stream", true}};
  const auto res = c.Post("/v1/completions", streamed_request.dump(), "application/json");
  ASSERT_TRUE(res);
  json tokens = json::array(), offsets = json::array();
  for (const json& e : events_of(res->body)) {
    if (e == "[DONE]" || e["choices"][0]["logprobs"].is_null()) continue;
    for (const json& t : e["choices"][0]["logprobs"]["tokens"]) tokens.push_back(t);
    for (const json& o : e["choices"][0]["logprobs"]["text_offset"]) offsets.push_back(o);
  }
  EXPECT_EQ(tokens, lp["tokens"]);
  EXPECT_EQ(offsets, lp["text_offset"]);
  json native_stream_request = {{"prompt", "Once upon a time"}, {"n_predict", 6}, {"temperature", 0}, {"n_probs", 3},
                                {"stream", true}};
  const auto native_res = c.Post("/completion", native_stream_request.dump(), "application/json");
  ASSERT_TRUE(native_res);
  json native_ids = json::array();
  for (const json& e : events_of(native_res->body))
    if (e.contains("completion_probabilities"))
      for (const json& p : e["completion_probabilities"]) native_ids.push_back(p["id"]);
  json expected_ids = json::array();
  for (const json& p : probs) expected_ids.push_back(p["id"]);
  EXPECT_EQ(native_ids, expected_ids);

  expect_error(post(c, "/v1/completions", {{"prompt", "x"}, {"logprobs", 21}}, 400), 400, "invalid_request_error", "logprobs");
  expect_error(post(c, "/v1/completions", {{"prompt", "x"}, {"echo", true}}, 400), 400, "invalid_request_error", "echo");
  expect_error(post(c, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}, 400),
               400, "invalid_request_error", "top_logprobs");
}

TEST_F(Serve, StopStringsEndTheReplyBeforeThem) {
  auto c = client();
  const json whole = post(c, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}});
  const std::string text = whole["choices"][0]["text"];
  ASSERT_GT(text.size(), 12u);
  const std::string stop = text.substr(8, 4);
  const json cut = post(c, "/v1/completions",
                        {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}, {"stop", {stop}}});
  EXPECT_EQ(cut["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
}

TEST_F(Serve, BadRequestsGetOpenAIErrorsAndTheServerKeepsServing) {
  auto c = client();
  const json ok = {{"prompt", "Once"}, {"max_tokens", 2}};
  auto with = [&](const char* key, json value) {
    json body = ok;
    body[key] = std::move(value);
    return body;
  };
  const auto raw = c.Post("/v1/completions", "{\"prompt\": ", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  expect_error(json::parse(raw->body), 400, "invalid_request_error", "");
  expect_error(post(c, "/v1/completions", json::array({1, 2}), 400), 400, "invalid_request_error", "");
  expect_error(post(c, "/v1/completions", {{"max_tokens", 2}}, 400), 400, "invalid_request_error", "prompt");
  expect_error(post(c, "/v1/completions", with("prompt", 5), 400), 400, "invalid_request_error", "prompt");
  expect_error(post(c, "/v1/completions", with("max_tokens", "x"), 400), 400, "invalid_request_error", "max_tokens");
  expect_error(post(c, "/v1/completions", with("max_tokens", -5), 400), 400, "invalid_request_error", "max_tokens");
  expect_error(post(c, "/v1/completions", with("temperature", -1), 400), 400, "invalid_request_error", "temperature");
  // top_p is in (0, 1]: the same message below and above.
  for (double top_p : {0.0, 2.0}) {
    const json reply = post(c, "/v1/completions", with("top_p", top_p), 400);
    expect_error(reply, 400, "invalid_request_error", "top_p");
    EXPECT_NE(reply["error"]["message"].get<std::string>().find("'top_p' must be in (0, 1]"), std::string::npos) << reply;
  }
  expect_error(post(c, "/v1/completions", with("stop", 3), 400), 400, "invalid_request_error", "stop");
  expect_error(post(c, "/v1/completions", with("n", 2), 400), 400, "invalid_request_error", "n");
  expect_error(post(c, "/v1/completions", with("stream", "yes"), 400), 400, "invalid_request_error", "stream");
  expect_error(post(c, "/v1/completions", with("kv_press", "nosuchpress"), 400), 400, "invalid_request_error", "kv_press");
  expect_error(post(c, "/v1/completions", with("kv_press", "snapkv:kernel=4"), 400), 400, "invalid_request_error",
               "kv_press");
  expect_error(post(c, "/v1/completions", with("kv_press", "snapkv"), 400), 400, "invalid_request_error", "kv_press");
  json zero = with("kv_press", "snapkv");
  zero["kv_budget"] = 0;
  expect_error(post(c, "/v1/completions", zero, 400), 400, "invalid_request_error", "kv_budget");
  expect_error(post(c, "/v1/completions", with("kv_budget", 64), 400), 400, "invalid_request_error", "kv_budget");
  expect_error(post(c, "/v1/completions", with("kv_compression_ratio", 1.5), 400), 400, "invalid_request_error",
               "kv_compression_ratio");
  std::string long_prompt;
  for (int i = 0; i < 1500; ++i) long_prompt += "Tom had a big red ball. ";
  const json too_long = post(c, "/v1/completions", with("prompt", long_prompt), 400);
  expect_error(too_long, 400, "exceed_context_size_error", "prompt");
  EXPECT_GT(too_long["error"]["n_prompt_tokens"].get<int>(), 2048) << too_long.dump();  // llama-server's fields
  EXPECT_EQ(too_long["error"]["n_ctx"], 2048);
  expect_error(post(c, "/v1/chat/completions", {{"messages", "hi"}}, 400), 400, "invalid_request_error", "messages");
  expect_error(post(c, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, 400), 400,
               "invalid_request_error", "messages");  // this model has no chat template
  // Refused from its Content-Length before it is read, so raw: httplib's client would not read the
  // reply once its send failed.
  const RawReply huge = raw_exchange(server_->port(), "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                                          std::to_string(9 << 20) + "\r\n\r\n" + std::string(9 << 20, ' '));
  EXPECT_EQ(huge.status(), 413) << huge.text.substr(0, 300);
  expect_error(huge.body(), 413, "invalid_request_error", "");
  expect_error(post(c, "/detokenize", {{"tokens", {1, 99999}}}, 400), 400, "invalid_request_error", "tokens");
  expect_error(post(c, "/tokenize", {{"text", "x"}}, 400), 400, "invalid_request_error", "content");
  // Still serving.
  EXPECT_EQ(post(c, "/v1/completions", ok)["usage"]["completion_tokens"], 2);
}

// Concurrent clients (each on its own connection) get exactly what they get one at a time.
TEST_F(Serve, ConcurrentRequestsGetTheirSequentialResults) {
  std::vector<json> requests;
  const std::vector<std::string> presses = {"full", "snapkv", "momentkv", "h2o"};
  for (int i = 0; i < 8; ++i) {
    json r = {{"prompt", "Once upon a time, Tom " + std::to_string(i)}, {"max_tokens", 12}, {"temperature", 0}};
    if (presses[i % 4] != "full") {
      r["kv_press"] = presses[i % 4];
      r["kv_budget"] = 8;
    }
    requests.push_back(r);
  }
  std::vector<json> sequential;
  auto c = client();
  for (const json& r : requests) sequential.push_back(post(c, "/v1/completions", r));
  std::vector<json> concurrent(requests.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] {
      auto own = client();
      concurrent[i] = post(own, "/v1/completions", requests[i]);
    });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(concurrent[i]["choices"][0]["text"], sequential[i]["choices"][0]["text"]) << requests[i].dump();
    EXPECT_EQ(concurrent[i]["usage"]["kv_bytes_held"], sequential[i]["usage"]["kv_bytes_held"]);
  }
}

// Eight slots (-np 8): eight greedy requests at once, with different presses and lengths, each
// equal to `momentkv generate --temp 0` with the same press; their decode steps ran batched
// (the server's /metrics), and batching changed no reply.
TEST(ServeSlots, EightConcurrentRequestsEqualTheCliAndDecodeInBatches) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics", "-np", "8"});
  const std::vector<std::pair<std::string, int>> presses = {
      {"full", 0},        {"momentkv", 64},      {"snapkv", 64}, {"adakv", 48},
      {"momentkv", 48},   {"streaming_llm", 64}, {"h2o", 32},    {"pyramidkv", 96}};
  const std::string prompt = test::read_file(kNeedlePrompt);
  std::vector<json> replies(presses.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < presses.size(); ++i)
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", server.port());
      c.set_read_timeout(120);
      json body = {{"prompt", prompt}, {"max_tokens", 10 + 2 * int(i)}, {"temperature", 0}};
      if (presses[i].first != "full") body["kv_press"] = presses[i].first, body["kv_budget"] = presses[i].second;
      replies[i] = post(c, "/v1/completions", body);
    });
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < presses.size(); ++i) {
    std::string flags = "-n " + std::to_string(10 + 2 * i);
    if (presses[i].first != "full") flags += " --press " + presses[i].first + " --kv-budget " + std::to_string(presses[i].second);
    ASSERT_TRUE(replies[i].contains("choices")) << replies[i].dump();
    EXPECT_EQ(replies[i]["choices"][0]["text"], cli_continuation(kNeedlePrompt, flags)) << flags;
  }
  httplib::Client c("127.0.0.1", server.port());
  const auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("momentkv:slots_total 8"), std::string::npos) << metrics->body;
  const std::string sample = "\nmomentkv:decode_batch_max ";  // the sample line, not its # HELP
  const std::size_t at = metrics->body.find(sample);
  ASSERT_NE(at, std::string::npos) << metrics->body;
  EXPECT_GT(std::stoi(metrics->body.substr(at + sample.size())), 1) << "no decode steps ran together:\n" << metrics->body;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// --kv-memory: a request whose cache peak cannot fit is refused with a message naming the sizes;
// the same prompt compressed while it is prefilled (--compress-chunks) peaks lower, fits, and
// replies as the CLI does; reservations are all released afterwards.
TEST(ServeAdmission, KvMemoryAdmitsByTheCachePeak) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics", "-np", "2", "--kv-memory", "1", "-ub", "128",
                              "--compress-chunks"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(120);
  const std::string prompt = test::read_file(kNeedlePrompt);
  const json full = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}}, 400);
  expect_error(full, 400, "invalid_request_error", "max_tokens");
  EXPECT_NE(full["error"]["message"].get<std::string>().find("--kv-memory is 1.0 MiB"), std::string::npos) << full.dump();
  const json pressed = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0},
                                                   {"kv_press", "momentkv"}, {"kv_budget", 64}});
  EXPECT_EQ(pressed["choices"][0]["text"],
            cli_continuation(kNeedlePrompt, "-n 8 -ub 128 --compress-chunks --press momentkv --kv-budget 64"));
  const auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("\nmomentkv:kv_bytes_reserved 0\n"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("\nmomentkv:kv_bytes_capacity 1048576\n"), std::string::npos) << metrics->body;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// --queue: with the slot busy and the queue's one place taken, the next request gets 503 with
// Retry-After at once; the waiting one is served.
TEST(ServeAdmission, AFullQueueAnswers503WithRetryAfter) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics", "-np", "1", "--queue", "1"});
  const json long_body = {{"prompt", "Once upon a time"}, {"max_tokens", 800}, {"ignore_eos", true}, {"temperature", 0}};
  std::atomic<int> long_status{0}, queued_status{0};
  std::thread busy([&] {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(120);
    const auto res = c.Post("/v1/completions", long_body.dump(), "application/json");
    long_status = res ? res->status : -1;
  });
  auto wait_metric = [&](const std::string& line) {
    httplib::Client c("127.0.0.1", server.port());
    for (int i = 0; i < 2000; ++i) {
      const auto m = c.Get("/metrics");
      if (m && m->body.find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  ASSERT_TRUE(wait_metric("\nmomentkv:slots_busy 1\n"));
  std::thread queued([&] {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(120);
    const auto res = c.Post("/v1/completions", json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump(), "application/json");
    queued_status = res ? res->status : -1;
  });
  ASSERT_TRUE(wait_metric("\nmomentkv:requests_deferred 1\n"));
  httplib::Client c("127.0.0.1", server.port());
  const auto refused = c.Post("/v1/completions", json({{"prompt", "Hi"}, {"max_tokens", 2}}).dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  expect_error(json::parse(refused->body), 503, "unavailable_error", "");
  busy.join();
  queued.join();
  EXPECT_EQ(long_status.load(), 200);
  EXPECT_EQ(queued_status.load(), 200);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// A bounded load test on loopback: 200 requests from 16 concurrent clients, twice; none failed;
// latency percentiles and throughput printed; the server's RSS after the second round within a few
// MiB of its RSS after the first (the first round also warms up a worker and malloc arena per
// connection): no leak per request.
struct LoadRound {
  int failed = 0;
  double seconds = 0, p50 = 0, p99 = 0;
};

LoadRound load_round(int port, int clients, int requests) {
  std::atomic<int> next{0}, failed{0};
  std::vector<double> latencies(requests);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&] {
      httplib::Client own("127.0.0.1", port);
      own.set_read_timeout(60);
      for (int i; (i = next++) < requests;) {
        json body = {{"prompt", "Once upon a time, Tom " + std::to_string(i % 7)}, {"max_tokens", 8}, {"seed", i}};
        if (i % 3 == 0) body["kv_press"] = "momentkv", body["kv_budget"] = 8;
        const auto begin = std::chrono::steady_clock::now();
        const auto res = own.Post("/v1/completions", body.dump(), "application/json");
        latencies[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
        if (!res || res->status != 200) {
          ++failed;
          std::fprintf(stderr, "[load] request %d: %s\n", i,
                       res ? (std::to_string(res->status) + " " + res->body).c_str() : httplib::to_string(res.error()).c_str());
        }
      }
    });
  for (auto& t : threads) t.join();
  LoadRound r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::sort(latencies.begin(), latencies.end());
  r.failed = failed;
  r.p50 = latencies[requests / 2];
  r.p99 = latencies[requests * 99 / 100];
  return r;
}

TEST_F(Serve, LoadOf200RequestsFrom16ClientsWithoutFailuresOrGrowth) {
  constexpr int kClients = 16, kRequests = 200;
  const LoadRound first = load_round(server_->port(), kClients, kRequests);
  const long rss_first = server_->rss_kib();
  const LoadRound second = load_round(server_->port(), kClients, kRequests);
  const long rss_second = server_->rss_kib();
  EXPECT_EQ(first.failed + second.failed, 0);
  std::printf("[load] %d requests from %d clients in %.2f s (%.1f req/s); latency p50 %.1f ms, p99 %.1f ms; "
              "server RSS %ld KiB after the first round, %ld KiB after the second\n",
              kRequests, kClients, second.seconds, kRequests / second.seconds, 1e3 * second.p50, 1e3 * second.p99,
              rss_first, rss_second);
  ASSERT_GT(rss_first, 0);
  EXPECT_LT(rss_second - rss_first, 4 * 1024) << "the server's memory grew by more than 4 MiB over 200 requests";
}

TEST_F(Serve, LogitBiasSteersAndBansTokens) {
  auto c = client();
  const json once = post(c, "/tokenize", {{"content", "Once"}});
  ASSERT_EQ(once["tokens"].size(), 1u);
  const int32_t id = once["tokens"][0];
  const json steered = post(c, "/v1/completions", {{"prompt", "Lily went"}, {"max_tokens", 3}, {"temperature", 0},
                                                   {"logit_bias", {{std::to_string(id), 1000}}}});
  EXPECT_EQ(steered["choices"][0]["text"], " Once Once Once") << steered.dump();
  // The same as text, llama-server's form, and in the native route.
  const json as_text = post(c, "/completion", {{"prompt", "Lily went"}, {"n_predict", 3}, {"temperature", 0},
                                               {"logit_bias", json::array({json::array({"Once", 1000})})}});
  EXPECT_EQ(as_text["content"], " Once Once Once") << as_text.dump();
  // A ban moves greedy decoding off the token it would pick.
  const json plain = post(c, "/completion", {{"prompt", "Once upon a"}, {"n_predict", 1}, {"temperature", 0}, {"n_probs", 1}});
  const int32_t first = plain["completion_probabilities"][0]["id"];
  const json banned = post(c, "/completion", {{"prompt", "Once upon a"}, {"n_predict", 1}, {"temperature", 0}, {"n_probs", 1},
                                              {"logit_bias", json::array({json::array({first, false})})}});
  EXPECT_NE(banned["completion_probabilities"][0]["id"], first) << banned.dump();
  expect_error(post(c, "/v1/completions", {{"prompt", "x"}, {"logit_bias", {{"100000", 1}}}}, 400), 400,
               "invalid_request_error", "logit_bias");
}

TEST_F(Serve, TokenizeAndDetokenizeRoundTrip) {
  auto c = client();
  const json tokens = post(c, "/tokenize", {{"content", "Once upon a time"}});
  ASSERT_TRUE(tokens["tokens"].is_array());
  EXPECT_FALSE(tokens["tokens"].empty());
  EXPECT_EQ(post(c, "/detokenize", {{"tokens", tokens["tokens"]}})["content"], "Once upon a time");
  // with_pieces (llama-server's): each id with its piece; the pieces make the text.
  const json pieces = post(c, "/tokenize", {{"content", "Once upon a time"}, {"with_pieces", true}});
  ASSERT_EQ(pieces["tokens"].size(), tokens["tokens"].size()) << pieces.dump();
  std::string text;
  for (std::size_t i = 0; i < pieces["tokens"].size(); ++i) {
    EXPECT_EQ(pieces["tokens"][i]["id"], tokens["tokens"][i]);
    text += pieces["tokens"][i]["piece"].get<std::string>();
  }
  EXPECT_EQ(text, " Once upon a time");  // SentencePiece's leading space, which decode drops
}

// A completion's prompt may be token ids (OpenAI's and llama-server's API): fed as they are, they
// give what the text that tokenizes to them gives; ids outside the vocabulary are named.
TEST_F(Serve, PromptsMayBeTokenIds) {
  auto c = client();
  const std::string text = "Once upon a time";
  const json ids = post(c, "/tokenize", {{"content", text}, {"add_special", true}})["tokens"];
  const json by_text = post(c, "/v1/completions", {{"prompt", text}, {"max_tokens", 8}, {"temperature", 0}});
  for (const json& prompt : {ids, json::array({ids})}) {
    const json by_ids = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}});
    EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]) << prompt;
    EXPECT_EQ(by_ids["usage"]["prompt_tokens"], by_text["usage"]["prompt_tokens"]);
  }
  const json out_of_vocab = post(c, "/v1/completions", {{"prompt", {1, 99999}}, {"max_tokens", 2}}, 400);
  expect_error(out_of_vocab, 400, "invalid_request_error", "prompt");
  EXPECT_NE(out_of_vocab["error"]["message"].get<std::string>().find("prompt[1] must be a token id in [0, "),
            std::string::npos) << out_of_vocab;
  for (const json& prompt : {json::array({1, "x"}), json::array({"a", "b"}), json::array(), json::array({json::array({-1})})})
    expect_error(post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}}, 400), 400, "invalid_request_error",
                 "prompt");
}

// A seeded, bounded fuzz of request bodies: every answer is a 200 or an OpenAI error body, never
// a dropped connection or a dead server.
TEST_F(Serve, FuzzedBodiesNeverBreakTheServer) {
  auto c = client();
  const std::vector<std::string> seeds = {
      R"({"prompt": "Once upon a time", "max_tokens": 3})",
      R"({"prompt": "Tom", "max_tokens": 2, "kv_press": "momentkv", "kv_budget": 8, "stop": ["."]})",
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})",
  };
  const std::vector<std::string> values = {"null", "-1", "0", "1e308", "\"\"", "[]", "{}", "true", "\"\\u0000\"",
                                           "9999999999999999999999", "\"\xff\xfe\"", "[[[[[]]]]]"};
  const std::vector<std::string> keys = {"prompt", "max_tokens", "temperature", "top_p", "stop", "seed", "kv_press",
                                         "kv_budget", "kv_compression_ratio", "messages", "stream", "n", "top_k"};
  std::mt19937 rng(20261201);
  int answered = 0;
  for (int i = 0; i < 150; ++i) {
    std::string body = seeds[rng() % seeds.size()];
    switch (rng() % 4) {
      case 0:  // truncated
        body.resize(rng() % body.size());
        break;
      case 1: {  // a key set to an odd value
        json j = json::parse(body);
        j[keys[rng() % keys.size()]] = json::parse(values[rng() % values.size()], nullptr, false);
        body = j.dump(-1, ' ', false, json::error_handler_t::replace);
        break;
      }
      case 2:  // a random byte changed
        body[rng() % body.size()] = char(rng() % 256);
        break;
      default:  // a value replaced textually
        body.replace(body.find(':') + 1, 0, values[rng() % values.size()] + ",");
    }
    const char* path = (rng() % 2) ? "/v1/completions" : "/v1/chat/completions";
    const auto res = c.Post(path, body, "application/json");
    ASSERT_TRUE(res) << "no answer to " << path << " " << body;
    ++answered;
    if (res->status == 200) continue;
    const json error = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.contains("error")) << res->status << " " << res->body << " for " << body;
    EXPECT_GE(res->status, 400);
    EXPECT_LT(res->status, 500) << res->body << " for " << body;
  }
  EXPECT_EQ(answered, 150);
  EXPECT_TRUE(server_->running());
}

// A Prometheus counter's value from /metrics.
double metric(httplib::Client& c, const std::string& name) {
  const std::string text = c.Get("/metrics")->body;
  const std::size_t at = text.find("\nmomentkv:" + name + " ");
  EXPECT_NE(at, std::string::npos) << name << " in " << text;
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 11));
}

// A token list element is named by its position and JSON type, never printed: printing a deeply
// nested one overflowed the stack (a segfault), a long string was echoed whole.
TEST_F(Serve, DetokenizeNamesABadElementWithoutPrintingIt) {
  auto c = client();
  const std::string nested = "{\"tokens\":[1, " + std::string(100000, '[') + std::string(100000, ']') + "]}";
  const auto deep = c.Post("/detokenize", nested, "application/json");
  ASSERT_TRUE(deep) << "no answer: the server died";
  EXPECT_EQ(deep->status, 400);
  const json error = json::parse(deep->body);
  expect_error(error, 400, "invalid_request_error", "tokens");
  EXPECT_EQ(error["error"]["message"], "tokens[1] must be a token id in [0, 512), got an array");
  const json long_string = post(c, "/detokenize", {{"tokens", {std::string(1 << 20, 'x')}}}, 400);
  EXPECT_EQ(long_string["error"]["message"], "tokens[0] must be a token id in [0, 512), got a string");
  // Nor does a parse error quote a megabyte token.
  const auto unterminated = c.Post("/v1/completions", "{\"prompt\": \"" + std::string(1 << 20, 'x'), "application/json");
  ASSERT_TRUE(unterminated);
  EXPECT_EQ(unterminated->status, 400);
  EXPECT_LT(unterminated->body.size(), 1000u) << unterminated->body.substr(0, 300);
  EXPECT_TRUE(server_->running());
}

// A chat content part whose "type" is not a string is a 400 naming the part (it was a 500: a JSON
// type error).
TEST_F(Serve, ContentPartsWithANonStringTypeAreBadRequests) {
  auto c = client();
  for (const json& type : {json(5), json(nullptr), json::array({"text"})}) {
    const json body = {{"messages", {{{"role", "user"}, {"content", {{{"type", type}, {"text", "hi"}}}}}}}};
    const json error = post(c, "/v1/chat/completions", body, 400);
    expect_error(error, 400, "invalid_request_error", "messages[0].content");
    EXPECT_NE(error["error"]["message"].get<std::string>().find("'messages[0].content[0]'"), std::string::npos)
        << error.dump();
  }
}

// The body is JSON whatever its declared Content-Type: a form-encoded one (curl -d) over httplib's
// 8 KiB form limit is read as any other (it got 413 naming the 8 MiB limit), and a chunked one is
// held to the same limit as a declared length (it had none).
TEST_F(Serve, BodiesAreJsonWhateverTheirContentTypeUpToTheLimit) {
  auto c = client();
  const json body = {{"prompt", "Once"}, {"max_tokens", 2}, {"model", std::string(10000, 'm')}};
  const auto form = c.Post("/v1/completions", body.dump(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->status, 200) << form->body.substr(0, 300);
  EXPECT_EQ(json::parse(form->body)["usage"]["completion_tokens"], 2);
  const auto multipart = c.Post("/v1/completions", body.dump(), "multipart/form-data; boundary=x");
  ASSERT_TRUE(multipart);
  EXPECT_EQ(multipart->status, 200) << multipart->body.substr(0, 300);

  std::string chunked = "POST /detokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(1 << 20, ' ');
  for (int i = 0; i < 9; ++i) chunked += fmt::format("{:x}\r\n{}\r\n", chunk.size(), chunk);
  chunked += "0\r\n\r\n";
  const RawReply large = raw_exchange(server_->port(), chunked);
  EXPECT_EQ(large.status(), 413) << large.text.substr(0, 300);
  expect_error(large.body(), 413, "invalid_request_error", "");
  EXPECT_EQ(large.body()["error"]["message"], "the request body is larger than 8388608 bytes");
}

// A body of unknown length (httplib read it until the connection closed, so the request waited for
// --timeout), a malformed Content-Length and one over the limit are refused from the headers at
// once, and the connection closes, so the unread body is never taken for the next request.
TEST_F(Serve, BodiesWithoutAUsableLengthAreRefusedAtOnceAndTheConnectionCloses) {
  const std::string next_request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  struct Case {
    std::string headers;
    int status;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"", 411, "a Content-Length header is required"},
      {"Content-Length: -5\r\n", 400, "the Content-Length header must be a number of bytes"},
      {"Content-Length: 12abc\r\n", 400, "the Content-Length header must be a number of bytes"},
      {"Content-Length: 100000000\r\n", 413, "the request body is larger than 8388608 bytes"},
      {"Content-Length: 99999999999999999999999\r\n", 413, "the request body is larger than 8388608 bytes"},
  };
  for (const char* method : {"POST", "PUT", "PATCH"})
    for (const Case& c : cases) {
      const std::string request = std::string(method) + " /v1/completions HTTP/1.1\r\nHost: x\r\n" + c.headers + "\r\n";
      const RawReply reply = raw_exchange(server_->port(), request + next_request, 3);
      EXPECT_EQ(reply.status(), c.status) << request << reply.text;
      expect_error(reply.body(), c.status, "invalid_request_error", "");
      EXPECT_NE(reply.body()["error"]["message"].get<std::string>().find(c.message_part), std::string::npos) << reply.text;
      EXPECT_TRUE(reply.closed) << request;
      EXPECT_LT(reply.seconds, 1.0) << request;
      EXPECT_EQ(responses_in(reply.text), 1) << reply.text;
    }
}

// httplib's own refusals say what was wrong instead of "HTTP 400", and close the connection.
TEST_F(Serve, MalformedRequestsGetAMessageNamingTheProblem) {
  struct Case {
    std::string request;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "the request URI is longer than 8192 bytes"},
      {"NONSENSE\r\n\r\n", 400, "the request line is malformed (expected 'METHOD /path HTTP/1.1')"},
      {"GET /health HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n", 400,
       "a request header is malformed or too long"},
      {"TRACE /health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "the method TRACE is not supported"},
  };
  for (const Case& c : cases) {
    const RawReply reply = raw_exchange(server_->port(), c.request, 3);
    EXPECT_EQ(reply.status(), c.status) << reply.text;
    expect_error(reply.body(), c.status, "invalid_request_error", "");
    EXPECT_EQ(reply.body()["error"]["message"], c.message) << reply.text;
    EXPECT_TRUE(reply.closed);
  }
}

// OpenAI clients send explicit nulls for unset options: null is the option's absence for every
// field (top_k, min_p, n_predict and ignore_eos refused it).
TEST_F(Serve, NullOptionsAreAbsent) {
  auto c = client();
  json body = {{"prompt", "Once"}, {"max_tokens", 2}};
  for (const char* key : {"temperature", "top_p", "top_k", "min_p", "seed", "stop", "n", "stream", "ignore_eos",
                          "n_predict", "max_completion_tokens", "kv_press", "kv_budget", "kv_compression_ratio"})
    body[key] = nullptr;
  EXPECT_EQ(post(c, "/v1/completions", body)["usage"]["completion_tokens"], 2);
}

// A whole number beyond int64 (an exponent form, or more digits) is out of range, not "not an
// integer".
TEST_F(Serve, HugeIntegersAreOutOfRange) {
  auto c = client();
  for (const std::string value : {"1e23", "12345678901234567890123", "18446744073709551615", "-1e30"}) {
    const auto res = c.Post("/v1/completions", "{\"prompt\": \"Once\", \"max_tokens\": " + value + "}", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    const json error = json::parse(res->body);
    expect_error(error, 400, "invalid_request_error", "max_tokens");
    EXPECT_NE(error["error"]["message"].get<std::string>().find("must be in [-1, 16777216], got"), std::string::npos)
        << value << " " << res->body;
  }
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 1.5}}, 400)["error"]["message"],
            "'max_tokens' must be an integer");
}

// seed -1 is a random seed, drawn per request (llama-server's and OpenAI clients' convention); any
// other seed repeats its reply.
TEST_F(Serve, SeedMinusOneIsRandom) {
  auto c = client();
  auto reply = [&](int64_t seed) {
    const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 1.5}, {"seed", seed}};
    return post(c, "/v1/completions", body)["choices"][0]["text"].get<std::string>();
  };
  EXPECT_EQ(reply(7), reply(7));
  const std::string first = reply(-1);
  bool differs = false;
  for (int i = 0; i < 4 && !differs; ++i) differs = reply(-1) != first;
  EXPECT_TRUE(differs) << "five replies with seed -1 were all '" << first << "'";
}

// requests_processing counts the generations running now: back to 0 after a reply, a refusal and a
// stream (a scope guard holds it, so a generation that throws gives it back too).
TEST_F(Serve, TheProcessingGaugeReturnsToZero) {
  auto c = client();
  post(c, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2}});
  post(c, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", -5}}, 400);
  const auto streamed = c.Post("/v1/completions", json({{"prompt", "Once"}, {"max_tokens", 2}, {"stream", true}}).dump(),
                               "application/json");
  ASSERT_TRUE(streamed);
  EXPECT_EQ(metric(c, "requests_processing"), 0);
}

TEST_F(Serve, ADisconnectedStreamFreesTheSlot) {
  auto c = client();
  const double generated_before = metric(c, "tokens_predicted_total");
  // A stream that would run to the end of the context; the client leaves after the first chunk.
  std::string received;
  const auto start = std::chrono::steady_clock::now();
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = json({{"prompt", "Once upon a time"}, {"stream", true}, {"ignore_eos", true}, {"temperature", 0}}).dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    return false;  // disconnect
  };
  c.send(req);
  EXPECT_NE(received.find("data: "), std::string::npos);
  // The next request runs at once instead of waiting for ~2K tokens.
  auto other = client();
  const json next = post(other, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}});
  EXPECT_EQ(next["usage"]["completion_tokens"], 2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  // The abandoned generation stopped within a few tokens of the disconnect, not at the context's end.
  const double generated = metric(other, "tokens_predicted_total") - generated_before;
  EXPECT_LT(generated, 200) << "tokens generated for the abandoned stream and the next request";
}

// Polls the metric until it reaches `at_least` or `seconds` pass; returns its last value.
double await_metric(httplib::Client& c, const std::string& name, double at_least, double seconds = 30) {
  const auto start = std::chrono::steady_clock::now();
  double value = metric(c, name);
  while (value < at_least && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    value = metric(c, name);
  }
  return value;
}

// A raw HTTP/1.1 request posting `body` to /v1/completions (for raw_exchange).
std::string raw_completion_request(const json& body) {
  const std::string text = body.dump();
  return fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
      text.size(), text);
}

// A non-streaming reply is written only at its end, so only the server's look at the socket can
// notice that its client left: the generation stops there instead of running to the context's end
// (~2K tokens). A request whose client left before its generation began does not run.
TEST_F(Serve, AClientThatLeavesStopsANonStreamingGeneration) {
  auto c = client();
  const double generated_before = metric(c, "tokens_predicted_total");
  const double cancelled_before = metric(c, "requests_cancelled_total");
  const std::string request =
      raw_completion_request({{"prompt", "Once upon a time"}, {"ignore_eos", true}, {"temperature", 0}});
  // The client waits 50 ms for a reply that takes ~2K tokens, then closes the connection.
  const RawReply left = raw_exchange(server_->port(), request, 0.05);
  EXPECT_EQ(left.text, "");
  EXPECT_EQ(await_metric(c, "requests_cancelled_total", cancelled_before + 1), cancelled_before + 1);
  const double generated = metric(c, "tokens_predicted_total") - generated_before;
  EXPECT_LT(generated, 1500) << "tokens generated for a client that left after 50 ms";
  EXPECT_EQ(metric(c, "requests_processing"), 0);

  // Sent and closed at once: stopped at once, or never started.
  const int fd = connect_loopback(server_->port());
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
  ::close(fd);
  const double generated_then = metric(c, "tokens_predicted_total");
  EXPECT_EQ(await_metric(c, "requests_cancelled_total", cancelled_before + 2), cancelled_before + 2);
  EXPECT_LT(metric(c, "tokens_predicted_total") - generated_then, 1500);
  // The server still answers on a new connection.
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
}

// With one slot, a request waiting behind another whose client leaves gives up its place while it
// waits: counted as cancelled while the request ahead still generates, and never run.
TEST_F(Serve, AClientThatLeavesTheLineGivesUpItsPlace) {
  auto c = client();
  const double cancelled_before = metric(c, "requests_cancelled_total");
  const double runs_before = metric(c, "requests_total");
  const json to_the_end = {{"prompt", "Once upon a time"}, {"ignore_eos", true}, {"temperature", 0}};
  std::thread ahead([&] {  // runs to the context's end: ~2K tokens
    auto own = client();
    EXPECT_EQ(post(own, "/v1/completions", to_the_end)["choices"][0]["finish_reason"], "length");
  });
  ASSERT_EQ(await_metric(c, "requests_processing", 1), 1);
  const RawReply left = raw_exchange(server_->port(), raw_completion_request(to_the_end), 0.05);
  EXPECT_EQ(left.text, "");  // it waited behind the first
  EXPECT_EQ(await_metric(c, "requests_cancelled_total", cancelled_before + 1), cancelled_before + 1);
  EXPECT_EQ(metric(c, "requests_processing"), 1) << "the first request should still be generating";
  ahead.join();
  EXPECT_EQ(metric(c, "requests_total"), runs_before + 1) << "the request that left the line ran";
  EXPECT_EQ(metric(c, "requests_deferred"), 0);
}

// httplib gives each connection one of the server's 64 HTTP threads and waits --timeout (600 s)
// for each read: 70 clients that stop halfway through their headers would hold every thread. With
// --header-timeout 2 they get 408 and are closed within ~2 s, and a request behind them is served.
// A body that arrives slower than the limit is not cut (its headers were in time), and neither is
// a connection that stays open between requests for less than the keep-alive wait.
TEST(ServeHeaderDeadline, ConnectionsLateWithTheirHeadersAreClosedAndOthersServed) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics", "--header-timeout", "2"});
  std::vector<int> stalled;
  for (int i = 0; i < 70; ++i) {
    stalled.push_back(connect_loopback(server.port()));
    const std::string half = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le";
    ASSERT_EQ(::send(stalled.back(), half.data(), half.size(), MSG_NOSIGNAL), ssize_t(half.size()));
  }
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 4}})["usage"]["completion_tokens"], 4);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 30) << "the request waited for the stalled connections' threads";
  std::printf("a request behind 70 stalled connections: %.2f s\n", seconds);
  for (const int fd : stalled) {
    std::string reply;
    char buffer[4096];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 10000) > 0) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      reply.append(buffer, std::size_t(n));
    }
    EXPECT_EQ(reply.rfind("HTTP/1.1 408 ", 0), 0u) << reply;
    EXPECT_NE(reply.find("headers did not arrive within 2 s"), std::string::npos) << reply;
    ::close(fd);
  }
  const double timeouts = metric(c, "header_timeouts_total");
  EXPECT_GE(timeouts, 70);
  // The same client connection, kept alive for under the keep-alive wait (1 s here), still works.
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
  // A body that takes longer than the limit is not cut: the headers were in time.
  const std::string request = raw_completion_request({{"prompt", "Tom"}, {"max_tokens", 2}});
  const std::size_t headers_end = request.find("\r\n\r\n") + 4;
  const int fd = connect_loopback(server.port());
  ASSERT_EQ(::send(fd, request.data(), headers_end + 3, MSG_NOSIGNAL), ssize_t(headers_end + 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  const std::string rest = request.substr(headers_end + 3);
  ASSERT_EQ(::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL), ssize_t(rest.size()));
  char buffer[4096];
  pollfd p{fd, POLLIN, 0};
  ASSERT_GT(::poll(&p, 1, 30000), 0);
  const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
  EXPECT_EQ(std::string(buffer, std::size_t(std::max<ssize_t>(n, 0))).rfind("HTTP/1.1 200 ", 0), 0u);
  ::close(fd);
  EXPECT_EQ(metric(c, "header_timeouts_total"), timeouts);
}

// A prompt read in chunks (-ub 1 here: 1900 forward passes) stops between chunks once its client
// has left: the prompt tokens the server processed are far fewer than the prompt's.
TEST(ServePrefill, AClientThatLeavesStopsTheReadingOfItsPrompt) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--metrics", "-ub", "1"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  json ids = json::array();
  for (int i = 0; i < 1900; ++i) ids.push_back(100 + i % 50);
  const RawReply left = raw_exchange(server.port(), raw_completion_request({{"prompt", ids}, {"max_tokens", 1}}), 0.1);
  EXPECT_EQ(left.text, "");
  EXPECT_EQ(await_metric(c, "requests_cancelled_total", 1), 1);
  const double processed = metric(c, "prompt_tokens_total");
  EXPECT_LT(processed, 1300) << "prompt tokens processed for a client that left after 100 ms";
  std::printf("prompt tokens read before the stop: %.0f of 1900\n", processed);
  EXPECT_EQ(post(c, "/v1/completions", {{"prompt", "Tom"}, {"max_tokens", 2}})["usage"]["completion_tokens"], 2);
}

// llama-server's /slots: one entry per slot, is_processing while a request holds it, and
// ?fail_on_no_slot=1 answering 503 while every slot is held.
TEST_F(Serve, SlotsShowWhichAreProcessing) {
  auto c = client();
  const json idle = json::parse(c.Get("/slots")->body);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0]["id"], 0);
  EXPECT_EQ(idle[0]["n_ctx"], 2048);
  EXPECT_EQ(idle[0]["is_processing"], false);
  EXPECT_EQ(c.Get("/slots?fail_on_no_slot=1")->status, 200);
  std::thread busy([&] {  // runs to the context's end: ~2K tokens
    auto own = client();
    post(own, "/v1/completions", {{"prompt", "Once upon a time"}, {"ignore_eos", true}, {"temperature", 0}});
  });
  ASSERT_EQ(await_metric(c, "requests_processing", 1), 1);
  EXPECT_EQ(json::parse(c.Get("/slots")->body)[0]["is_processing"], true);
  const auto full = c.Get("/slots?fail_on_no_slot=1");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503);
  expect_error(json::parse(full->body), 503, "unavailable_error", "");
  busy.join();
  EXPECT_EQ(json::parse(c.Get("/slots")->body)[0]["is_processing"], false);
}

TEST(ServeOptions, ApiKeyChatTemplateAliasAndShutdown) {
  test::ServerProcess server({"-m", test::trained_model_path(), "--chat-template", "chatml", "-a", "storyteller"},
                             {"MOMENTKV_API_KEY=sekret"});
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(60);
  EXPECT_EQ(c.Get("/health")->status, 200);  // no key needed
  const auto none = c.Get("/props");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  expect_error(json::parse(none->body), 401, "authentication_error", "");
  EXPECT_EQ(c.Get("/props", {{"Authorization", "Bearer wrong"}})->status, 401);
  c.set_bearer_token_auth("sekret");
  EXPECT_EQ(c.Get("/props")->status, 200);
  const auto models = c.Get("/v1/models");
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "storyteller");  // -a / --alias
  const json chat = post(c, "/v1/chat/completions",
                         {{"messages", {{{"role", "user"}, {"content", "Tell me a story."}}}}, {"max_tokens", 4},
                          {"logprobs", true}, {"top_logprobs", 2}});
  EXPECT_EQ(chat["object"], "chat.completion");
  const json& content_logprobs = chat["choices"][0]["logprobs"]["content"];  // OpenAI's chat shape
  ASSERT_EQ(content_logprobs.size(), 4u) << chat.dump();
  for (const json& t : content_logprobs) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    EXPECT_TRUE(t["bytes"].is_array());
    EXPECT_EQ(t["top_logprobs"].size(), 2u);
  }
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  EXPECT_TRUE(chat["choices"][0]["message"]["content"].is_string());
  EXPECT_EQ(server.stop(), 0);  // SIGTERM: a clean exit
  EXPECT_NE(server.log().find("SIGTERM received"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace mkv
