// Kernel variant selection (cpu_features.h). This file is compiled with the build's flags: it only
// reads CPUID (through __builtin_cpu_supports, which also checks that the OS saves the AVX and
// AVX-512 registers) and hands out a variant's table; it runs none of the variant's code.
#include "ops/cpu_features.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <iterator>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/error.h"
#include "ops/kernel_table.h"

namespace mkv {
namespace {

const KernelTable* table_of(CpuVariant variant) {
  switch (variant) {
    case CpuVariant::Scalar: return kScalarKernels;
    case CpuVariant::Avx2: return kAvx2Kernels;
    case CpuVariant::Avx512: return kAvx512Kernels;
    case CpuVariant::Avx512Emulated: return kAvx512EmulatedKernels;
  }
  return nullptr;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c". It
// is only asked after "avx2", whose check covers the OS saving the AVX registers.
bool host_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

// Whether the host runs the instructions a variant's file is compiled for (simd_level.h).
bool host_runs(CpuVariant variant) {
#if defined(__x86_64__) || defined(__i386__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && host_has_f16c();
  switch (variant) {
    case CpuVariant::Scalar: return true;
    case CpuVariant::Avx2:
    case CpuVariant::Avx512Emulated: return avx2;
    case CpuVariant::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return variant == CpuVariant::Scalar;
#endif
}

bool host_runs_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  return host_runs(CpuVariant::Avx512) && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

CpuVariant best_available() {
  CpuVariant best = CpuVariant::Scalar;
  for (CpuVariant v : kAllCpuVariants)
    if (v != CpuVariant::Avx512Emulated && cpu_variant_available(v)) best = v;
  return best;
}

// The MOMENTKV_CPU value and the table label of each variant, indexed by CpuVariant.
struct VariantNames {
  std::string_view name, label;
};
constexpr VariantNames kVariantNames[] = {
    {"scalar", "scalar"}, {"avx512-emulated", "AVX-512 (emulated)"}, {"avx2", "AVX2"}, {"avx512", "AVX-512"}};
static_assert(std::size(kVariantNames) == std::size(kAllCpuVariants));

// The table in use; null until the first product (or set_cpu_variant) chooses one.
std::atomic<const KernelTable*> g_table{nullptr};

}  // namespace

std::string_view cpu_variant_name(CpuVariant variant) { return kVariantNames[static_cast<int>(variant)].name; }
std::string_view cpu_variant_label(CpuVariant variant) { return kVariantNames[static_cast<int>(variant)].label; }

std::string cpu_variant_unavailable_reason(CpuVariant variant) {
  if (table_of(variant) == nullptr)
    return variant == CpuVariant::Avx512Emulated && kAvx2Kernels != nullptr
               ? "this build has no avx512-emulated kernels (configured without SIMDe: apt-get install libsimde-dev)"
               : fmt::format("this build has no {} kernels (configured with MOMENTKV_NATIVE=OFF)",
                             cpu_variant_name(variant));
  if (!host_runs(variant))
    return variant == CpuVariant::Avx512 ? "this CPU lacks AVX-512 F/BW/VL/DQ with VNNI"
                                         : "this CPU lacks AVX2/FMA/F16C";
  return "";
}

bool cpu_variant_available(CpuVariant variant) { return table_of(variant) != nullptr && host_runs(variant); }

std::vector<CpuVariant> available_cpu_variants() {
  std::vector<CpuVariant> out;
  for (CpuVariant v : kAllCpuVariants)
    if (cpu_variant_available(v)) out.push_back(v);
  return out;
}

CpuVariant cpu_variant_from_env(const char* value) {
  if (value == nullptr || *value == '\0') return best_available();
  for (CpuVariant v : kAllCpuVariants)
    if (cpu_variant_name(v) == value) {
      MKV_CHECK(cpu_variant_available(v), "MOMENTKV_CPU={}: {}", value, cpu_variant_unavailable_reason(v));
      return v;
    }
  fail("MOMENTKV_CPU={}: unknown kernel variant (scalar, avx2, avx512 or avx512-emulated)", value);
}

const KernelTable& kernel_table() {
  const KernelTable* table = g_table.load(std::memory_order_acquire);
  if (table == nullptr) [[unlikely]] {
    const KernelTable* chosen = table_of(cpu_variant_from_env(std::getenv("MOMENTKV_CPU")));
    // Another thread may have chosen first (or set_cpu_variant run): keep its choice.
    g_table.compare_exchange_strong(table, chosen, std::memory_order_acq_rel);
    return *g_table.load(std::memory_order_acquire);
  }
  return *table;
}

CpuVariant cpu_variant() { return kernel_table().variant; }

void set_cpu_variant(CpuVariant variant) {
  MKV_CHECK(cpu_variant_available(variant), "kernel variant {}: {}", cpu_variant_name(variant),
            cpu_variant_unavailable_reason(variant));
  g_table.store(table_of(variant), std::memory_order_release);
}

bool cpu_has_avx512_bf16() {
  static const bool has = host_runs_avx512_bf16();
  return has;
}

std::string cpu_variant_summary() {
  std::vector<std::string_view> names;
  for (CpuVariant v : available_cpu_variants()) names.push_back(cpu_variant_name(v));
  const bool bf16 = cpu_variant() == CpuVariant::Avx512 && cpu_has_avx512_bf16();
  return fmt::format("kernels {} (available: {}; MOMENTKV_CPU forces one{})", cpu_variant_name(cpu_variant()),
                     fmt::join(names, ", "), bf16 ? "; BF16 prefill with avx512_bf16" : "");
}

}  // namespace mkv
