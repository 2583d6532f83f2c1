// The decode products' work sharing (row_items.h): every item runs exactly once whatever the item
// and thread counts, item sizes follow the row bytes, row runs cover the rows item by item, and a thread that falls behind has the rest
// of its range taken by the others (where a static or guided split would leave it half the work).
#include "ops/row_items.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace mkv {
namespace {

TEST(RowItems, EveryItemRunsOnceForAnyItemAndThreadCount) {
  const int saved = omp_get_max_threads();
  // 20 threads: more ranges than the stack holds (kStackRanges), taken from the heap.
  for (int threads : {1, 2, 3, 8, 20})
    for (int64_t n_items : {0, 1, 2, 3, 7, 64, 1001})
      for (bool parallel : {false, true}) {
        omp_set_num_threads(threads);
        std::vector<std::atomic<int>> runs(n_items);
        row_items::for_each_row_item(n_items, parallel, [&](int64_t i) {
          ASSERT_GE(i, 0);
          ASSERT_LT(i, n_items);
          runs[i].fetch_add(1);
        });
        for (int64_t i = 0; i < n_items; ++i)
          EXPECT_EQ(runs[i].load(), 1) << "item " << i << " of " << n_items << ", " << threads << " threads";
      }
  omp_set_num_threads(saved);
}

TEST(RowItems, ItemRowsFollowTheRowBytes) {
  EXPECT_EQ(row_items::item_rows(0), row_items::kMaxItemRows);
  EXPECT_EQ(row_items::item_rows(100), row_items::kMaxItemRows);
  EXPECT_EQ(row_items::item_rows(2176), 30);   // a Q8_0 row of 2048 values: ~64 KiB per item
  EXPECT_EQ(row_items::item_rows(16384), 4);   // an F16 row of 8192 values
  EXPECT_EQ(row_items::item_rows(1 << 20), 1);  // never zero rows
}

TEST(RowItems, RowRunsCoverEveryRowOnceInItemSizedRuns) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  constexpr std::size_t kRowBytes = 2176;  // 30 rows per item
  for (int64_t n_rows : {0, 1, 29, 30, 31, 2048}) {
    std::vector<std::atomic<int>> runs(n_rows);
    row_items::for_each_row_run(n_rows, kRowBytes, true, [&](int64_t begin, int64_t end) {
      ASSERT_LT(begin, end);
      ASSERT_EQ(begin % 30, 0) << "a run starts at an item boundary";
      ASSERT_EQ(end, std::min<int64_t>(n_rows, begin + 30)) << "a run is one item, the last one shorter";
      for (int64_t r = begin; r < end; ++r) runs[r].fetch_add(1);
    });
    for (int64_t r = 0; r < n_rows; ++r) EXPECT_EQ(runs[r].load(), 1) << "row " << r << " of " << n_rows;
  }
  omp_set_num_threads(saved);
}

TEST(RowItems, AThreadThatFallsBehindHasItsRangeTaken) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  constexpr int64_t kItems = 100;
  std::vector<int> done_by(kItems, -1);
  row_items::for_each_row_item(kItems, true, [&](int64_t i) {
    const int me = omp_get_thread_num();
    done_by[i] = me;
    if (me == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  omp_set_num_threads(saved);
  int by_slow_thread = 0;
  for (int64_t i = 0; i < kItems; ++i) {
    ASSERT_GE(done_by[i], 0) << "item " << i << " never ran";
    by_slow_thread += done_by[i] == 0;
  }
  // Thread 0 owns items 0..49 but spends 2 ms on each; thread 1 finishes its own 50 at once and
  // then takes thread 0's from the back (OpenMP's guided schedule would leave thread 0 at least 25).
  // Up to 20 items leaves thread 1 40 ms to start.
  EXPECT_LE(by_slow_thread, 20);
}

}  // namespace
}  // namespace mkv
