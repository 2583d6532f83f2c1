#include "core/threading.h"

#include <omp.h>

#include <atomic>
#include <thread>

#include "core/error.h"

namespace mkv {

int hardware_thread_count() {
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int max_thread_count() {
  const int four_per_core = 4 * hardware_thread_count();
  return four_per_core > 64 ? four_per_core : 64;
}

namespace {
std::atomic<int> g_process_threads{0};  // set_num_threads' last count; 0: never called
}  // namespace

void set_num_threads(int n) {
  if (n <= 0) n = hardware_thread_count();
  MKV_CHECK(n <= max_thread_count(), "thread count {} is above the limit of {} (4 x the {} hardware threads, at least 64)",
            n, max_thread_count(), hardware_thread_count());
  g_process_threads = n;
  omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

void adopt_num_threads() {
  if (const int n = g_process_threads.load(); n > 0) omp_set_num_threads(n);
}

void run_serially_here() { omp_set_num_threads(1); }

}  // namespace mkv
