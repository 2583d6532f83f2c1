// MatmulPrecision::Fast against float64 references, under every kernel variant the host runs: the
// integer path (8-bit activations x integer weight codes) exact up to float rounding once the
// activations are the quantised ones, and within the activation-rounding bound of the true
// product; F16 and BF16 weights' fp16 / bf16 activations likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/matmul.h"
#include "ops/matmul_int8.h"
#include "ops/quant.h"
#include "ops_test_util.h"

namespace mkv {
namespace {

const GgmlType kInt8Types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                               GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

class PrecisionGuard {
 public:
  explicit PrecisionGuard(MatmulPrecision p) : saved_(matmul_precision()) { set_matmul_precision(p); }
  ~PrecisionGuard() { set_matmul_precision(saved_); }

 private:
  MatmulPrecision saved_;
};

struct Problem {
  int64_t rows, cols, n_tokens;
  std::vector<uint8_t> q;
  std::vector<float> w_deq, x;
  WeightMatrix w;
  Problem(GgmlType type, int64_t rows_, int64_t cols_, int64_t tokens, uint32_t seed)
      : rows(rows_), cols(cols_), n_tokens(tokens) {
    const auto values = test::gaussian(rows * cols, seed);
    q = test::quantize_matrix(type, values, rows, cols);
    w_deq.resize(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(type, q.data() + r * ggml_row_bytes(type, cols), w_deq.data() + r * cols, cols);
    x = test::gaussian(tokens * cols, seed + 1);
    x[3] = 40.0f;  // an outlier: its block's scale is large, the others' are not
    w = {type, q.data(), rows, cols};
  }
};

class Int8Type : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Int8Type, EqualsTheFloat64ProductWithQuantisedActivations) {
  // The last shape is prefill-sized: the integer GEMM (37 rows: two panels of 16 and 5 rows past
  // them, which take the row dots).
  for (const auto& [rows, cols, tokens] : {std::tuple{7, 32, 1}, std::tuple{67, 256, 1}, std::tuple{130, 2048, 3},
                                           std::tuple{37, 512, int(kInt8MaxTokens) + 9}}) {
    if (cols % ggml_type_info(GetParam()).block_size != 0) continue;  // K-quants: 256-value blocks
    Problem p(GetParam(), rows, cols, tokens, 11);
    test::for_each_cpu_variant([&](CpuVariant) {
      std::vector<float> y(tokens * rows);
      matmul_int8(p.w, p.x.data(), tokens, y.data());
      std::vector<ActBlockQ8> xq(cols / 32);
      const int group = activation_group_blocks(GetParam());
      for (int64_t t = 0; t < tokens; ++t) {
        quantize_activations_q8(p.x.data() + t * cols, cols, xq.data(), group);
        for (int64_t r = 0; r < rows; ++r) {
          double ref = 0.0, mag = 0.0;
          for (int64_t c = 0; c < cols; ++c) {
            const double xv = static_cast<double>(xq[c / 32].d) * xq[c / 32].q[c % 32];
            ref += static_cast<double>(p.w_deq[r * cols + c]) * xv;
            mag += std::fabs(static_cast<double>(p.w_deq[r * cols + c]) * xv);
          }
          ASSERT_NEAR(y[t * rows + r], ref, 1e-5 * mag + 1e-6) << "row " << r << " token " << t;
        }
      }
    });
  }
}

TEST_P(Int8Type, Avx512VnniGivesTheAvx2Floats) {
  // The same integer block sums (vpdpbusd vs vpmaddubsw + vpmaddwd) and the same float steps:
  // bit-identical outputs, from the real AVX-512 variant and from SIMDe's emulation of it.
  if (!cpu_variant_available(CpuVariant::Avx2))
    GTEST_SKIP() << "avx2: " << cpu_variant_unavailable_reason(CpuVariant::Avx2);
  // 5 tokens: a tile of kInt8TileTokens and a lone one; 2080 columns: an odd number of blocks,
  // whose last one the two-block steps of the 512-bit Q8_0 row dots take alone.
  constexpr int64_t kTokens = 5;
  int compared = 0;
  for (int64_t cols : {2048, 2080}) {
    if (cols % ggml_type_info(GetParam()).block_size != 0) continue;  // K-quants: 256-value blocks
    Problem p(GetParam(), 67, cols, kTokens, 17);
    std::vector<float> avx2(kTokens * 67);
    {
      test::CpuVariantGuard g(CpuVariant::Avx2);
      matmul_int8(p.w, p.x.data(), kTokens, avx2.data());
    }
    for (CpuVariant v : {CpuVariant::Avx512, CpuVariant::Avx512Emulated}) {
      if (!cpu_variant_available(v)) continue;
      test::CpuVariantGuard g(v);
      std::vector<float> vnni(kTokens * 67);
      matmul_int8(p.w, p.x.data(), kTokens, vnni.data());
      EXPECT_EQ(avx2, vnni) << cpu_variant_name(v) << ", " << cols << " columns";
      ++compared;
    }
  }
  if (compared == 0) GTEST_SKIP() << "avx512: " << cpu_variant_unavailable_reason(CpuVariant::Avx512);
}

TEST_P(Int8Type, WithinTheActivationRoundingBoundOfTheExactProduct) {
  Problem p(GetParam(), 96, 1024, 2, 5);
  test::for_each_cpu_variant([&](CpuVariant) {
    std::vector<float> y(2 * 96);
    {
      PrecisionGuard fast(MatmulPrecision::Fast);
      matmul(p.w, p.x.data(), 2, y.data());  // dispatches to the integer path
    }
    double err2 = 0.0, ref2 = 0.0;
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t r = 0; r < 96; ++r) {
        double ref = 0.0, bound = 0.0;
        const int64_t group = 32 * activation_group_blocks(GetParam());  // values sharing a scale
        for (int64_t b = 0; b < 1024 / group; ++b) {
          double amax = 0.0, wabs = 0.0;
          for (int64_t i = 0; i < group; ++i) {
            const int64_t c = group * b + i;
            ref += static_cast<double>(p.w_deq[r * 1024 + c]) * p.x[t * 1024 + c];
            amax = std::max(amax, std::fabs(static_cast<double>(p.x[t * 1024 + c])));
            wabs += std::fabs(static_cast<double>(p.w_deq[r * 1024 + c]));
          }
          bound += wabs * amax / 254.0;  // |x - x̂| <= d/2 = amax/254 per value
        }
        ASSERT_NEAR(y[t * 96 + r], ref, bound * 1.001 + 1e-4) << "row " << r;
        err2 += (y[t * 96 + r] - ref) * (y[t * 96 + r] - ref);
        ref2 += ref * ref;
      }
    // Typical error: under 1% of the output scale where each 32 values have their own scale. The
    // K-quants' activations share one per 256 values, so the outlier coarsens 8 blocks: 2.5%.
    EXPECT_LT(std::sqrt(err2 / ref2), activation_group_blocks(GetParam()) == 1 ? 0.01 : 0.03);
  });
}

INSTANTIATE_TEST_SUITE_P(QuantisedTypes, Int8Type, ::testing::ValuesIn(kInt8Types),
                         [](const auto& info) { return std::string(ggml_type_info(info.param).name); });

TEST(MatmulPrecision, ExactIsTheDefaultAndTypesWithoutAFastPathKeepTheFloatKernel) {
  EXPECT_EQ(matmul_precision(), MatmulPrecision::Exact);  // unless MOMENTKV_PRECISION=fast
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16, GgmlType::F32}) {
    Problem p(type, 64, 512, 1, 3);
    std::vector<float> exact(64), fast(64);
    matmul(p.w, p.x.data(), 1, exact.data());
    {
      PrecisionGuard g(MatmulPrecision::Fast);
      matmul(p.w, p.x.data(), 1, fast.data());
    }
    EXPECT_EQ(matmul_int8_supported(type), type == GgmlType::Q8_0);
    if (type == GgmlType::F32) {
      EXPECT_EQ(exact, fast);
    } else {
      EXPECT_NE(exact, fast) << ggml_type_info(type).name;  // 8-bit, fp16 or bf16 activations
    }
  }
  // F16 batches of more than kRowDotMaxTokens tokens keep the float kernel in Fast precision (BF16
  // ones take bf16 activations: the next test), and so do F16 and BF16 rows that are not whole
  // 8-value groups (valid: their block size is 1). Prefill-sized batches (more than kInt8MaxTokens
  // tokens) of every quantised type take the integer GEMM.
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    for (const auto& [rows, cols, tokens] : {std::tuple{32, 256, int(kRowDotMaxTokens) + 1}, std::tuple{5, 12, 1}}) {
      Problem p(type, rows, cols, tokens, 4);
      std::vector<float> exact(tokens * rows), fast(exact.size());
      matmul(p.w, p.x.data(), tokens, exact.data());
      PrecisionGuard g(MatmulPrecision::Fast);
      matmul(p.w, p.x.data(), tokens, fast.data());
      if (type == GgmlType::BF16 && cols % 8 == 0) {
        EXPECT_NE(exact, fast);
      } else {
        EXPECT_EQ(exact, fast) << ggml_type_info(type).name << ", " << cols << " columns";
      }
    }
  }
  constexpr int64_t kPrefill = kInt8MaxTokens + 1;
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q5_K,
                        GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_K}) {
    Problem p(type, 32, 256, kPrefill, 4);
    std::vector<float> exact(kPrefill * 32), fast(kPrefill * 32);
    matmul(p.w, p.x.data(), kPrefill, exact.data());
    {
      PrecisionGuard g(MatmulPrecision::Fast);
      matmul(p.w, p.x.data(), kPrefill, fast.data());
    }
    EXPECT_NE(exact, fast) << ggml_type_info(type).name;
  }
}

TEST(MatmulPrecision, FastBatchesGiveEachTokenWhatItGetsAlone) {
  PrecisionGuard g(MatmulPrecision::Fast);
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                        GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    // Half activations (F16, BF16) up to kRowDotMaxTokens, the integer path up to kInt8MaxTokens;
    // 7 tokens: whole tiles (kRowDotTileTokens, kInt8TileTokens) and lone tokens.
    const bool half = type == GgmlType::F16 || type == GgmlType::BF16;
    const int64_t most = half ? kRowDotMaxTokens : kInt8MaxTokens;
    for (int64_t n : {int64_t{7}, most}) {
      Problem p(type, 24, 512, n, 5);
      EXPECT_EQ(row_invariant_tokens(p.w), most);
      std::vector<float> batch(n * 24), alone(24);
      matmul(p.w, p.x.data(), n, batch.data());
      for (int64_t t = 0; t < n; ++t) {
        matmul(p.w, p.x.data() + t * 512, 1, alone.data());
        EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * 24, sizeof(float) * 24))
            << ggml_type_info(type).name << ", " << n << " tokens, token " << t;
      }
    }
  }
}

TEST(MatmulPrecision, FastHalfTypesEqualTheFloat64ProductWithRoundedActivations) {
  PrecisionGuard g(MatmulPrecision::Fast);
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    auto rounded = [type](float v) {
      return type == GgmlType::F16 ? fp16_to_f32(f32_to_fp16(v)) : bf16_to_f32(f32_to_bf16(v));
    };
    // BF16 also at prefill sizes (the bf16 GEMM: vdpbf16ps on AVX512_BF16 hosts): 529 tokens make
    // two token items (276 and 253 tokens), the second ending in a partial register block; 101 rows, two 32-row panels in the
    // first row item, one panel and 5 rows past it in the second; 648 columns, two whole panels and
    // a part one whose column pairs are not a whole 8-pair tile.
    for (const auto& [rows, cols, tokens] : {std::tuple{7, 16, 1}, std::tuple{67, 2048, 3},
                                             std::tuple{130, 520, int(kRowDotMaxTokens)}, std::tuple{101, 648, 529}}) {
      if (type == GgmlType::F16 && tokens > kRowDotMaxTokens) continue;  // F16 prefill keeps float activations
      Problem p(type, rows, cols, tokens, 21);
      // Halfway between two representable values: rounds to even (1.0).
      p.x[5] = type == GgmlType::F16 ? 1.0f + 0x1p-11f : 1.0f + 0x1p-8f;
      test::for_each_cpu_variant([&](CpuVariant) {
        std::vector<float> y(tokens * rows);
        matmul(p.w, p.x.data(), tokens, y.data());
        for (int64_t t = 0; t < tokens; ++t)
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0.0, mag = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
              const double xv = rounded(p.x[t * cols + c]);
              ref += static_cast<double>(p.w_deq[r * cols + c]) * xv;
              mag += std::fabs(static_cast<double>(p.w_deq[r * cols + c]) * xv);
            }
            ASSERT_NEAR(y[t * rows + r], ref, 1e-6 * mag + 1e-7)
                << ggml_type_info(type).name << " row " << r << " token " << t;
          }
      });
    }
  }
}

TEST(QuantizeActivations, RoundsToNearestWithinRange) {
  auto x = test::gaussian(64, 9);
  x[40] = -7.0f;
  std::vector<ActBlockQ8> b(2);
  quantize_activations_q8(x.data(), 64, b.data());
  for (int k = 0; k < 2; ++k) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) {
      EXPECT_LE(std::abs(int{b[k].q[i]}), 127);
      EXPECT_LE(std::fabs(b[k].d * b[k].q[i] - x[32 * k + i]), 0.5001f * b[k].d);
      sum += b[k].q[i];
    }
    EXPECT_FLOAT_EQ(b[k].s, b[k].d * static_cast<float>(sum));
  }
  EXPECT_EQ(b[1].q[8], -127);
  std::vector<float> zeros(32, 0.0f);
  quantize_activations_q8(zeros.data(), 32, b.data());
  EXPECT_EQ(b[0].d, 0.0f);
}

}  // namespace
}  // namespace mkv
