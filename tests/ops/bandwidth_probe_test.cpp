#include "ops/bandwidth_probe.h"

#include <gtest/gtest.h>

namespace mkv {
namespace {

TEST(BandwidthProbe, ReadsTheBufferOncePerPassAndSummarises) {
  const BandwidthProbe probe(std::size_t{8} << 20);
  EXPECT_EQ(probe.bytes(), std::size_t{8} << 20);
  const std::vector<double> gbs = probe.passes_gbs(3);
  ASSERT_EQ(gbs.size(), 3u);
  for (double g : gbs) EXPECT_GT(g, 0.0);
  const PassSummary r = summarize_passes({3.0, 9.0, 1.0, 5.0});
  EXPECT_EQ(r.best, 9.0);
  EXPECT_EQ(r.median, 5.0);  // upper median of an even count
  EXPECT_EQ(summarize_passes({}).best, 0.0);
}

TEST(BandwidthProbe, RoundsToWholePagesOfAtLeastOneMebibyte) {
  EXPECT_EQ(BandwidthProbe(1000).bytes(), std::size_t{1} << 20);
  EXPECT_EQ(BandwidthProbe((std::size_t{2} << 20) + 100).bytes(), std::size_t{2} << 20);
}

}  // namespace
}  // namespace mkv
