// A STREAM-like read-bandwidth probe: every thread sums its share of a large buffer (far larger
// than the caches) with wide loads; the best of several passes is the machine's read bandwidth,
// the roofline that decode (a stream over the weights and the KV cache) is measured against.
#pragma once

#include <cstddef>
#include <vector>

namespace mkv {

// The buffer is mapped (2 MiB pages requested) and touched once, at construction, so that the
// probe can run between benchmark tests without page faults or a new allocation: a machine
// whose bandwidth drifts (shared hosts) is then measured in the same minutes as the tests.
class BandwidthProbe {
 public:
  // `bytes` is rounded to whole 4 KiB pages (at least 1 MiB).
  explicit BandwidthProbe(std::size_t bytes = std::size_t{1} << 29);
  ~BandwidthProbe();
  BandwidthProbe(const BandwidthProbe&) = delete;
  BandwidthProbe& operator=(const BandwidthProbe&) = delete;

  // Reads the buffer `passes` times (after one warm-up pass) with the current OpenMP thread
  // count (set_num_threads); returns the GB/s of each pass.
  std::vector<double> passes_gbs(int passes) const;
  std::size_t bytes() const { return bytes_; }

 private:
  float* data_ = nullptr;  // (bytes_ / 4) floats, mapped and touched at construction
  std::size_t bytes_ = 0;
};

// Best and (upper) median of a probe's passes (GB/s here, GFLOP/s for fma_probe.h); 0 for none.
struct PassSummary {
  double best = 0.0;
  double median = 0.0;
};
PassSummary summarize_passes(std::vector<double> passes);

}  // namespace mkv
