// NC (docs/METHODS.md §3) property tests against float64 full attention over explicit rows.
#include <gtest/gtest.h>

#include "kv/nc.h"
#include "kv/reference.h"

namespace mkv {
namespace {

constexpr int kD = 8;
const float kScale = 1.0f / std::sqrt(float(kD));

// Retained and evicted rows of one head plus a query.
struct Split {
  std::vector<float> q, kr, vr, ke, ve;  // q (d); retained (n_r, d); evicted (n_e, d)
};

Split random_split(std::mt19937& rng, int n_r, int n_e) {
  return {test::normal_vector(rng, kD), test::normal_vector(rng, std::size_t(n_r) * kD),
          test::normal_vector(rng, std::size_t(n_r) * kD), test::normal_vector(rng, std::size_t(n_e) * kD),
          test::normal_vector(rng, std::size_t(n_e) * kD)};
}

std::vector<float> concat(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// o_NC(q) from the retained rows (f_R, LSE_R in float64, then float32) and the moments.
template <typename Moments>
std::vector<float> nc_output(const Split& s, const Moments& moments) {
  std::vector<double> f_r;
  const double lse = test::attention_f64(s.q, s.kr, s.vr, kD, kD, kScale, f_r);
  std::vector<float> out(f_r.begin(), f_r.end());
  nc_blend(moments, s.q.data(), kScale, float(lse), out.data());
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

TEST(Nc, NoEvictedTokensLeavesRetainedOutputExactly) {
  std::mt19937 rng(1);
  const Split s = random_split(rng, 20, 0);
  std::vector<float> out = test::normal_vector(rng, kD), before = out;
  nc_blend(MomentStats(kD, kD), s.q.data(), kScale, 3.0f, out.data());
  EXPECT_EQ(out, before);
  nc_blend(MomentGroups(kD, kD, MomentConfig{true, 4, true, true}), s.q.data(), kScale, 3.0f, out.data());
  EXPECT_EQ(out, before);
}

TEST(Nc, IdenticalEvictedKeysReproduceFullAttention) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 20; ++trial) {
    Split s = random_split(rng, 15, 25);
    const std::vector<float> k0 = test::normal_vector(rng, kD, 0.0f, 2.0f);
    for (int i = 0; i < 25; ++i) std::copy(k0.begin(), k0.end(), &s.ke[i * kD]);
    MomentStats moments(kD, kD);
    moments.merge_rows(s.ke.data(), s.ve.data(), 25);
    std::vector<double> full;
    test::attention_f64(s.q, concat(s.kr, s.ke), concat(s.vr, s.ve), kD, kD, kScale, full);
    EXPECT_LT(max_abs_diff(nc_output(s, moments), full), 2e-5);
  }
}

TEST(Nc, GroupsOfIdenticalKeysReproduceFullAttention) {
  std::mt19937 rng(3);
  Split s = random_split(rng, 10, 30);
  std::vector<std::vector<float>> centres;  // three distinct evicted keys
  for (int g = 0; g < 3; ++g) centres.push_back(test::normal_vector(rng, kD, 0.0f, 2.0f));
  for (int i = 0; i < 30; ++i) std::copy(centres[i % 3].begin(), centres[i % 3].end(), &s.ke[i * kD]);
  MomentGroups groups(kD, kD, MomentConfig{true, 3, true, false});
  groups.merge_rows(s.ke.data(), s.ve.data(), 30);
  std::vector<double> full;
  test::attention_f64(s.q, concat(s.kr, s.ke), concat(s.vr, s.ve), kD, kD, kScale, full);
  EXPECT_LT(max_abs_diff(nc_output(s, groups), full), 2e-5);
}

TEST(Nc, JensenMassNeverExceedsEvictedMass) {
  // Evicted values all 0 ⇒ f̂_E = 0, so with f_R = e_0 the blend returns ŵ_R in component 0.
  std::mt19937 rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    Split s = random_split(rng, 12, 30);
    for (float& k : s.ke) k *= 3.0f;  // spread-out keys: a loose bound
    std::fill(s.ve.begin(), s.ve.end(), 0.0f);
    MomentStats moments(kD, kD);
    moments.merge_rows(s.ke.data(), s.ve.data(), 30);
    std::vector<double> unused;
    const double lse_r = test::attention_f64(s.q, s.kr, s.vr, kD, kD, kScale, unused);
    const double lse_e = test::attention_f64(s.q, s.ke, s.ve, kD, kD, kScale, unused);
    const double w_r = 1.0 / (1.0 + std::exp(lse_e - lse_r));  // exact Z_R / (Z_R + Z_E)
    std::vector<float> out(kD, 0.0f);
    out[0] = 1.0f;
    nc_blend(moments, s.q.data(), kScale, float(lse_r), out.data());
    EXPECT_GE(out[0], w_r - 1e-6) << "trial " << trial;  // ŵ_R ≥ w_R ⇔ Ẑ_E ≤ Z_E
  }
}

TEST(Nc, ErrorDecaysQuadraticallyWithKeySpread) {
  std::mt19937 rng(5);
  const Split base = random_split(rng, 10, 40);
  const std::vector<float> centre = test::normal_vector(rng, kD);
  std::vector<double> log_spread, log_error;
  for (double eps = 0.4; eps > 0.02; eps /= 2.0) {
    Split s = base;
    for (int i = 0; i < 40; ++i)
      for (int a = 0; a < kD; ++a) s.ke[i * kD + a] = centre[a] + float(eps) * base.ke[i * kD + a];
    MomentStats moments(kD, kD);
    moments.merge_rows(s.ke.data(), s.ve.data(), 40);
    std::vector<double> full;
    test::attention_f64(s.q, concat(s.kr, s.ke), concat(s.vr, s.ve), kD, kD, kScale, full);
    log_spread.push_back(std::log(eps));
    log_error.push_back(std::log(max_abs_diff(nc_output(s, moments), full)));
  }
  // Least-squares slope of log error against log spread.
  const double n = double(log_spread.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < log_spread.size(); ++i) {
    sx += log_spread[i], sy += log_error[i];
    sxx += log_spread[i] * log_spread[i], sxy += log_spread[i] * log_error[i];
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  EXPECT_NEAR(slope, 2.0, 0.3) << "errors decay as spread^" << slope;
}

TEST(Nc, SingleGroupMatchesPaperForm) {
  std::mt19937 rng(6);
  const Split s = random_split(rng, 10, 30);
  MomentStats stats(kD, kD);
  MomentGroups groups(kD, kD, MomentConfig{true, 1, true, false});
  stats.merge_rows(s.ke.data(), s.ve.data(), 30);
  groups.merge_rows(s.ke.data(), s.ve.data(), 30);
  const std::vector<float> a = nc_output(s, stats), b = nc_output(s, groups);
  for (int i = 0; i < kD; ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
}

TEST(Nc, ClipBoundsTheFirstOrderTerm) {
  std::mt19937 rng(7);
  Split s = random_split(rng, 4, 30);
  for (int i = 0; i < 30; ++i) s.ve[i * kD] = 10.0f * s.ke[i * kD];  // strong value-key covariance
  for (float& x : s.q) x *= 30.0f;                                  // a query far along it
  MomentGroups clipped(kD, kD, MomentConfig{true, 1, true, true});
  clipped.merge_rows(s.ke.data(), s.ve.data(), 30);
  const MomentStats& g = clipped.groups()[0];
  std::vector<float> est(kD), unclipped(kD);
  moment_estimate(clipped, s.q.data(), kScale, est.data());
  moment_estimate(g, s.q.data(), kScale, unclipped.data());
  double shift = 0.0, raw = 0.0;
  for (int b = 0; b < kD; ++b) {
    shift += std::pow(est[b] - g.value_mean()[b], 2);
    raw += std::pow(unclipped[b] - g.value_mean()[b], 2);
  }
  EXPECT_GT(std::sqrt(raw), g.value_rms_spread());  // the test exercises the clip
  EXPECT_NEAR(std::sqrt(shift), g.value_rms_spread(), 1e-4);
}

TEST(Nc, BatchedEstimatesMatchOneQueryAtATime) {
  // Head size 64 and 40 queries so that the batched products take the blocked matmul paths;
  // some queries are long enough for the clip to act.
  constexpr int d = 64, n_evicted = 300, n_queries = 40;
  const float scale = 0.125f;
  std::mt19937 rng(8);
  const std::vector<float> keys = test::normal_vector(rng, std::size_t(n_evicted) * d);
  const std::vector<float> values = test::normal_vector(rng, std::size_t(n_evicted) * d);
  std::vector<float> queries = test::normal_vector(rng, std::size_t(n_queries) * d);
  for (int i = 0; i < n_queries * d; i += 3 * d)
    for (int a = 0; a < d; ++a) queries[i + a] *= 30.0f;
  const MomentConfig configs[] = {{true, 16, false, false}, {true, 1, true, false}, {true, 4, true, true}};
  for (const MomentConfig& config : configs) {
    MomentGroups moments(d, d, config);
    moments.merge_rows(keys.data(), values.data(), n_evicted / 2);
    moments.merge_rows(&keys[n_evicted / 2 * d], &values[n_evicted / 2 * d], n_evicted / 2);
    std::vector<float> batched(std::size_t(n_queries) * d), one(d);
    moment_estimates(moments, queries.data(), n_queries, scale, batched.data());
    for (int i = 0; i < n_queries; ++i) {
      moment_estimate(moments, &queries[std::size_t(i) * d], scale, one.data());
      for (int b = 0; b < d; ++b)
        ASSERT_NEAR(batched[std::size_t(i) * d + b], one[b], 2e-5 * (1.0f + std::abs(one[b])))
            << "groups " << config.groups << ", query " << i << ", component " << b;
    }
  }
}

}  // namespace
}  // namespace mkv
