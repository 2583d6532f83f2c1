// Kernel variant selection: what the host offers (checked against /proc/cpuinfo, not only CPUID),
// MOMENTKV_CPU in a child process, and errors that name the problem.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"
#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops_test_util.h"

namespace mkv {
namespace {

// The flags of the first processor in /proc/cpuinfo (empty where there is none).
std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; words >> w;) flags.insert(w);
      return flags;
    }
  return {};
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const MkvError& e) {
    return e.what();
  }
  return "";
}

TEST(CpuVariants, ScalarIsAlwaysThereAndTheBestIsTheDefault) {
  const auto variants = available_cpu_variants();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(variants.front(), CpuVariant::Scalar);
  EXPECT_NE(variants.back(), CpuVariant::Avx512Emulated);  // never the default
  EXPECT_EQ(cpu_variant_from_env(nullptr), variants.back());
  EXPECT_EQ(cpu_variant_from_env(""), variants.back());
  EXPECT_EQ(cpu_variant_unavailable_reason(CpuVariant::Scalar), "");
  for (CpuVariant v : variants) EXPECT_EQ(cpu_variant_from_env(std::string(cpu_variant_name(v)).c_str()), v);
}

TEST(CpuVariants, MatchTheBuildAndTheFlagsInProcCpuinfo) {
  const auto flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags on this host";
  [[maybe_unused]] const bool avx512 = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl") &&
                                      flags.count("avx512dq") && flags.count("avx512_vnni");
#if MOMENTKV_NATIVE
  EXPECT_TRUE(cpu_variant_available(CpuVariant::Avx2));  // this native test binary runs here
  EXPECT_EQ(cpu_variant_available(CpuVariant::Avx512), avx512);
  if (!avx512) {
    EXPECT_EQ(cpu_variant_unavailable_reason(CpuVariant::Avx512), "this CPU lacks AVX-512 F/BW/VL/DQ with VNNI");
  }
#if MOMENTKV_AVX512_EMULATION
  EXPECT_TRUE(cpu_variant_available(CpuVariant::Avx512Emulated));  // needs what avx2 needs
#else
  EXPECT_EQ(cpu_variant_unavailable_reason(CpuVariant::Avx512Emulated),
            "this build has no avx512-emulated kernels (configured without SIMDe: apt-get install libsimde-dev)");
#endif
#else
  for (CpuVariant v : {CpuVariant::Avx2, CpuVariant::Avx512, CpuVariant::Avx512Emulated}) {
    EXPECT_FALSE(cpu_variant_available(v));
    EXPECT_NE(cpu_variant_unavailable_reason(v).find("MOMENTKV_NATIVE=OFF"), std::string::npos);
  }
#endif
}

TEST(CpuVariants, Avx512RunsWhereTheHostHasIt) {
  if (!cpu_variant_available(CpuVariant::Avx512))
    GTEST_SKIP() << "avx512 variant not run: " << cpu_variant_unavailable_reason(CpuVariant::Avx512);
  test::CpuVariantGuard guard(CpuVariant::Avx512);
  EXPECT_EQ(cpu_variant(), CpuVariant::Avx512);
  const float w[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, x[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                                                                      1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(dot_row({GgmlType::F32, w, 1, 16}, 0, x), 136.0f);
}

TEST(CpuVariants, ErrorsNameTheValueAndTheReason) {
  EXPECT_EQ(error_of([] { cpu_variant_from_env("avx9"); }),
            "MOMENTKV_CPU=avx9: unknown kernel variant (scalar, avx2, avx512 or avx512-emulated)");
  EXPECT_NE(error_of([] { cpu_variant_from_env("AVX2"); }).find("unknown kernel variant"), std::string::npos);
  for (CpuVariant v : kAllCpuVariants) {
    if (cpu_variant_available(v)) continue;
    const std::string name(cpu_variant_name(v));
    EXPECT_EQ(error_of([&] { cpu_variant_from_env(name.c_str()); }),
              "MOMENTKV_CPU=" + name + ": " + cpu_variant_unavailable_reason(v));
    EXPECT_EQ(error_of([&] { set_cpu_variant(v); }),
              "kernel variant " + name + ": " + cpu_variant_unavailable_reason(v));
  }
}

TEST(CpuVariants, SummaryNamesTheVariantInUse) {
  test::for_each_cpu_variant([](CpuVariant v) {
    const std::string summary = cpu_variant_summary();
    EXPECT_EQ(summary.rfind("kernels " + std::string(cpu_variant_name(v)) + " (available: scalar", 0), 0u) << summary;
    // The BF16 GEMM's feature is named where the variant in use runs it.
    const bool bf16 = v == CpuVariant::Avx512 && cpu_has_avx512_bf16();
    EXPECT_EQ(summary.find("BF16 prefill with avx512_bf16") != std::string::npos, bf16) << summary;
  });
  // AVX512_BF16 counts only next to the avx512 variant's own features.
  if (cpu_has_avx512_bf16()) {
    EXPECT_EQ(cpu_variant_unavailable_reason(CpuVariant::Avx512).find("lacks"), std::string::npos);
  }
}

// Run by EnvironmentChoosesTheVariant in a child process; skipped when run on its own.
TEST(CpuVariantsChild, UsesTheVariantInTheEnvironment) {
  const char* expected = std::getenv("MKV_TEST_EXPECT_CPU");
  if (expected == nullptr) GTEST_SKIP() << "run by CpuVariants.EnvironmentChoosesTheVariant";
  const std::string error = error_of([] { cpu_variant(); });
  if (std::string(expected) == "error")
    EXPECT_EQ(error, std::string("MOMENTKV_CPU=") + std::getenv("MOMENTKV_CPU") +
                         ": unknown kernel variant (scalar, avx2, avx512 or avx512-emulated)");
  else
    EXPECT_EQ(cpu_variant_name(cpu_variant()), expected);
}

TEST(CpuVariants, EnvironmentChoosesTheVariant) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) GTEST_SKIP() << "no /proc/self/exe";
  self[n] = '\0';
  auto child = [&](const std::string& env, const std::string& expect) {
    const std::string cmd = env + " MKV_TEST_EXPECT_CPU=" + expect + " '" + self +
                            "' --gtest_filter=CpuVariantsChild.* > /dev/null 2>&1";
    return std::system(cmd.c_str());
  };
  for (CpuVariant v : available_cpu_variants()) {
    const std::string name(cpu_variant_name(v));
    EXPECT_EQ(child("MOMENTKV_CPU=" + name, name), 0) << name;
  }
  const std::string best(cpu_variant_name(available_cpu_variants().back()));
  EXPECT_EQ(child("MOMENTKV_CPU=", best), 0);
  EXPECT_EQ(child("env -u MOMENTKV_CPU", best), 0);
  EXPECT_EQ(child("MOMENTKV_CPU=avx9", "error"), 0);
  EXPECT_NE(child("MOMENTKV_CPU=" + best, "avx9"), 0);  // the child really checks
}

}  // namespace
}  // namespace mkv
