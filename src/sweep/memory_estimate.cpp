#include "sweep/memory_estimate.h"

#include <algorithm>

namespace mkv::sweep {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kOverhead = 512 * kMiB;
constexpr uint64_t kRoundTo = 256 * kMiB;

// The longest prompt one sample of the sweep can have for model `m`.
int64_t prompt_tokens(const SweepSpec& spec, const ModelFacts& m) {
  const int64_t context = spec.ctx_size > 0 ? spec.ctx_size : m.context_length;
  if (spec.benchmark == "ruler" && spec.ruler.data.empty()) return std::min<int64_t>(spec.ruler.length, context);
  if (spec.benchmark == "longbench" && spec.longbench.max_length > 0)
    return std::min<int64_t>(spec.longbench.max_length, context);
  return context;  // data files: prompts up to the context
}

MemoryEstimate for_model(const SweepSpec& spec, const ModelFacts& m) {
  MemoryEstimate e;
  e.prompt_tokens = prompt_tokens(spec, m);
  const uint64_t element = spec.cache_type == "f16" ? 2 : 4;
  const uint64_t per_token = uint64_t(m.n_layers) * m.n_kv_heads * (m.head_dim_k + m.head_dim_v) * element;
  int64_t cached = e.prompt_tokens;
  if (spec.compress_chunks && !spec.budgets.empty())
    cached = std::min<int64_t>(cached, *std::max_element(spec.budgets.begin(), spec.budgets.end()) + spec.ubatch_size);
  e.weights = m.file_bytes;
  e.kv_cache = per_token * uint64_t(cached);
  const uint64_t chunk = uint64_t(std::min<int64_t>(spec.ubatch_size, e.prompt_tokens));
  const uint64_t row = 2ull * m.n_embd + uint64_t(m.n_heads) * (m.head_dim_k + m.head_dim_v) +
                       uint64_t(m.n_kv_heads) * (m.head_dim_k + m.head_dim_v) + 2ull * m.n_ff + m.n_vocab;
  e.activations = chunk * row * sizeof(float);
  e.overhead = kOverhead;
  const uint64_t sum = e.weights + e.kv_cache + e.activations + e.overhead;
  const uint64_t with_margin = sum + sum / 4;
  e.total_mib = int64_t((with_margin + kRoundTo - 1) / kRoundTo * kRoundTo / kMiB);
  return e;
}

}  // namespace

MemoryEstimate estimate_task_memory(const SweepSpec& spec) {
  MemoryEstimate largest;
  for (const ModelFacts& m : spec.models) {
    const MemoryEstimate e = for_model(spec, m);
    if (e.total_mib > largest.total_mib) largest = e;
  }
  return largest;
}

int64_t task_memory_mib(const SweepSpec& spec) {
  return spec.slurm.mem_mib ? *spec.slurm.mem_mib : estimate_task_memory(spec).total_mib;
}

}  // namespace mkv::sweep
