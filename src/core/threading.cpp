#include "core/threading.h"

#include <omp.h>

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

void set_num_threads(int n) {
  if (n <= 0) n = hardware_thread_count();
  MKV_CHECK(n <= max_thread_count(), "thread count {} is above the limit of {} (4 x the {} hardware threads, at least 64)",
            n, max_thread_count(), hardware_thread_count());
  omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace mkv
