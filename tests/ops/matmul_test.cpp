// matmul and dot_row against a float64 reference built from dequantize_row, for every type and
// every kernel variant the host runs, and each variant against the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "ops/matmul.h"
#include "ops/ops_test_util.h"

namespace mkv {
namespace {

using test::kComputableTypes;

// The result must be within this fraction of sum |w * x| of the exact (float64) dot product.
constexpr double kRelativeTolerance = 1e-5;

struct Problem {
  GgmlType type;
  int64_t rows, cols, n_tokens;
};

void check_one_variant(const Problem& p) {
  const auto weights = test::quantize_matrix(p.type, test::gaussian(p.rows * p.cols, 3, 0.5f), p.rows, p.cols);
  const auto x = test::gaussian(p.n_tokens * p.cols, 5);
  const WeightMatrix w{p.type, weights.data(), p.rows, p.cols};
  std::vector<float> y(p.n_tokens * p.rows, std::nanf(""));
  matmul(w, x.data(), p.n_tokens, y.data());

  std::vector<float> row(p.cols);
  double worst = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    dequantize_row(p.type, weights.data() + r * w.row_bytes(), row.data(), p.cols);
    for (int64_t t = 0; t < p.n_tokens; ++t) {
      double exact = 0, magnitude = 0;
      for (int64_t c = 0; c < p.cols; ++c) {
        exact += double(row[c]) * x[t * p.cols + c];
        magnitude += std::fabs(double(row[c]) * x[t * p.cols + c]);
      }
      const double error = std::fabs(y[t * p.rows + r] - exact) / std::max(magnitude, 1e-30);
      worst = std::max(worst, error);
      ASSERT_LE(error, kRelativeTolerance) << "row " << r << " token " << t << ": " << y[t * p.rows + r] << " vs " << exact;
    }
  }
  if (p.rows * p.n_tokens > 1000)
    std::printf("%-6s %-5s %lldx%lld, %lld tokens: worst relative error %.2e\n",
                std::string(cpu_variant_name(cpu_variant())).c_str(), std::string(ggml_type_info(p.type).name).c_str(),
                (long long)p.rows, (long long)p.cols, (long long)p.n_tokens, worst);
}

void check_against_reference(const Problem& p) {
  test::for_each_cpu_variant([&](CpuVariant) { check_one_variant(p); });
}

class MatmulType : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulType, MatchesFloat64ReferenceOnSmallShapes) {
  for (int64_t rows : {1, 3, 17})
    for (int64_t n_tokens : {1, 2, 7, 64}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, " << n_tokens << " tokens");
      check_against_reference({GetParam(), rows, 768, n_tokens});  // 3 K blocks, 24 legacy blocks
    }
}

// Up to row_invariant_tokens() tokens, each token's outputs are bitwise those it gets alone (exact
// precision: the float path's row dots; batched decode relies on it).
TEST_P(MatmulType, BatchesUpToTheRowInvariantSizeGiveEachTokenWhatItGetsAlone) {
  constexpr int64_t kRows = 40, kCols = 768;
  const auto weights = test::quantize_matrix(GetParam(), test::gaussian(kRows * kCols, 3, 0.5f), kRows, kCols);
  const WeightMatrix w{GetParam(), weights.data(), kRows, kCols};
  const int64_t n = row_invariant_tokens(w);
  EXPECT_EQ(n, kRowDotMaxTokens);
  const auto x = test::gaussian(n * kCols, 5);
  test::for_each_cpu_variant([&](CpuVariant variant) {
    std::vector<float> batch(n * kRows), alone(kRows);
    matmul(w, x.data(), n, batch.data());
    for (int64_t t = 0; t < n; ++t) {
      matmul(w, x.data() + t * kCols, 1, alone.data());
      EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * kRows, sizeof(float) * kRows))
          << cpu_variant_name(variant) << ", token " << t;
    }
  });
}

TEST_P(MatmulType, MatchesFloat64ReferenceOnALargerBlockedShape) {
  // Several row items (130 > 64 rows), column chunks (2048 > 1024) and token items (70 > 64).
  check_against_reference({GetParam(), 130, 2048, 70});
}

TEST_P(MatmulType, MatchesFloat64ReferenceAtTheRegisterBlocksEdges) {
  // 130 rows: eight 16-row panels and two rows on the row-dot path; 13 and 25 tokens: whole and
  // partial 6-token register blocks; 2 and 3 tokens: the row-dot tiles; 1056 / 1280 columns: a
  // last panel narrower than 256 columns.
  const int64_t cols = ggml_type_info(GetParam()).block_size == 256 ? 1280 : 1056;
  for (int64_t n_tokens : {2, 3, 13, 25}) check_against_reference({GetParam(), 130, cols, n_tokens});
}

TEST_P(MatmulType, DotRowEqualsTheMatmulRow) {
  const GgmlType type = GetParam();
  const int64_t rows = 9, cols = 512;
  const auto weights = test::quantize_matrix(type, test::gaussian(rows * cols, 8), rows, cols);
  const auto x = test::gaussian(cols, 9);
  const WeightMatrix w{type, weights.data(), rows, cols};
  test::for_each_cpu_variant([&](CpuVariant) {
    std::vector<float> y(rows);
    matmul(w, x.data(), 1, y.data());
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(dot_row(w, r, x.data()), y[r]) << r;
  });
}

TEST_P(MatmulType, TokensUpToATileGetTheirOneTokenSums) {
  // model/transformer.cpp's row-invariant decode batches (kRowInvariantTokens = 3) rely on it:
  // 2 or 3 tokens in one product give each token bit for bit what it gets alone.
  const GgmlType type = GetParam();
  const int64_t rows = 40, cols = 1280;
  const auto weights = test::quantize_matrix(type, test::gaussian(rows * cols, 31), rows, cols);
  const WeightMatrix w{type, weights.data(), rows, cols};
  const auto x = test::gaussian(3 * cols, 32);
  test::for_each_cpu_variant([&](CpuVariant) {
    for (int64_t n_tokens : {2, 3}) {
      std::vector<float> together(n_tokens * rows), alone(rows);
      matmul(w, x.data(), n_tokens, together.data());
      for (int64_t t = 0; t < n_tokens; ++t) {
        matmul(w, x.data() + t * cols, 1, alone.data());
        EXPECT_EQ(std::vector<float>(together.begin() + t * rows, together.begin() + (t + 1) * rows), alone)
            << n_tokens << " tokens, token " << t;
      }
    }
  });
}

TEST_P(MatmulType, EveryVariantAgreesWithTheScalarOne) {
  // Same inputs, scalar vs each variant, GEMV and GEMM sizes: within float rounding of each other
  // (the summation orders differ), relative to sum |w * x| of the row and token.
  const GgmlType type = GetParam();
  const int64_t rows = 70, cols = 1024;
  const auto values = test::gaussian(rows * cols, 21, 0.5f);
  const auto weights = test::quantize_matrix(type, values, rows, cols);
  const WeightMatrix w{type, weights.data(), rows, cols};
  for (int64_t n_tokens : {1, 40}) {
    const auto x = test::gaussian(n_tokens * cols, 22);
    std::vector<float> reference(n_tokens * rows), y(n_tokens * rows), row(cols);
    {
      test::CpuVariantGuard scalar(CpuVariant::Scalar);
      matmul(w, x.data(), n_tokens, reference.data());
    }
    test::for_each_cpu_variant([&](CpuVariant) {
      matmul(w, x.data(), n_tokens, y.data());
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, weights.data() + r * w.row_bytes(), row.data(), cols);
        for (int64_t t = 0; t < n_tokens; ++t) {
          double magnitude = 0;
          for (int64_t c = 0; c < cols; ++c) magnitude += std::fabs(double(row[c]) * x[t * cols + c]);
          ASSERT_NEAR(y[t * rows + r], reference[t * rows + r], 2e-6 * magnitude) << "row " << r << " token " << t;
        }
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(AllComputableTypes, MatmulType, ::testing::ValuesIn(kComputableTypes),
                         [](const auto& info) { return std::string(ggml_type_info(info.param).name); });

// The GEMM's work items: 4365 (4352 for Q4_K) columns are packed in three pieces, the last
// narrow (then 5 tail columns); 101 rows make items of four fp16 or two float32 panel groups, the
// last partial, with 5 rows left for the row dots; 17 rows give too few items for the threads, so
// that 300 tokens are split into token ranges; 25 and 300 tokens end in partial register blocks.
TEST(Matmul, GemmAcrossPanelPiecesGroupsAndTokenRanges) {
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::Q4_K}) {  // fp16 and float32 panels
    const bool float_type = type != GgmlType::Q4_K;
    for (int64_t rows : {101, 17})
      for (int64_t n_tokens : {25, 300}) check_against_reference({type, rows, float_type ? 4365 : 4352, n_tokens});
  }
}

TEST(Matmul, FloatTypesWithColumnsNotAMultipleOfEight) {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
    for (int64_t cols : {1, 13, 45})
      for (int64_t n_tokens : {4, 20}) check_against_reference({type, 37, cols, n_tokens});
}

TEST(Matmul, RejectsBadShapes) {
  std::vector<uint8_t> data(1024);
  float x[64] = {}, y[4];
  EXPECT_THROW(matmul({GgmlType::Q8_0, data.data(), 1, 48}, x, 1, y), std::exception);
  EXPECT_THROW(matmul({GgmlType::Q2_K, data.data(), 1, 256}, x, 1, y), std::exception);
  EXPECT_THROW(dot_row({GgmlType::F32, data.data(), 2, 4}, 2, x), std::exception);
}

}  // namespace
}  // namespace mkv
