#include "model/model_config.h"

#include <cmath>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace mkv {

float ModelConfig::attention_scale() const { return 1.0f / std::sqrt(static_cast<float>(head_dim_k)); }

ModelConfig ModelConfig::from_gguf(const GgufFile& file) {
  ModelConfig c;
  c.arch = file.get_string("general.architecture");
  MKV_CHECK(c.arch == "llama" || c.arch == "qwen2" || c.arch == "qwen3",
            "{}: unsupported architecture '{}' (supported: llama, qwen2, qwen3)", file.path(), c.arch);
  c.name = file.get_string_opt("general.name").value_or("");
  const std::string p = c.arch + ".";
  auto positive = [&](const std::string& key, int64_t value) {
    MKV_CHECK(value > 0 && value < (1 << 24), "{}: key '{}' has invalid value {}", file.path(), key, value);
    return static_cast<int>(value);
  };
  auto required = [&](const std::string& key) { return positive(key, file.get_int(key)); };
  auto optional = [&](const std::string& key, int fallback) {
    auto v = file.get_int_opt(key);
    return v ? positive(key, *v) : fallback;
  };

  c.n_embd = required(p + "embedding_length");
  c.n_layers = required(p + "block_count");
  c.n_heads = required(p + "attention.head_count");
  c.n_kv_heads = optional(p + "attention.head_count_kv", c.n_heads);
  c.n_ff = required(p + "feed_forward_length");
  c.context_length = optional(p + "context_length", 2048);
  MKV_CHECK(c.n_heads % c.n_kv_heads == 0, "{}: {} attention heads is not a multiple of {} KV heads",
            file.path(), c.n_heads, c.n_kv_heads);
  MKV_CHECK(file.has(p + "attention.key_length") || c.n_embd % c.n_heads == 0,
            "{}: embedding length {} is not a multiple of {} heads", file.path(), c.n_embd, c.n_heads);
  c.head_dim_k = optional(p + "attention.key_length", c.n_embd / c.n_heads);
  c.head_dim_v = optional(p + "attention.value_length", c.head_dim_k);
  c.rope_dim = optional(p + "rope.dimension_count", c.head_dim_k);
  c.rope_base = static_cast<float>(file.get_float_opt(p + "rope.freq_base").value_or(10000.0));
  c.rms_eps = static_cast<float>(file.get_float_opt(p + "attention.layer_norm_rms_epsilon").value_or(1e-5));
  MKV_CHECK(c.rope_base > 0 && std::isfinite(c.rope_base), "{}: rope base must be positive and finite, got {}",
            file.path(), c.rope_base);
  // Models use 1e-6 to 1e-5; an epsilon near 1 or above flattens every norm into garbage.
  MKV_CHECK(c.rms_eps > 0 && c.rms_eps < 0.1f, "{}: rms epsilon must be in (0, 0.1), got {}", file.path(), c.rms_eps);
  if (auto scaling = file.get_string_opt(p + "rope.scaling.type"); scaling && *scaling != "none")
    fail("{}: rope scaling '{}' is not supported (Llama-3 scaling via rope_freqs.weight is)", file.path(),
         *scaling);

  c.rope_style = c.arch == "llama" ? RopeStyle::Norm : RopeStyle::Neox;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";

  const auto& embd = file.tensor("token_embd.weight");
  MKV_CHECK(embd.dims.size() == 2 && embd.dims[0] == c.n_embd,
            "{}: tensor 'token_embd.weight' has shape mismatch (expected [{}, n_vocab])", file.path(), c.n_embd);
  c.n_vocab = static_cast<int>(embd.dims[1]);
  return c;
}

PressGeometry ModelConfig::press_geometry() const {
  return {n_layers, n_heads, n_kv_heads, head_dim_k, head_dim_v, attention_scale()};
}

}  // namespace mkv
