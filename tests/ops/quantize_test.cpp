// quantize_row -> dequantize_row round trips: error bounds per format on seeded Gaussian data,
// plus edge cases (zeros, constants, outliers).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ops/ops_test_util.h"

namespace mkv {
namespace {

using test::kComputableTypes;

// Bound on RMS(error) / RMS(x) for N(0, 1) data, a little above the format's own precision: the
// uniform rounding error step / sqrt(12), with step = range / levels. E.g. Q8_0: the abs-max of 32
// normal values is about 2.2, step 2.2 / 127, error 0.5%; Q4_1: the range of 32 values is about
// 4.1, step 4.1 / 15, error 7.9%.
const std::map<GgmlType, double> kRelativeRmsBound = {
    {GgmlType::F32, 0.0},   {GgmlType::F16, 3e-4},   {GgmlType::BF16, 2.5e-3}, {GgmlType::Q8_0, 6e-3},
    {GgmlType::Q6_K, 0.02}, {GgmlType::Q5_0, 0.045}, {GgmlType::Q5_1, 0.042},  {GgmlType::Q5_K, 0.042},
    {GgmlType::Q4_0, 0.09}, {GgmlType::Q4_1, 0.085}, {GgmlType::Q4_K, 0.085},
};

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> encoded(ggml_row_bytes(type, n));
  quantize_row(type, x.data(), encoded.data(), n);
  std::vector<float> decoded(x.size());
  dequantize_row(type, encoded.data(), decoded.data(), n);
  return decoded;
}

class RoundTrip : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RoundTrip, GaussianErrorWithinFormatPrecision) {
  const GgmlType type = GetParam();
  const auto x = test::gaussian(256 * 32, 7);
  const auto y = round_trip(type, x);
  double err2 = 0, x2 = 0, max_abs_x = 0, max_err = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err2 += (y[i] - x[i]) * double(y[i] - x[i]);
    x2 += x[i] * double(x[i]);
    max_abs_x = std::max(max_abs_x, std::fabs(double(x[i])));
    max_err = std::max(max_err, std::fabs(double(y[i] - x[i])));
  }
  const double relative_rms = std::sqrt(err2 / x2);
  std::printf("%-5s relative RMS error %.5f, max error %.4f\n", std::string(ggml_type_info(type).name).c_str(),
              relative_rms, max_err);
  EXPECT_LE(relative_rms, kRelativeRmsBound.at(type));
  EXPECT_LE(max_err, 4 * kRelativeRmsBound.at(type) * max_abs_x + 1e-7);  // no clipped outliers
}

TEST_P(RoundTrip, ZerosAndConstantsAreExact) {
  const GgmlType type = GetParam();
  const std::vector<float> zeros(256, 0.0f);
  for (float v : round_trip(type, zeros)) ASSERT_EQ(v, 0.0f);
  const std::vector<float> ones(256, 1.0f);
  for (float v : round_trip(type, ones)) ASSERT_NEAR(v, 1.0f, 1e-3f);
}

TEST_P(RoundTrip, KeepsAnOutlierAndTheRestRoughly) {
  const GgmlType type = GetParam();
  auto x = test::gaussian(256, 11, 0.01f);
  x[37] = 5.0f;
  const auto y = round_trip(type, x);
  EXPECT_NEAR(y[37], 5.0f, 5.0f * 4 * kRelativeRmsBound.at(type) + 1e-6f);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 0.5f) << i;
}

INSTANTIATE_TEST_SUITE_P(AllComputableTypes, RoundTrip, ::testing::ValuesIn(kComputableTypes),
                         [](const auto& info) { return std::string(ggml_type_info(info.param).name); });

}  // namespace
}  // namespace mkv
