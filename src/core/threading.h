// Thread count control. Kernels parallelise with OpenMP; the CLI's -t sets the count once.
//
// OpenMP's thread count is a setting of each thread: a thread started later (the server's model
// runner, its HTTP workers) begins with OpenMP's default (one per core), not with what the main
// thread set, and every thread that enters a parallel region gets a team of its own. So a thread
// that computes for the process adopts the process's count (adopt_num_threads), and a thread that
// must not start a team runs its parallel regions alone (run_serially_here).
#pragma once

namespace mkv {

// Sets the number of worker threads used by all kernels (n <= 0: one per core): on this thread,
// and on every thread that calls adopt_num_threads(). MkvError when n is above max_thread_count():
// OpenMP cannot start tens of thousands of threads (libgomp prints its own message or the first
// parallel region crashes).
void set_num_threads(int n);
// This thread's count.
int num_threads();
// This thread's parallel regions use the count set_num_threads() set last (OpenMP's default when
// it was never called).
void adopt_num_threads();
// This thread's parallel regions run on it alone: it never starts a team of OpenMP threads.
void run_serially_here();

// The largest thread count accepted: 4 × the hardware threads, but at least 64 (so a script written
// for a bigger machine still runs, oversubscribed, on a small one). More threads than 4 per core
// only add scheduling overhead to these kernels.
int max_thread_count();
// The hardware threads (std::thread::hardware_concurrency, 1 when unknown).
int hardware_thread_count();

}  // namespace mkv
