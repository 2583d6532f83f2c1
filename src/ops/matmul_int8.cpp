// The integer decode path (see matmul_int8.h): the precision switch, the activation quantiser
// (shared by every kernel variant, so all of them see the same codes) and the entry point, which
// calls the kernels of the variant in use (matmul_int8_kernels.h through kernel_table.h).
#include "ops/matmul_int8.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "ops/kernel_table.h"

namespace mkv {
namespace {

std::atomic<int> g_precision{[] {
  const char* env = std::getenv("MOMENTKV_PRECISION");
  return env && std::strcmp(env, "fast") == 0 ? static_cast<int>(MatmulPrecision::Fast)
                                              : static_cast<int>(MatmulPrecision::Exact);
}()};

}  // namespace

void set_matmul_precision(MatmulPrecision precision) { g_precision = static_cast<int>(precision); }
MatmulPrecision matmul_precision() { return static_cast<MatmulPrecision>(g_precision.load()); }

bool matmul_int8_supported(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::Q4_1 || type == GgmlType::Q5_0 ||
         type == GgmlType::Q5_1 || type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K;
}

void quantize_activations_q8(const float* x, int64_t n, ActBlockQ8* out, int group_blocks) {
  MKV_CHECK(group_blocks >= 1 && n % (32 * group_blocks) == 0,
            "quantize_activations_q8: {} values is not a multiple of {}", n, 32 * group_blocks);
  for (int64_t g = 0; g < n / 32; g += group_blocks) {
    const float* v = x + 32 * g;
    float amax = 0.0f;
    for (int i = 0; i < 32 * group_blocks; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int64_t b = g; b < g + group_blocks; ++b) {
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) {
        const int q = static_cast<int>(std::nearbyint(x[32 * b + i] * id));
        out[b].q[i] = static_cast<int8_t>(std::clamp(q, -127, 127));
        sum += out[b].q[i];
      }
      out[b].d = d;
      out[b].s = d * static_cast<float>(sum);
    }
  }
}

int activation_group_blocks(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ? 8 : 1;
}

void matmul_int8(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  MKV_CHECK(matmul_int8_supported(w.type) && w.cols % ggml_type_info(w.type).block_size == 0 && w.data != nullptr,
            "matmul_int8: unsupported {} matrix ({} x {})", ggml_type_info(w.type).name, w.rows, w.cols);
  if (w.rows == 0 || n_tokens <= 0) return;
  const int64_t nb = w.cols / 32, cols = w.cols;
  const bool prefill = n_tokens > kInt8MaxTokens;
  // The operands (Int8Activations): every product reads the codes as consecutive bytes and the
  // scales and sums as consecutive floats; the Q8_0 and Q6_K GEMMs the biased codes, Q6_K's row dots
  // (decode, and a GEMM's rows past its last panel) the half-block code sums, Q4_0 and Q5_0 the lane biases.
  const bool biased = prefill && (w.type == GgmlType::Q8_0 || w.type == GgmlType::Q6_K);
  const bool half_sums = w.type == GgmlType::Q6_K;  // also prefill: its rows past the last panel
  const int zero_point = code_zero_point(w.type);
  // Owned by the calling thread and reused across products; grown, never shrunk (a decode step
  // between two prompt chunks does not free the chunks' codes).
  thread_local std::vector<ActBlockQ8> blocks;
  thread_local std::vector<float> d, s;
  thread_local std::vector<uint8_t> biased_codes;
  thread_local std::vector<int16_t> sums16;
  // 64-byte aligned: a block's 32 codes, or its 8 lane biases, in one cache line.
  thread_local AlignedBuffer<int8_t> codes;
  thread_local AlignedBuffer<int32_t> lane_biases;
  auto at_least = [](auto& buffer, int64_t n) {
    if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(n);
  };
  auto aligned_at_least = [](auto& buffer, int64_t n) {
    if (buffer.size() < static_cast<std::size_t>(n)) buffer = std::remove_reference_t<decltype(buffer)>(n);
  };
  at_least(blocks, n_tokens * nb);
  at_least(d, n_tokens * nb);
  at_least(s, n_tokens * nb);
  aligned_at_least(codes, n_tokens * cols);
  if (biased) at_least(biased_codes, n_tokens * cols);
  if (half_sums) at_least(sums16, 2 * n_tokens * nb);
  if (zero_point) aligned_at_least(lane_biases, 8 * n_tokens * nb);
  // Raw pointers: the thread team below must write the calling thread's buffers (thread_local).
  ActBlockQ8* const bp = blocks.data();
  float* const dp = d.data();
  float* const sp = s.data();
  int8_t* const cp = codes.data();
  uint8_t* const bcp = biased ? biased_codes.data() : nullptr;
  int16_t* const hp = half_sums ? sums16.data() : nullptr;
  int32_t* const lbp = zero_point ? lane_biases.data() : nullptr;
  const int group = activation_group_blocks(w.type);
#pragma omp parallel for schedule(static) if (prefill)
  for (int64_t t = 0; t < n_tokens; ++t) {
    quantize_activations_q8(x + t * cols, cols, bp + t * nb, group);
    for (int64_t i = t * nb; i < (t + 1) * nb; ++i) {
      const int8_t* q = bp[i].q;
      dp[i] = bp[i].d;
      sp[i] = bp[i].s;
      std::copy_n(q, 32, cp + 32 * i);
      if (biased)
        for (int l = 0; l < 32; ++l) bcp[32 * i + l] = static_cast<uint8_t>(q[l] + 128);
      if (zero_point)
        for (int l = 0; l < 8; ++l) lbp[8 * i + l] = -zero_point * (q[4 * l] + q[4 * l + 1] + q[4 * l + 2] + q[4 * l + 3]);
      if (half_sums)
        for (int h = 0; h < 2; ++h) {
          int sum = 0;
          for (int l = 16 * h; l < 16 * h + 16; ++l) sum += q[l];
          hp[2 * i + h] = static_cast<int16_t>(sum);
        }
    }
  }
  const Int8Activations acts{
      .blocks = bp, .codes = cp, .d = dp, .s = sp, .biased_codes = bcp, .half_sums = hp, .lane_bias = lbp};
  const KernelTable& kernels = kernel_table();
  if (!prefill) return kernels.matmul_int8(w, acts, n_tokens, y);
  // Prefill: panels of kGemmRows rows shared among the team, each thread packing into its own scratch.
  const int64_t n_panels = (w.rows + kGemmRows - 1) / kGemmRows;
#pragma omp parallel
  {
    thread_local std::vector<GemmBlock> panel;
    panel.resize(nb);
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n_panels; ++i)
      kernels.int8_gemm_rows(w, acts, n_tokens, i * kGemmRows, std::min(w.rows, (i + 1) * kGemmRows), panel.data(), y);
  }
}

}  // namespace mkv
