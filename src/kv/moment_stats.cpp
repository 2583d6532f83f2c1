#include "kv/moment_stats.h"

#include <cmath>

#include "core/error.h"

namespace mkv {

MomentStats::MomentStats(int head_dim_k, int head_dim_v, bool with_comoment)
    : d_k_(head_dim_k),
      d_v_(head_dim_v),
      with_comoment_(with_comoment),
      key_mean_(head_dim_k, 0.0),
      value_mean_(head_dim_v, 0.0),
      comoment_(with_comoment ? std::size_t(head_dim_k) * head_dim_v : 0, 0.0),
      key_mean_f_(head_dim_k, 0.0f),
      value_mean_f_(head_dim_v, 0.0f),
      cov_f_(with_comoment ? std::size_t(head_dim_k) * head_dim_v : 0, 0.0f) {
  MKV_ASSERT(head_dim_k > 0 && head_dim_v > 0);
}

void MomentStats::merge_rows(const float* keys, const float* values, int64_t m) {
  if (m <= 0) return;
  MomentStats batch(d_k_, d_v_, with_comoment_);
  batch.count_ = m;
  // Pass 1: the batch's own means.
  for (int64_t i = 0; i < m; ++i) {
    for (int a = 0; a < d_k_; ++a) batch.key_mean_[a] += keys[i * d_k_ + a];
    for (int b = 0; b < d_v_; ++b) batch.value_mean_[b] += values[i * d_v_ + b];
  }
  for (double& x : batch.key_mean_) x /= double(m);
  for (double& x : batch.value_mean_) x /= double(m);
  // Pass 2: centred co-moment and value sum of squares around those means.
  std::vector<double> dk(d_k_), dv(d_v_);  // one row, centred
  for (int64_t i = 0; i < m; ++i) {
    for (int a = 0; a < d_k_; ++a) dk[a] = keys[i * d_k_ + a] - batch.key_mean_[a];
    for (int b = 0; b < d_v_; ++b) {
      dv[b] = values[i * d_v_ + b] - batch.value_mean_[b];
      batch.value_sq_dev_ += dv[b] * dv[b];
    }
    if (!with_comoment_) continue;
    for (int b = 0; b < d_v_; ++b) {
      double* row = &batch.comoment_[std::size_t(b) * d_k_];
      for (int a = 0; a < d_k_; ++a) row[a] += dv[b] * dk[a];
    }
  }
  merge(batch);
}

void MomentStats::merge(const MomentStats& other) {
  MKV_ASSERT(other.d_k_ == d_k_ && other.d_v_ == d_v_ && other.with_comoment_ == with_comoment_);
  if (other.count_ == 0) return;
  const double n = double(count_), m = double(other.count_), total = n + m;
  const double w = m / total, cross = n * m / total;
  std::vector<double> dk(d_k_), dv(d_v_);  // Δk = k̄_B − k̄, Δv = v̄_B − v̄
  double dv_sq = 0.0;
  for (int a = 0; a < d_k_; ++a) dk[a] = other.key_mean_[a] - key_mean_[a];
  for (int b = 0; b < d_v_; ++b) {
    dv[b] = other.value_mean_[b] - value_mean_[b];
    dv_sq += dv[b] * dv[b];
  }
  if (with_comoment_) {
    for (int b = 0; b < d_v_; ++b) {
      double* row = &comoment_[std::size_t(b) * d_k_];
      const double* orow = &other.comoment_[std::size_t(b) * d_k_];
      for (int a = 0; a < d_k_; ++a) row[a] += orow[a] + cross * dv[b] * dk[a];
    }
  }
  value_sq_dev_ += other.value_sq_dev_ + cross * dv_sq;
  for (int a = 0; a < d_k_; ++a) key_mean_[a] += w * dk[a];
  for (int b = 0; b < d_v_; ++b) value_mean_[b] += w * dv[b];
  count_ += other.count_;
  refresh_mirror();
}

void MomentStats::clear() { *this = MomentStats(d_k_, d_v_, with_comoment_); }

double MomentStats::value_rms_spread() const {
  return count_ > 0 ? std::sqrt(value_sq_dev_ / double(count_)) : 0.0;
}

int64_t MomentStats::stored_numbers() const {
  return (with_comoment_ ? int64_t(d_k_) * d_v_ : 0) + d_k_ + d_v_ + 1;
}

void MomentStats::refresh_mirror() {
  for (int a = 0; a < d_k_; ++a) key_mean_f_[a] = float(key_mean_[a]);
  for (int b = 0; b < d_v_; ++b) value_mean_f_[b] = float(value_mean_[b]);
  const double inv_n = 1.0 / double(count_);
  for (std::size_t i = 0; i < comoment_.size(); ++i) cov_f_[i] = float(comoment_[i] * inv_n);
}

}  // namespace mkv
