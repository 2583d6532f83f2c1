// Hostile inputs in bulk: every truncation of a valid file must throw MkvError, and seeded random
// byte flips must either parse or throw MkvError (never crash; run under ASan/UBSan to see it).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gguf/gguf_test_files.h"
#include "support/test_support.h"

namespace mkv::test {
namespace {

// Every prefix [0, n) of `image` with n in [0, end) must be refused with MkvError.
void expect_prefixes_refused(const std::vector<uint8_t>& image, std::size_t end) {
  for (std::size_t n = 0; n < end; ++n) {
    try {
      GgufFile::from_bytes({image.begin(), image.begin() + static_cast<std::ptrdiff_t>(n)},
                           "prefix");
      ADD_FAILURE() << "the first " << n << " of " << image.size() << " bytes parsed";
      return;
    } catch (const MkvError&) {
    }
  }
}

// `trials` copies of `image`, each with 1-4 bytes in [0, span) XOR-ed with a random nonzero byte;
// returns how many still parsed (those are read in full).
int flip_bytes(const std::vector<uint8_t>& image, std::size_t span, int trials, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::size_t> position(0, span - 1);
  std::uniform_int_distribution<int> n_flips(1, 4), mask(1, 255);
  int parsed = 0;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<uint8_t> bytes = image;
    for (int f = n_flips(rng); f > 0; --f) bytes[position(rng)] ^= static_cast<uint8_t>(mask(rng));
    try {
      const GgufFile file = GgufFile::from_bytes(std::move(bytes), "flipped");
      touch_everything(file);
      ++parsed;
    } catch (const MkvError&) {
    }
  }
  return parsed;
}

TEST(GgufRobustness, EveryTruncationOfASmallFileIsRefused) {
  const std::vector<uint8_t> image = small_writer().to_bytes();
  GgufFile::from_bytes(image, "whole");  // the untruncated file is valid
  expect_prefixes_refused(image, image.size());
}

TEST(GgufRobustness, RandomByteFlipsInASmallFileParseOrThrow) {
  const std::vector<uint8_t> image = small_writer().to_bytes();
  const int parsed = flip_bytes(image, image.size(), 6000, 20240601);
  // Flips in tensor data or in values leave valid files; flips in structure do not.
  EXPECT_GT(parsed, 0);
  EXPECT_LT(parsed, 6000);
}

TEST(GgufRobustness, Stories260KHeaderTruncationsAndFlips) {
  MKV_REQUIRE_ASSET(path, "stories260K.gguf");
  const std::string text = read_file(path);
  const std::vector<uint8_t> image(text.begin(), text.end());
  const std::size_t data_offset = GgufFile::from_bytes(image, "whole").data_offset();
  // Every cut through the header and the first tensors; later cuts sampled (each one copies the
  // whole prefix, so all of them would take minutes under ASan).
  expect_prefixes_refused(image, data_offset + 4096);
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::size_t> cut(data_offset, image.size() - 1);
  for (int i = 0; i < 100; ++i) {
    const std::size_t n = cut(rng);
    EXPECT_THROW(GgufFile::from_bytes(
                     {image.begin(), image.begin() + static_cast<std::ptrdiff_t>(n)}, "cut"),
                 MkvError)
        << n;
  }
  // Copies of a 1.2 MB image are slow under ASan: flip inside the header only, fewer times.
  flip_bytes(image, data_offset, 400, 99);
}

}  // namespace
}  // namespace mkv::test
