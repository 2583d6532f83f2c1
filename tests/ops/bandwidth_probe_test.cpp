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
  const BandwidthProbeResult r = summarize_probe({3.0, 9.0, 1.0, 5.0}, probe.bytes(), 2);
  EXPECT_EQ(r.best_gbs, 9.0);
  EXPECT_EQ(r.median_gbs, 5.0);  // upper median of an even count
  EXPECT_EQ(r.threads, 2);
  EXPECT_EQ(summarize_probe({}, 1, 1).best_gbs, 0.0);
}

TEST(BandwidthProbe, RoundsToWholePagesOfAtLeastOneMebibyte) {
  EXPECT_EQ(BandwidthProbe(1000).bytes(), std::size_t{1} << 20);
  EXPECT_EQ(BandwidthProbe((std::size_t{2} << 20) + 100).bytes(), std::size_t{2} << 20);
}

}  // namespace
}  // namespace mkv
