#include "model/random_model.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "gguf/gguf_writer.h"

namespace mkv {
namespace {

// splitmix64: a fast, seedable generator whose output is identical on every platform.
class FastRandom {
 public:
  explicit FastRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform on [-sqrt(3)·std, sqrt(3)·std): mean 0, standard deviation `std`.
  float uniform(float std) {
    const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;  // [0, 1)
    return static_cast<float>((2.0 * u - 1.0) * std::sqrt(3.0) * std);
  }

 private:
  uint64_t state_;
};

std::vector<float> random_values(FastRandom& rng, int64_t n, float std, float mean = 0.0f) {
  std::vector<float> values(n);
  for (auto& v : values) v = mean + rng.uniform(std);
  return values;
}

// Llama-3.1 rope scaling (factor 8, low 1, high 4, original context 8192) as the converter
// bakes it into rope_freqs.weight.
std::vector<float> llama3_rope_freqs(int head_dim, float base) {
  const double factor = 8.0, low = 1.0, high = 4.0, original = 8192.0;
  std::vector<float> freqs(head_dim / 2);
  for (int i = 0; i < head_dim / 2; ++i) {
    const double wavelen = 2.0 * M_PI / std::pow(base, -2.0 * i / head_dim);
    if (wavelen < original / high) {
      freqs[i] = 1.0f;
    } else if (wavelen > original / low) {
      freqs[i] = static_cast<float>(factor);
    } else {
      const double smooth = (original / wavelen - low) / (high - low);
      freqs[i] = static_cast<float>(1.0 / ((1.0 - smooth) / factor + smooth));
    }
  }
  return freqs;
}

void add_vocab(GgufWriter& w, int n_vocab) {
  MKV_CHECK(n_vocab >= 259, "a random model needs at least 259 tokens (3 control + 256 bytes), got {}", n_vocab);
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};  // unknown, control, control
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);  // byte
  }
  for (int i = static_cast<int>(tokens.size()); i < n_vocab; ++i) {
    tokens.push_back(fmt::format("\u2581t{}", i));
    types.push_back(1);  // normal
  }
  std::vector<float> scores(n_vocab, 0.0f);
  for (int i = 259; i < n_vocab; ++i) scores[i] = static_cast<float>(259 - i);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", std::move(tokens));
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

RandomModelSpec RandomModelSpec::preset(std::string_view name) {
  RandomModelSpec s;
  s.name = std::string(name);
  if (name == "llama-3.2-1b") {
    s.n_vocab = 128256, s.n_embd = 2048, s.n_layers = 16, s.n_heads = 32, s.n_kv_heads = 8, s.head_dim = 64;
    s.n_ff = 8192, s.rope_base = 500000.0f, s.context_length = 131072, s.tied_output = true, s.llama3_rope_freqs = true;
  } else if (name == "llama-3.1-8b") {
    s.n_vocab = 128256, s.n_embd = 4096, s.n_layers = 32, s.n_heads = 32, s.n_kv_heads = 8, s.head_dim = 128;
    s.n_ff = 14336, s.rope_base = 500000.0f, s.context_length = 131072, s.llama3_rope_freqs = true;
  } else if (name == "qwen3-4b") {
    s.arch = "qwen3", s.n_vocab = 151936, s.n_embd = 2560, s.n_layers = 36, s.n_heads = 32, s.n_kv_heads = 8;
    s.head_dim = 128, s.n_ff = 9728, s.rope_base = 1000000.0f, s.context_length = 40960, s.tied_output = true;
  } else if (name == "qwen2.5-7b") {
    s.arch = "qwen2", s.n_vocab = 152064, s.n_embd = 3584, s.n_layers = 28, s.n_heads = 28, s.n_kv_heads = 4;
    s.head_dim = 128, s.n_ff = 18944, s.rope_base = 1000000.0f, s.context_length = 32768;
  } else if (name == "tiny-llama") {
    s.llama3_rope_freqs = true;
  } else if (name == "tiny-qwen2") {
    s.arch = "qwen2", s.tied_output = true, s.rope_base = 1000000.0f;
  } else if (name == "tiny-qwen3") {
    s.arch = "qwen3", s.head_dim = 32, s.rope_base = 1000000.0f;
  } else {
    fail("unknown model shape '{}' (known: {})", name, fmt::join(preset_names(), ", "));
  }
  return s;
}

std::vector<std::string> RandomModelSpec::preset_names() {
  return {"llama-3.2-1b", "llama-3.1-8b", "qwen3-4b", "qwen2.5-7b", "tiny-llama", "tiny-qwen2", "tiny-qwen3"};
}

int64_t RandomModelSpec::parameter_count() const {
  const int64_t q = int64_t{n_heads} * head_dim, kv = int64_t{n_kv_heads} * head_dim;
  const int64_t per_layer = n_embd * (q + 2 * kv) + q * n_embd + 3 * int64_t{n_embd} * n_ff + 2 * n_embd;
  return int64_t{n_vocab} * n_embd * (tied_output ? 1 : 2) + n_layers * per_layer + n_embd;
}

void RandomModelSpec::set_weight_types(std::string_view name) {
  const bool k_mix = name.size() > 2 && (name.ends_with("_M") || name.ends_with("_m"));
  const auto base = ggml_type_from_name(k_mix ? name.substr(0, name.size() - 2) : name);
  const bool mixable = base && (*base == GgmlType::Q4_K || *base == GgmlType::Q5_K);
  MKV_CHECK(base && ggml_type_info(*base).computable && (!k_mix || mixable),
            "unsupported weight type '{}' (use F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, "
            "or llama.cpp's mixes Q4_K_M, Q5_K_M)", name);
  type = *base;
  mix = k_mix ? WeightMix::KQuantMedium : WeightMix::Uniform;
}

GgmlType RandomModelSpec::weight_type(std::string_view role, int layer) const {
  if (mix == WeightMix::Uniform) return type;
  const bool classifier = role == "output" || (tied_output && role == "token_embd");
  const bool more_bits =
      layer >= 0 && (layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2);
  if (classifier || ((role == "attn_v" || role == "ffn_down") && more_bits)) return GgmlType::Q6_K;
  return type;
}

void write_random_model(const RandomModelSpec& s, const std::string& path) {
  MKV_CHECK(s.arch == "llama" || s.arch == "qwen2" || s.arch == "qwen3", "unknown architecture '{}'", s.arch);
  MKV_CHECK(s.n_heads > 0 && s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0,
            "{} heads is not a multiple of {} KV heads", s.n_heads, s.n_kv_heads);
  const int block = ggml_type_info(s.type).block_size;
  for (int width : {s.n_embd, s.n_ff, s.n_heads * s.head_dim})
    MKV_CHECK(width % block == 0, "width {} is not a multiple of the {} block size {}", width,
              ggml_type_info(s.type).name, block);

  GgufWriter w;
  const std::string p = s.arch + ".";
  w.set_string("general.architecture", s.arch);
  w.set_string("general.name", s.name);
  w.set_u32(p + "context_length", s.context_length);
  w.set_u32(p + "embedding_length", s.n_embd);
  w.set_u32(p + "block_count", s.n_layers);
  w.set_u32(p + "feed_forward_length", s.n_ff);
  w.set_u32(p + "attention.head_count", s.n_heads);
  w.set_u32(p + "attention.head_count_kv", s.n_kv_heads);
  w.set_u32(p + "attention.key_length", s.head_dim);
  w.set_u32(p + "attention.value_length", s.head_dim);
  w.set_u32(p + "rope.dimension_count", s.head_dim);
  w.set_f32(p + "rope.freq_base", s.rope_base);
  w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
  add_vocab(w, s.n_vocab);

  FastRandom rng(s.seed);
  // A layer's weight `role` (layer -1: outside the layers), named "blk.L.ROLE.weight" or "ROLE.weight".
  auto matrix = [&](std::string_view role, int layer, int64_t rows, int64_t cols) {
    const std::string name = layer < 0 ? fmt::format("{}.weight", role) : fmt::format("blk.{}.{}.weight", layer, role);
    w.add_tensor_f32(name, s.weight_type(role, layer), {cols, rows},
                     random_values(rng, rows * cols, 1.0f / std::sqrt(float(cols))));
  };
  auto vector = [&](const std::string& name, int64_t n, float mean, float std) {
    w.add_tensor_f32(name, GgmlType::F32, {n}, random_values(rng, n, std, mean));
  };
  const int64_t q = int64_t{s.n_heads} * s.head_dim, kv = int64_t{s.n_kv_heads} * s.head_dim;
  w.add_tensor_f32("token_embd.weight", s.weight_type("token_embd", -1), {s.n_embd, s.n_vocab},
                   random_values(rng, int64_t{s.n_vocab} * s.n_embd, 1.0f));
  vector("output_norm.weight", s.n_embd, 1.0f, 0.05f);
  if (!s.tied_output) matrix("output", -1, s.n_vocab, s.n_embd);
  if (s.llama3_rope_freqs) w.add_tensor_f32("rope_freqs.weight", GgmlType::F32, {s.head_dim / 2}, llama3_rope_freqs(s.head_dim, s.rope_base));
  for (int l = 0; l < s.n_layers; ++l) {
    auto name = [l](const char* what) { return fmt::format("blk.{}.{}", l, what); };
    vector(name("attn_norm.weight"), s.n_embd, 1.0f, 0.05f);
    matrix("attn_q", l, q, s.n_embd);
    matrix("attn_k", l, kv, s.n_embd);
    matrix("attn_v", l, kv, s.n_embd);
    if (s.arch == "qwen2") {
      vector(name("attn_q.bias"), q, 0.0f, 0.3f);
      vector(name("attn_k.bias"), kv, 0.0f, 0.3f);
      vector(name("attn_v.bias"), kv, 0.0f, 0.3f);
    }
    if (s.arch == "qwen3") {
      vector(name("attn_q_norm.weight"), s.head_dim, 1.0f, 0.1f);
      vector(name("attn_k_norm.weight"), s.head_dim, 1.0f, 0.1f);
    }
    matrix("attn_output", l, s.n_embd, q);
    vector(name("ffn_norm.weight"), s.n_embd, 1.0f, 0.05f);
    matrix("ffn_gate", l, s.n_ff, s.n_embd);
    matrix("ffn_up", l, s.n_ff, s.n_embd);
    matrix("ffn_down", l, s.n_embd, s.n_ff);
  }
  w.write(path);
}

}  // namespace mkv
