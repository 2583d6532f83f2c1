// Thread count control. Kernels parallelise with OpenMP; the CLI's -t sets the count once.
#pragma once

namespace mkv {

// Sets the number of worker threads used by all kernels (n <= 0: one per core). MkvError when n
// is above max_thread_count(): OpenMP cannot start tens of thousands of threads (libgomp prints its
// own message or the first parallel region crashes).
void set_num_threads(int n);
int num_threads();

// The largest thread count accepted: 4 × the hardware threads, but at least 64 (so a script written
// for a bigger machine still runs, oversubscribed, on a small one). More threads than 4 per core
// only add scheduling overhead to these kernels.
int max_thread_count();
// The hardware threads (std::thread::hardware_concurrency, 1 when unknown).
int hardware_thread_count();

}  // namespace mkv
