// The vector kernels (vec.h) of every kernel variant the host runs: vec_exp_shifted's documented
// accuracy against std::exp in double and its sums, vec_max, vec_dot, vec_axpy and swiglu against
// double references, with tails that are not a multiple of 8.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/ops_test_util.h"
#include "ops/vec.h"

namespace mkv {
namespace {

TEST(VecExpShifted, WithinTwoUlpOfExpOverTheDocumentedRange) {
  test::for_each_cpu_variant([](CpuVariant) {
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
  });
}

TEST(VecExpShifted, SubtractsTheShiftAndHandlesTails) {
  test::for_each_cpu_variant([](CpuVariant) {
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
  });
}

TEST(VecMax, FindsTheLargestAnywhere) {
  test::for_each_cpu_variant([](CpuVariant) {
    for (int n : {1, 5, 8, 13, 64}) {
      for (int at = 0; at < n; ++at) {
        std::vector<float> x(n, -1.0f);
        x[at] = 2.5f;
        EXPECT_EQ(vec_max(x.data(), n), 2.5f) << "n " << n << " at " << at;
      }
    }
  });
}

TEST(VecDotAxpySwiglu, MatchDoubleReferences) {
  test::for_each_cpu_variant([](CpuVariant) {
    for (int n : {1, 7, 8, 15, 16, 17, 64, 100}) {
      const std::vector<float> a = test::gaussian(n, 11 + n), b = test::gaussian(n, 12 + n);
      double dot = 0.0, magnitude = 0.0;
      for (int i = 0; i < n; ++i) dot += double(a[i]) * b[i], magnitude += std::fabs(double(a[i]) * b[i]);
      EXPECT_NEAR(vec_dot(a.data(), b.data(), n), dot, 1e-6 * magnitude) << "n " << n;

      std::vector<float> y = b;
      vec_axpy(-0.75f, a.data(), y.data(), n);
      for (int i = 0; i < n; ++i) EXPECT_NEAR(y[i], b[i] - 0.75 * a[i], 1e-6 * (1 + std::fabs(b[i]))) << "n " << n;

      std::vector<float> gate = test::gaussian(n, 13 + n, 4.0f);
      const std::vector<float> g0 = gate;
      swiglu(gate.data(), b.data(), n);
      for (int i = 0; i < n; ++i) {
        const double want = g0[i] / (1.0 + std::exp(-double(g0[i]))) * b[i];
        EXPECT_NEAR(gate[i], want, 1e-6 * (1 + std::fabs(want))) << "n " << n << " i " << i;
      }
    }
  });
}

}  // namespace
}  // namespace mkv
