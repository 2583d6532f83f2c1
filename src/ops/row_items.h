// Work sharing for decode-sized matrix products (private to src/ops; used by the float, half and
// integer row-dot kernels of every variant). Such a product streams its weight rows once, so a
// thread wants one long run of consecutive rows (one stream for the hardware prefetcher), and the
// team wants every thread to finish at the same moment (the product ends at the slowest thread).
//
// for_each_row_item() gives each thread of the team one contiguous range of the items, which it
// takes from the front one item at a time; a thread whose range is empty takes items from the back
// of the range with the most items left. Threads stream at slightly different rates (memory
// channels, a late start); stealing from the back keeps the last finisher within about one item of
// the others, where OpenMP's guided schedule (whose first chunk is half the rows, with two threads)
// leaves a faster thread idle for several items. Small items cost one atomic update each.
// In the variant's inline namespace like the other helpers of kernel code (simd_level.h).
#pragma once

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "ops/simd_level.h"

namespace mkv::row_items::inline MKV_SIMD_NS {

// Rows per item for rows of row_bytes bytes: about kItemBytes of weights, at most kMaxItemRows.
inline constexpr std::size_t kItemBytes = 64 * 1024;
inline constexpr int64_t kMaxItemRows = 64;
inline int64_t item_rows(std::size_t row_bytes) {
  return std::clamp<int64_t>(static_cast<int64_t>(kItemBytes / std::max<std::size_t>(row_bytes, 1)), 1, kMaxItemRows);
}

// One thread's range of items, [front, back), packed into one word so that the owner (taking the
// front) and a thief (taking the back) claim items with one compare-and-swap each.
struct alignas(64) ItemRange {
  std::atomic<uint64_t> bounds;

  static constexpr uint64_t pack(uint32_t front, uint32_t back) { return uint64_t{back} << 32 | front; }
  int64_t left() const {
    const uint64_t v = bounds.load(std::memory_order_relaxed);
    return static_cast<int64_t>(v >> 32) - static_cast<int64_t>(v & 0xffffffffu);
  }
  // The front item (from_back false) or the back one, or -1 when the range is empty.
  int64_t take(bool from_back) {
    uint64_t v = bounds.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t front = static_cast<uint32_t>(v), back = static_cast<uint32_t>(v >> 32);
      if (front >= back) return -1;
      const uint64_t next = from_back ? pack(front, back - 1) : pack(front + 1, back);
      if (bounds.compare_exchange_weak(v, next, std::memory_order_relaxed)) return from_back ? back - 1 : front;
    }
  }
};

// Calls item(i) once for every i in [0, n_items), on the calling thread alone unless `parallel`.
// Items must be independent (each writes its own outputs); all are done when this returns.
template <typename ItemFn>
void for_each_row_item(int64_t n_items, bool parallel, ItemFn&& item) {
  const int n_threads = parallel ? omp_get_max_threads() : 1;
  if (n_threads <= 1 || n_items <= 1) {
    for (int64_t i = 0; i < n_items; ++i) item(i);
    return;
  }
  if (n_items > INT32_MAX) {  // more items than a range's 32-bit bounds hold
#pragma omp parallel for schedule(guided)
    for (int64_t i = 0; i < n_items; ++i) item(i);
    return;
  }
  // One range per thread the team may have; a team started with fewer threads leaves some ranges
  // to the thieves. On the stack up to kStackRanges threads (no allocation per product).
  constexpr int kStackRanges = 16;
  ItemRange stack_ranges[kStackRanges];
  std::unique_ptr<ItemRange[]> heap_ranges;
  ItemRange* const ranges =
      n_threads <= kStackRanges ? stack_ranges : (heap_ranges = std::make_unique<ItemRange[]>(n_threads)).get();
  for (int t = 0; t < n_threads; ++t)
    ranges[t].bounds.store(ItemRange::pack(static_cast<uint32_t>(n_items * t / n_threads),
                                           static_cast<uint32_t>(n_items * (t + 1) / n_threads)),
                           std::memory_order_relaxed);
#pragma omp parallel num_threads(n_threads)
  {
    ItemRange& own = ranges[omp_get_thread_num()];
    for (int64_t i = own.take(false); i >= 0; i = own.take(false)) item(i);
    for (;;) {  // steal from the back of the fullest range until every range is empty
      ItemRange* victim = nullptr;
      int64_t most = 0;
      for (int t = 0; t < n_threads; ++t)
        if (const int64_t left = ranges[t].left(); left > most) most = left, victim = &ranges[t];
      if (!victim) break;
      if (const int64_t i = victim->take(true); i >= 0) item(i);
    }
  }
}

// Calls run(row_begin, row_end) once for each of the consecutive runs of item_rows(row_bytes) rows
// (the last one shorter) that cover [0, n_rows): for_each_row_item over rows of row_bytes bytes.
template <typename RunFn>
void for_each_row_run(int64_t n_rows, std::size_t row_bytes, bool parallel, RunFn&& run) {
  const int64_t rows = item_rows(row_bytes);
  for_each_row_item((n_rows + rows - 1) / rows, parallel,
                    [&](int64_t i) { run(i * rows, std::min(n_rows, (i + 1) * rows)); });
}

}  // namespace mkv::row_items::inline MKV_SIMD_NS
