// Thread count control. Kernels parallelise with OpenMP; the CLI's -t sets the count once.
#pragma once

namespace mkv {

// Sets the number of worker threads used by all kernels (n <= 0: one per core).
void set_num_threads(int n);
int num_threads();

}  // namespace mkv
