#include "ops/fma_probe.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace mkv {
namespace {

TEST(FmaProbe, ReportsOnePositiveRatePerPass) {
  const std::vector<double> gflops = fma_probe_passes(3, 1 << 12);
  ASSERT_EQ(gflops.size(), 3u);
  for (double g : gflops) EXPECT_GT(g, 0.0);
  EXPECT_THROW(fma_probe_passes(0), MkvError);
}

}  // namespace
}  // namespace mkv
