#include "core/threading.h"

#include <omp.h>

#include <thread>

namespace mkv {

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  omp_set_num_threads(n > 0 ? n : 1);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace mkv
