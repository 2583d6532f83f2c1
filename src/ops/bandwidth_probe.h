// A STREAM-like read-bandwidth probe: every thread sums its share of a large buffer (far larger
// than the caches) with wide loads; the best of several passes is the machine's read bandwidth,
// the roofline that decode (a stream over the weights and the KV cache) is measured against.
#pragma once

#include <cstddef>

namespace mkv {

struct BandwidthProbeResult {
  double best_gbs = 0.0;    // best pass, GB/s (1e9 bytes per second)
  double median_gbs = 0.0;  // median pass
  std::size_t bytes = 0;    // buffer size read per pass
  int threads = 0;
};

// Reads a buffer of `bytes` (rounded to whole 4 KiB pages) `passes` times with the current OpenMP
// thread count (set_num_threads). The buffer is allocated, touched and freed here.
BandwidthProbeResult measure_read_bandwidth(std::size_t bytes = std::size_t{1} << 29, int passes = 7);

}  // namespace mkv
