// Batched decode (Transformer::forward_decode_batch, ModelRunner): one pass over the weights for
// the decode steps of several sequences gives each sequence bitwise the logits it gets alone, for
// every architecture, weight type and precision, with sequences at different lengths and presses.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "engine/generation.h"
#include "engine/model_runner.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "kv/press_config.h"
#include "model/random_model.h"
#include "ops/matmul_int8.h"
#include "random_model_spec.h"
#include "support/test_support.h"

namespace mkv {
namespace {

struct Case {
  std::string shape;
  GgmlType type;
  MatmulPrecision precision;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.shape << "_" << ggml_type_info(c.type).name << (c.precision == MatmulPrecision::Fast ? "_fast" : "_exact");
}

class BatchedDecode : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const RandomModelSpec spec = test::random_model_spec(GetParam().shape, GetParam().type);
    path_ = test::temp_dir() / "batched.gguf";
    write_random_model(spec, path_.string());
    file_ = std::make_unique<GgufFile>(GgufFile::open(path_.string()));
    model_ = std::make_unique<Transformer>(*file_, 64);
    previous_ = matmul_precision();
    set_matmul_precision(GetParam().precision);
  }
  void TearDown() override { set_matmul_precision(previous_); }

  // Prompt i: 5 + 7·i tokens of a seeded sequence.
  std::vector<int32_t> prompt(int i) const {
    std::vector<int32_t> ids{1};
    for (int t = 0; t < 5 + 7 * i; ++t) ids.push_back(3 + (t * 37 + i * 101) % (model_->config().n_vocab - 3));
    return ids;
  }

  std::filesystem::path path_;
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Transformer> model_;
  MatmulPrecision previous_ = MatmulPrecision::Exact;
};

// Eight sequences of different lengths: each decodes 6 steps alone, then the same steps as rows
// of one batch; every row's logits equal the lone run's bit for bit.
TEST_P(BatchedDecode, EachRowEqualsTheSequenceAlone) {
  constexpr int kSequences = 8, kSteps = 6;
  const int n_vocab = model_->config().n_vocab;
  std::vector<std::vector<float>> alone(kSequences);  // (steps, n_vocab) per sequence
  std::vector<std::vector<int32_t>> fed(kSequences);  // the token fed at each step
  for (int i = 0; i < kSequences; ++i) {
    Session s(*model_, SessionOptions{});
    std::span<const float> logits = s.prefill(prompt(i));
    for (int step = 0; step < kSteps; ++step) {
      const int32_t token = 3 + (step * 11 + i) % (n_vocab - 3);
      fed[i].push_back(token);
      logits = s.decode(token);
      alone[i].insert(alone[i].end(), logits.begin(), logits.end());
    }
  }
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < kSequences; ++i) {
    sessions.push_back(std::make_unique<Session>(*model_, SessionOptions{}));
    sessions.back()->prefill(prompt(i));
  }
  std::vector<float> logits(std::size_t(kSequences) * n_vocab);  // (sequences, n_vocab)
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int32_t> tokens, positions;
    std::vector<KvCache*> caches;
    std::vector<ForwardObserver*> observers(kSequences, nullptr);
    for (int i = 0; i < kSequences; ++i) {
      tokens.push_back(fed[i][step]);
      positions.push_back(int32_t(prompt(i).size()) + step);
      caches.push_back(&sessions[i]->cache());
    }
    model_->forward_decode_batch(tokens, positions, caches, observers, logits.data());
    for (int i = 0; i < kSequences; ++i)
      ASSERT_EQ(std::memcmp(&logits[std::size_t(i) * n_vocab], &alone[i][std::size_t(step) * n_vocab], n_vocab * sizeof(float)), 0)
          << "sequence " << i << " step " << step;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchedDecode,
    ::testing::Values(Case{"tiny-llama", GgmlType::F32, MatmulPrecision::Exact},
                      Case{"tiny-llama", GgmlType::F16, MatmulPrecision::Exact},
                      Case{"tiny-qwen3", GgmlType::BF16, MatmulPrecision::Exact},
                      Case{"tiny-qwen2", GgmlType::Q8_0, MatmulPrecision::Exact},
                      Case{"tiny-qwen2", GgmlType::Q8_0, MatmulPrecision::Fast},
                      Case{"tiny-llama", GgmlType::Q4_K, MatmulPrecision::Exact},
                      Case{"tiny-llama", GgmlType::Q4_K, MatmulPrecision::Fast}),
    [](const auto& info) {
      std::ostringstream name;
      PrintTo(info.param, &name);
      std::string s = name.str();
      for (char& ch : s) if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

// Sessions on 6 threads share one ModelRunner, each greedy-generating from its own prompt with its
// own press: every reply equals the one the session gives alone, and decode steps ran in batches.
TEST(ModelRunnerSessions, ConcurrentGenerationsEqualLoneOnesAndBatch) {
  const auto path = std::filesystem::path(MOMENTKV_SOURCE_DIR) / "models" / "stories-needle-2k.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "committed model " << path << " not found";
  const GgufFile file = GgufFile::open(path.string());
  Transformer model(file, 64);
  constexpr int kThreads = 6, kTokens = 24;
  const std::vector<std::string> presses = {"full", "momentkv", "snapkv", "streaming_llm", "adakv:nc=1", "h2o"};
  auto prompt = [](int i) {
    std::vector<int32_t> ids{1};
    for (int t = 0; t < 120 + 40 * i; ++t) ids.push_back(20 + (t * 13 + i * 7) % 400);
    return ids;
  };
  auto reply = [&](int i, ModelRunner* runner) {
    const PressConfig config = presses[i] == "full" ? PressConfig() : PressConfig::parse(presses[i], Budget{48, 0.0});
    const std::unique_ptr<Press> press = config.is_full() ? nullptr : config.make();
    SessionOptions o;
    o.press = press.get();
    o.ubatch = 64;  // several prefill chunks, interleaved with the others' decode steps
    o.runner = runner;
    RunnerAttachment attached(runner);
    Session session(model, o);
    std::span<const float> logits = session.prefill(prompt(i));
    std::vector<int32_t> out;
    for (int t = 0; t < kTokens; ++t) {
      out.push_back(pick_greedy(logits));
      logits = session.decode(out.back());
    }
    return out;
  };
  std::vector<std::vector<int32_t>> alone(kThreads), together(kThreads);
  for (int i = 0; i < kThreads; ++i) alone[i] = reply(i, nullptr);
  ModelRunner runner(model, kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back([&, i] { together[i] = reply(i, &runner); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(together[i], alone[i]) << presses[i];
  const ModelRunner::Stats stats = runner.stats();
  EXPECT_EQ(stats.decode_steps, int64_t(kThreads) * kTokens);
  EXPECT_GT(stats.max_batch, 1) << "no two decode steps ran together";
  EXPECT_LT(stats.decode_batches, stats.decode_steps);
}

TEST(ModelRunnerSessions, ErrorsReachTheSubmitterAndTheRunnerGoesOn) {
  RandomModelSpec spec = RandomModelSpec::preset("tiny-llama");
  const auto path = test::temp_dir() / "runner.gguf";
  write_random_model(spec, path.string());
  const GgufFile file = GgufFile::open(path.string());
  Transformer model(file, 8);
  ModelRunner runner(model, 4);
  EXPECT_THROW(runner.exclusive([] { throw MkvError("job failed"); }), MkvError);
  SessionOptions o;
  o.runner = &runner;
  o.n_ctx = 4;
  Session session(model, o);
  EXPECT_THROW(session.decode(-1), MkvError);                        // checked before it is batched
  EXPECT_THROW(session.prefill(std::vector<int32_t>(5, 3)), MkvError);  // past the context
  session.prefill(std::vector<int32_t>{1, 5, 6});
  EXPECT_EQ(session.decode(7).size(), std::size_t(model.config().n_vocab));
  EXPECT_THROW(session.decode(8), MkvError);  // the context is full
}

TEST(BatchedDecodeErrors, RefusesMismatchedOrSharedCaches) {
  RandomModelSpec spec = RandomModelSpec::preset("tiny-llama");
  const auto path = test::temp_dir() / "errors.gguf";
  write_random_model(spec, path.string());
  const GgufFile file = GgufFile::open(path.string());
  Transformer model(file, 4);
  KvCache cache(model.cache_shape(), KvStorage::F32);
  std::vector<float> logits(2 * model.config().n_vocab);
  const std::vector<int32_t> tokens{5, 6}, positions{0, 0};
  const std::vector<KvCache*> shared{&cache, &cache};
  const std::vector<ForwardObserver*> observers{nullptr, nullptr};
  EXPECT_THROW(model.forward_decode_batch(tokens, positions, shared, observers, logits.data()), MkvError);
  const std::vector<KvCache*> one{&cache};
  EXPECT_THROW(model.forward_decode_batch(tokens, positions, one, observers, logits.data()), MkvError);
}

}  // namespace
}  // namespace mkv
