// A compute-peak probe: every thread runs 12 independent chains of fused multiply-adds, 16 lanes
// wide where the kernels in use are the AVX-512 variant's, else 8 (enough in flight to hide the FMA
// latency on two pipes); the best pass is the machine's FP32 FMA peak, the roofline that prefill
// (a GEMM) is measured against, as the read-bandwidth probe is for decode. Measured in the same
// minutes as a benchmark, it makes prefill speed comparable across hosts, and across the hours of
// a shared host whose clocks drift.
#pragma once

#include <cstdint>
#include <vector>

namespace mkv {

// GFLOP/s (2 per lane per FMA) of each of `passes` passes, after one warm-up pass, with the
// current OpenMP thread count; each thread runs `iterations` x 12 FMAs per pass.
std::vector<double> fma_probe_passes(int passes, int64_t iterations = int64_t{1} << 21);

}  // namespace mkv
