#include "engine/bench.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <random>
#include <tuple>

#include "core/error.h"
#include "core/median.h"
#include "engine/session.h"
#include "engine/generation.h"

namespace mkv {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Bytes of cache rows (keys + values) attention reads for one query token, over all layers.
double kv_read_bytes(const KvCache& cache) {
  const KvCacheShape& s = cache.shape();
  const double elem = cache.storage() == KvStorage::F16 ? 2.0 : 4.0;
  return static_cast<double>(cache.total_tokens()) * (s.head_dim_k + s.head_dim_v) * elem;
}

// Attention FLOPs of one query token over the current cache: q·k and p·v for every query head.
double attention_flops(const KvCache& cache, const ModelConfig& c) {
  const int group = c.n_heads / c.n_kv_heads;
  return 2.0 * static_cast<double>(cache.total_tokens()) * group * (c.head_dim_k + c.head_dim_v);
}

}  // namespace

ModelFootprint model_footprint(const GgufFile& file) {
  ModelFootprint f;
  f.file_bytes = file.file_size();
  const bool tied = file.find_tensor("output.weight") == nullptr;
  for (const GgufTensorInfo& t : file.tensors()) {
    f.params += t.n_elements();
    const bool embedding = t.name == "token_embd.weight";
    if (embedding && !tied) {
      f.weight_bytes_per_token += static_cast<double>(t.nbytes) / std::max<int64_t>(1, t.rows());
      continue;
    }
    f.weight_bytes_per_token += static_cast<double>(t.nbytes);
    if (t.dims.size() >= 2) f.matmul_params += static_cast<double>(t.n_elements());
    if (t.name == "output.weight" || (tied && embedding)) f.output_params = static_cast<double>(t.n_elements());
  }
  return f;
}

std::string BenchTest::name() const {
  std::string s = n_prompt > 0 ? fmt::format("pp{}", n_prompt) : fmt::format("tg{}", n_gen);
  if (depth > 0) s += fmt::format(" @ d{}", depth);
  return s;
}

std::pair<double, double> mean_and_std(const std::vector<double>& values) {
  if (values.empty()) return {0.0, 0.0};
  const double n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double var = 0.0;
  for (double v : values) var += (v - mean) * (v - mean);
  return {mean, values.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0};
}

double paired_fraction(const std::vector<double>& rates, const std::vector<double>& limits_around) {
  if (limits_around.empty()) return 0.0;
  MKV_CHECK(limits_around.size() == 2 * rates.size(), "paired_fraction: {} limit readings for {} repetitions",
            limits_around.size(), rates.size());
  std::vector<double> shares;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const double limit = std::max(limits_around[2 * i], limits_around[2 * i + 1]);
    if (limit > 0) shares.push_back(rates[i] / limit);
  }
  return median(std::move(shares));
}

BenchResult run_bench(Transformer& model, const ModelFootprint& footprint, const BenchTest& test,
                      const BenchConfig& config) {
  MKV_CHECK((test.n_prompt > 0) != (test.n_gen > 0), "a bench test is either ppN or tgN");
  MKV_CHECK(config.repetitions > 0, "repetitions must be positive");
  const ModelConfig& c = model.config();
  std::mt19937_64 rng(config.seed);
  std::uniform_int_distribution<int32_t> token(0, c.n_vocab - 1);
  auto random_tokens = [&](int n) {
    std::vector<int32_t> t(n);
    for (auto& v : t) v = token(rng);
    return t;
  };

  const std::unique_ptr<Press> press = config.press.make_or_null();
  const bool nc_ab = config.nc_ab && press && press->nc() && test.n_gen > 0;
  const bool depth0_ab = config.depth0_ab && test.depth > 0 && test.n_gen > 0;
  const int per_pass = test.n_prompt + test.n_gen;
  const int per_rep = per_pass * (nc_ab ? 2 : 1);  // tokens one repetition adds to the cache
  const int warmup = std::max(1, per_pass / 10);
  SessionOptions so;
  so.ubatch = std::min(config.ubatch, model.max_batch());
  so.kv_storage = config.kv_storage;
  so.press = press.get();
  // Room for the depth and every repetition when the depth is prefilled once (the warm-up runs on
  // its own before the depth and is shorter than one pass); the depth is prefilled again before
  // every repetition when that would pass the model's context. Tests at depth 0 start every
  // repetition on an empty cache, as llama-bench's do: otherwise the third pp512 would prefill at
  // depth 1024.
  const int64_t context = model.config().context_length;
  const int64_t one_repetition = int64_t{test.depth} + per_rep + 1;
  MKV_CHECK(one_repetition <= context,
            "bench {}: needs {} positions (depth {} + {} timed), more than the model's context of {}; lower -p / -n / -d",
            test.name(), one_repetition, test.depth, per_rep, context);
  const bool fresh_depth = config.fresh_depth || test.depth == 0 ||
                           one_repetition + int64_t{per_rep} * (config.repetitions - 1) > context;
  so.n_ctx = static_cast<int>(one_repetition + int64_t{per_rep} * (fresh_depth ? 0 : config.repetitions - 1));
  Session session(model, so);
  std::unique_ptr<Session> shallow;  // depth0_ab: full cache, reset to depth 0 before each pass
  if (depth0_ab) {
    SessionOptions shallow_options = so;
    shallow_options.press = nullptr;
    shallow_options.n_ctx = per_pass + 1;
    shallow = std::make_unique<Session>(model, shallow_options);
  }

  BenchResult r;
  r.test = test;
  r.kv_row_bytes = session.cache().row_bytes();
  auto progress = [&](const std::string& line) {
    if (config.on_progress) config.on_progress(line);
  };
  auto prefill_depth = [&] {
    session.reset();
    if (test.depth == 0) return;
    progress(fmt::format("prefilling the depth: {} tokens", test.depth));
    const auto start = Clock::now();
    session.prefill(random_tokens(test.depth));  // the press compresses after it
    r.depth_prefill_s = seconds_since(start);
    r.depth_compress_s = session.compress_seconds();
    progress(fmt::format("depth prefilled in {:.1f} s{}", r.depth_prefill_s,
                         press ? fmt::format(" (compression pass {:.2f} s)", r.depth_compress_s) : ""));
  };
  auto timed_pass = [&](Session& s, double* kv_bytes, double* attn_flops) {
    double kv = 0.0, af = 0.0;
    const auto start = Clock::now();
    if (test.n_prompt > 0) {
      // Prompt tokens read the cache as it grows: average of before and after.
      const double kv0 = kv_read_bytes(s.cache()), af0 = attention_flops(s.cache(), c);
      s.prefill(random_tokens(test.n_prompt));
      kv = 0.5 * (kv0 + kv_read_bytes(s.cache()));
      af = 0.5 * (af0 + attention_flops(s.cache(), c));
    } else {
      // The generation loop with random tokens (a sampled token would be random too; sampling
      // and detokenisation are not timed): tgN decodes N tokens.
      GenerationParams params;
      params.max_new_tokens = test.n_gen;
      params.feed_last_token = true;
      GenerationCallbacks callbacks;
      callbacks.pick = [&](std::span<const float>) { return token(rng); };
      callbacks.on_decode = [&] {
        kv += kv_read_bytes(s.cache());
        af += attention_flops(s.cache(), c);
      };
      continue_generation(s, nullptr, {}, params, callbacks);
      kv /= test.n_gen;
      af /= test.n_gen;
    }
    const double seconds = seconds_since(start);
    *kv_bytes = kv;
    *attn_flops = af;
    return seconds;
  };

  // Warm-up: touches the weights and the code paths (untimed).
  session.reset();
  if (test.n_prompt > 0)
    session.prefill(random_tokens(std::min(warmup, so.ubatch)));
  else
    for (int i = 0; i < warmup; ++i) session.decode(token(rng));

  // The passes of one repetition: the test, then its companions. Their order rotates from one
  // repetition to the next, so that no pass always runs first after the depth prefill or on the
  // shortest cache, and all of them sample the same minutes of a drifting machine.
  enum Pass { kTest, kNcOff, kDepth0, kPasses };
  std::vector<Pass> passes = {kTest};
  if (nc_ab) passes.push_back(kNcOff);
  if (depth0_ab) passes.push_back(kDepth0);
  BenchResult nc_off, depth0;  // the companions, filled when their passes run
  auto result_of = [&](Pass pass) -> BenchResult& { return pass == kTest ? r : pass == kNcOff ? nc_off : depth0; };
  auto session_of = [&](Pass pass) -> Session& { return pass == kDepth0 ? *shallow : session; };
  double kv_sum[kPasses] = {}, af_sum[kPasses] = {};  // per pass kind, over its repetitions
  for (int rep = 0; rep < config.repetitions; ++rep) {
    if (rep == 0 || fresh_depth) prefill_depth();
    progress(fmt::format("repetition {}/{}", rep + 1, config.repetitions));
    if (config.around_repetition) config.around_repetition();
    for (std::size_t i = 0; i < passes.size(); ++i) {
      const Pass pass = passes[(i + rep) % passes.size()];
      Session& s = session_of(pass);
      if (pass == kDepth0) s.reset();
      if (nc_ab) session.set_nc(pass != kNcOff);
      double kv = 0.0, af = 0.0;
      const double seconds = timed_pass(s, &kv, &af);
      result_of(pass).tokens_per_s.push_back((test.n_prompt + test.n_gen) / seconds);
      kv_sum[pass] += kv;
      af_sum[pass] += af;
    }
    if (config.around_repetition) config.around_repetition();
  }
  if (nc_ab) session.set_nc(true);
  // A prompt reads the weights once per micro-batch, a generated token once per token; a prompt
  // computes logits (the output head's product) only for the last token of each micro-batch.
  const double weight_passes_per_token =
      test.n_prompt > 0 ? std::ceil(double(test.n_prompt) / so.ubatch) / test.n_prompt : 1.0;
  for (const Pass pass : passes) {
    BenchResult& p = result_of(pass);
    if (pass != kTest) {
      p.test = test;
      p.kv_row_bytes = r.kv_row_bytes;
      p.companion = pass == kNcOff ? kNcOffCompanion : kDepth0Companion;
    }
    const double n = static_cast<double>(p.tokens_per_s.size());
    std::tie(p.mean_tps, p.std_tps) = mean_and_std(p.tokens_per_s);
    p.bytes_per_token = footprint.weight_bytes_per_token * weight_passes_per_token + kv_sum[pass] / n;
    p.flops_per_token = 2.0 * (footprint.matmul_params - footprint.output_params) +
                        2.0 * footprint.output_params * weight_passes_per_token + af_sum[pass] / n;
    const KvCache& cache = session_of(pass).cache();
    p.kv_bytes_held = cache.bytes_held();
    p.kv_rows_held = cache.total_tokens();
  }
  for (const Pass pass : passes)
    if (pass != kTest) r.companions.push_back(std::move(result_of(pass)));
  return r;
}

std::size_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::size_t>(u.ru_maxrss) * 1024;
}

PageResidency page_residency(const void* begin, std::size_t size) {
  const auto first = reinterpret_cast<uintptr_t>(begin), last = first + size;
  std::ifstream smaps("/proc/self/smaps");
  PageResidency r;
  bool inside = false;  // whether the current entry overlaps the range
  std::string line;
  while (std::getline(smaps, line)) {
    // An entry's first line: "start-end perms offset device inode path", the only line whose
    // first ':' (in the device) comes after a space.
    if (line.find(':') > line.find(' ')) {
      unsigned long long start = 0, end = 0;
      char dash = 0;
      std::istringstream words(line);
      inside = (words >> std::hex >> start >> dash >> end) && dash == '-' && start < last && end > first;
      continue;
    }
    if (!inside) continue;
    std::string field;
    std::size_t kib = 0;
    std::istringstream fields(line);
    if (!(fields >> field >> kib)) continue;
    if (field == "Rss:") r.resident += kib * 1024;
    else if (field == "AnonHugePages:" || field == "FilePmdMapped:") r.huge += kib * 1024;
  }
  return r;
}

}  // namespace mkv
