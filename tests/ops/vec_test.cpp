// vec_exp_shifted and vec_max (softmax, attention, scoring): the documented accuracy of the
// 8-lane exp against std::exp in double, sums, tails that are not a multiple of 8.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/vec.h"

namespace mkv {
namespace {

TEST(VecExpShifted, WithinTwoUlpOfExpOverTheDocumentedRange) {
  std::vector<float> x;
  for (double v = -87.0; v <= 88.0; v += 0.00731) x.push_back(static_cast<float>(v));
  std::vector<float> e = x;
  const double sum = vec_exp_shifted(e.data(), static_cast<int>(e.size()), 0.0f);
  double expected_sum = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double truth = std::exp(static_cast<double>(x[i]));
    expected_sum += static_cast<double>(e[i]);
    // 2 ulp of a float near `truth`, relative: 2 * 2^-23 at worst.
    worst = std::max(worst, std::fabs(e[i] - truth) / truth);
  }
  EXPECT_LE(worst, 2.0 * std::ldexp(1.0, -23));
  EXPECT_NEAR(sum, expected_sum, 1e-12 * expected_sum);  // the returned sum is of the stored values
}

TEST(VecExpShifted, SubtractsTheShiftAndHandlesTails) {
  for (int n : {1, 7, 8, 9, 23}) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i);
    const float shift = x[n - 1];
    const double sum = vec_exp_shifted(x.data(), n, shift);
    double expected = 0.0;
    for (int i = 0; i < n; ++i) {
      const double truth = std::exp(0.25 * i - shift);
      EXPECT_NEAR(x[i], truth, 3e-7 * truth) << "n " << n << " i " << i;
      expected += truth;
    }
    EXPECT_NEAR(sum, expected, 1e-6 * expected) << "n " << n;
  }
}

TEST(VecMax, FindsTheLargestAnywhere) {
  for (int n : {1, 5, 8, 13, 64}) {
    for (int at = 0; at < n; ++at) {
      std::vector<float> x(n, -1.0f);
      x[at] = 2.5f;
      EXPECT_EQ(vec_max(x.data(), n), 2.5f) << "n " << n << " at " << at;
    }
  }
}

}  // namespace
}  // namespace mkv
