// Prefill-sized integer products (MatmulPrecision::Fast, more than kInt8MaxTokens tokens) of every
// integer type (Q8_0, the K-quants, the legacy 4- and 5-bit weights), compiled once per kernel
// variant (private to src/ops; included by kernel_variant.h). Entry point: int8_gemm_rows() (the
// KernelTable signature); matmul_int8.cpp owns the buffers and runs the panels on its thread team.
//
// A GEMM in the layout of llama.cpp's repacked CPU kernels, packed on the fly: kGemmRows weight
// rows at a time are unpacked into blocks of 32 columns in which each 32-bit lane of a vector holds
// 4 consecutive codes of one row (8 rows per vector). A group of 4 activation codes, broadcast to
// every lane, meets 8 rows in one integer dot (VNNI vpdpbusd; AVX2 vpmaddubsw + vpmaddwd), and a
// block's scales apply per lane, once per block and token: about 12 vector instructions per 256
// multiply-adds, where the float GEMM spends 32 FMAs. Each panel is packed once per product and
// serves every token of it.
//
// Codes: Q4_K's, Q5_K's and the legacy types' are packed unsigned as the blocks store them (0..15,
// 0..31) and meet the signed activation codes directly; a block's value is scale·code − min, so
// the product subtracts min·s per block and token (s = d_x·Σ x): Q4_K's and Q5_K's dmin·m_j,
// Q4_0's 8·d and Q5_0's 16·d (their codes' zero points), Q4_1's and Q5_1's −m. Q8_0's are signed: VNNI takes the
// activations as unsigned x + 128 and subtracts 128·Σ codes per block (GemmBlock::bias); AVX2,
// whose vpmaddubsw would saturate on x + 128, uses the sign trick. Q6_K's are packed signed
// (code6 − 32, within ±32) and meet x + 128 on both variants (a vpmaddubsw pair stays within
// 2·255·32 < 2^15); its 16-value sub-blocks have scales of their own, so each half of a block is
// summed, biased and scaled on its own (GemmBlock::scale_high, bias_high).
// The per-(row, token) sums run in another order than the decode kernels', so a token's outputs
// depend on whether its product had more than kInt8MaxTokens tokens, as the float path's do past
// kRowDotMaxTokens. The portable variant computes every token on its own (matmul_int8).
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "ops/int8_operands.h"
#include "ops/matmul_int8_kernels.h"

namespace mkv::kernels::inline MKV_SIMD_NS {
namespace {

#if MKV_SIMD >= 2

// Tokens per tile: 4·T accumulators plus 2 code vectors, a broadcast and, for Q8_0 on AVX2, 2
// magnitudes must fit the registers (AVX-512's 32, AVX2's 16).
template <Kind K>
constexpr int kGemmTokens = MKV_SIMD >= 3 ? 6 : K == Kind::Q8_0 ? 2 : 3;
constexpr bool kBiasedActivations = MKV_SIMD >= 3;    // Q8_0 on VNNI: activations as x + 128
// Whether the tiles read the activations as x + 128 (unsigned) against signed codes.
template <Kind K>
constexpr bool kBiasedTile = (K == Kind::Q8_0 && kBiasedActivations) || K == Kind::Q6_K;
// Column groups (of 4) summed before a scale applies: Q6_K's 16-value sub-blocks, else the block.
template <Kind K>
constexpr int kGroupsPerScale = K == Kind::Q6_K ? 4 : 8;

// Stores 8 rows' 32-byte code vectors (rows[r]: 8 groups of 4 codes) as the 8 group vectors of
// half h of p (lane r = row r's group): an 8 x 8 transpose of 32-bit groups. Returns, with
// kRowSums, the per-row sums of the (signed) codes in lane r; else zeros.
struct RowCodeSums {
  __m256i low, high;  // lane r: row r's codes summed over columns 0-15, 16-31
};
template <bool kRowSums>
inline RowCodeSums store_groups(__m256i rows[8], GemmBlock& p, int h) {
  simd::F8 v[8];
  for (int r = 0; r < 8; ++r) v[r].v = _mm256_castsi256_ps(rows[r]);
  simd::transpose8(v);
  RowCodeSums sums = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int g = 0; g < 8; ++g) {
    const __m256i group = _mm256_castps_si256(v[g].v);
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.codes[g][h]), group);
    if constexpr (kRowSums) {
      __m256i& sum = g < 4 ? sums.low : sums.high;
      sum = _mm256_add_epi32(sum, int8_dots::dot_u8_i32(_mm256_set1_epi8(1), group));
    }
  }
  return sums;
}

// Packs rows [0, kGemmRows) of the panel (row r at w + r·row_bytes) into nb blocks.
template <Kind K>
void pack_gemm_panel(const uint8_t* w, std::size_t row_bytes, int64_t nb, GemmBlock* out) {
  __m256i rows[8];
  for (int h = 0; h < 2; ++h) {
    const uint8_t* half = w + 8 * h * row_bytes;  // rows 8h .. 8h + 7
    if constexpr (K == Kind::Q6_K) {  // super-block s holds blocks 8s .. 8s + 7; block k = 4h6 + q
      for (int64_t s = 0; s < nb / 8; ++s) {
        GemmBlock* p = out + 8 * s;
        for (int r = 0; r < 8; ++r) {
          const uint8_t* block = half + r * row_bytes + s * decoders::Q6_K::kBlockBytes;
          const float d = fp16_at(block + 208);
          const auto* scales = reinterpret_cast<const int8_t*>(block + 192);
          for (int k = 0; k < 8; ++k) {
            p[k].scale[h][r] = d * static_cast<float>(scales[2 * k]);
            p[k].scale_high[h][r] = d * static_cast<float>(scales[2 * k + 1]);
            p[k].min[h][r] = 0.0f;
          }
        }
        for (int k = 0; k < 8; ++k) {
          for (int r = 0; r < 8; ++r)
            rows[r] = decoders::q6k_signed_codes(half + r * row_bytes + s * decoders::Q6_K::kBlockBytes, k / 4, k % 4);
          const RowCodeSums sums = store_groups<true>(rows, p[k], h);
          _mm256_store_si256(reinterpret_cast<__m256i*>(p[k].bias[h]), _mm256_slli_epi32(sums.low, 7));
          _mm256_store_si256(reinterpret_cast<__m256i*>(p[k].bias_high[h]), _mm256_slli_epi32(sums.high, 7));
        }
      }
    } else if constexpr (!kSuperBlocks<K>) {  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1: one 32-value block each
      const std::size_t block_bytes = row_bytes / nb;
      constexpr bool kRowSums = K == Kind::Q8_0 && kBiasedActivations;  // GemmBlock::bias
      for (int64_t b = 0; b < nb; ++b) {
        GemmBlock& p = out[b];
        for (int r = 0; r < 8; ++r) {
          const uint8_t* block = half + r * row_bytes + b * block_bytes;
          rows[r] = block_codes<K>(block);
          p.scale[h][r] = fp16_at(block);
          if constexpr (kHasOffset<K>) p.min[h][r] = -fp16_at(block + 2);
          else if constexpr (kBiasedCodes<K>) p.min[h][r] = static_cast<float>(kZeroPoint<K>) * p.scale[h][r];
          else p.min[h][r] = 0.0f;
        }
        const RowCodeSums sums = store_groups<kRowSums>(rows, p, h);
        _mm256_store_si256(reinterpret_cast<__m256i*>(p.bias[h]), _mm256_slli_epi32(_mm256_add_epi32(sums.low, sums.high), 7));
      }
    } else {  // Q4_K, Q5_K: super-block s holds blocks 8s .. 8s + 7; block j is nibble (j & 1) of
              // qs[32(j/2) ..], Q5_K's fifth bits bit j of qh[0 .. 32)
      constexpr std::size_t kBlockBytes = K == Kind::Q5_K ? decoders::Q5_K::kBlockBytes : decoders::Q4_K::kBlockBytes;
      constexpr std::size_t kQsOffset = K == Kind::Q5_K ? 48 : 16, kQhOffset = 16;
      const __m256i low_mask = _mm256_set1_epi8(0x0f);
      for (int64_t s = 0; s < nb / 8; ++s) {
        GemmBlock* p = out + 8 * s;
        for (int r = 0; r < 8; ++r) {
          const uint8_t* block = half + r * row_bytes + s * kBlockBytes;
          const float d = fp16_at(block), dmin = fp16_at(block + 2);
          const decoders::KScalesMins sm = k_scales_mins(block + 4);
          for (int j = 0; j < 8; ++j) {
            p[j].scale[h][r] = d * static_cast<float>(sm.scale[j]);
            p[j].min[h][r] = dmin * static_cast<float>(sm.min[j]);
            p[j].bias[h][r] = 0;
          }
        }
        for (int pair = 0; pair < 4; ++pair) {
          __m256i high[8];
          for (int r = 0; r < 8; ++r) {
            const uint8_t* block = half + r * row_bytes + s * kBlockBytes;
            const __m256i bytes = int8_dots::load32(block + kQsOffset + 32 * pair);
            rows[r] = _mm256_and_si256(bytes, low_mask);
            high[r] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_mask);
            if constexpr (K == Kind::Q5_K) {  // bits 2·pair and 2·pair + 1 of qh, moved to bit 4
              const __m256i qh = int8_dots::load32(block + kQhOffset), one = _mm256_set1_epi8(1);
              rows[r] = _mm256_or_si256(rows[r], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * pair), one), 4));
              high[r] = _mm256_or_si256(high[r], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * pair + 1), one), 4));
            }
          }
          store_groups<false>(rows, p[2 * pair], h);
          store_groups<false>(high, p[2 * pair + 1], h);
        }
      }
    }
  }
}

// Σ over lanes of 4 codes: acc + the dot of row codes w with the broadcast activation group x.
template <Kind K>
inline __m256i group_dot(__m256i acc, __m256i w, [[maybe_unused]] __m256i w_magnitude, __m256i x) {
  if constexpr (K == Kind::Q8_0 && kBiasedActivations) {
    return _mm256_dpbusd_epi32(acc, x, w);  // (x + 128) · w
  } else if constexpr (K == Kind::Q6_K) {
    return int8_dots::dot_u8_i32_from(acc, x, w);  // (x + 128) · (code6 − 32)
  } else if constexpr (K == Kind::Q8_0) {
    return _mm256_add_epi32(acc, int8_dots::dot_u8_i32(w_magnitude, _mm256_sign_epi8(x, w)));
  } else {
#if MKV_SIMD >= 3
    return _mm256_dpbusd_epi32(acc, w, x);  // codes 0..15 · x
#else
    return _mm256_add_epi32(acc, int8_dots::dot_u8_i32(w, x));
#endif
  }
}

// The activation codes a tile reads: block b of token t at codes + t·token_stride + b·block_stride
// (bytes; the blocks' own q, or the biased copy).
struct TileCodes {
  const uint8_t* codes;
  int64_t token_stride, block_stride;
};

// y[t][0 .. kGemmRows) = the panel's rows against T tokens (token t's codes as x says, its scales
// at xd / xs + t·nb, its outputs at y + t·y_stride).
template <Kind K, int T>
void gemm_tile(const GemmBlock* panel, int64_t nb, TileCodes x, const float* xd, const float* xs, float* y,
               int64_t y_stride) {
  __m256 acc[T][2];
  for (auto& a : acc) a[0] = a[1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const GemmBlock& p = panel[b];
    for (int g0 = 0; g0 < 8; g0 += kGroupsPerScale<K>) {
      __m256i sums[T][2];
      for (auto& s : sums) s[0] = s[1] = _mm256_setzero_si256();
      for (int g = g0; g < g0 + kGroupsPerScale<K>; ++g) {
        const __m256i w0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.codes[g][0]));
        const __m256i w1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(p.codes[g][1]));
        __m256i m0 = w0, m1 = w1;
        if constexpr (K == Kind::Q8_0 && !kBiasedActivations) {
          m0 = _mm256_sign_epi8(w0, w0);
          m1 = _mm256_sign_epi8(w1, w1);
        }
        for (int t = 0; t < T; ++t) {
          int32_t group;
          std::memcpy(&group, x.codes + t * x.token_stride + b * x.block_stride + 4 * g, 4);
          const __m256i broadcast = _mm256_set1_epi32(group);
          sums[t][0] = group_dot<K>(sums[t][0], w0, m0, broadcast);
          sums[t][1] = group_dot<K>(sums[t][1], w1, m1, broadcast);
        }
      }
      const bool high = g0 > 0;  // Q6_K's columns 16-31
      for (int h = 0; h < 2; ++h) {
        const __m256 scale = _mm256_load_ps(high ? p.scale_high[h] : p.scale[h]);
        [[maybe_unused]] const __m256 min = _mm256_load_ps(p.min[h]);
        [[maybe_unused]] const __m256i bias = _mm256_load_si256(reinterpret_cast<const __m256i*>(high ? p.bias_high[h] : p.bias[h]));
        for (int t = 0; t < T; ++t) {
          __m256i s = sums[t][h];
          if constexpr (kBiasedTile<K>) s = _mm256_sub_epi32(s, bias);
          acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(scale, _mm256_set1_ps(xd[t * nb + b])), acc[t][h]);
          if constexpr (K != Kind::Q8_0 && K != Kind::Q6_K)
            acc[t][h] = _mm256_fnmadd_ps(min, _mm256_set1_ps(xs[t * nb + b]), acc[t][h]);
        }
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    _mm256_storeu_ps(y + t * y_stride, acc[t][0]);
    _mm256_storeu_ps(y + t * y_stride + 8, acc[t][1]);
  }
}

// gemm_tile<K, T> for T = 1 .. kGemmTokens<K>, indexed by T - 1.
template <Kind K, int... I>
constexpr auto gemm_tiles(std::integer_sequence<int, I...>) {
  return std::array{&gemm_tile<K, I + 1>...};
}

// The panel of rows [r0, r0 + kGemmRows) against every token.
template <Kind K>
void gemm_panel(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, int64_t r0, GemmBlock* panel, float* y) {
  const int64_t nb = w.cols / 32, cols = w.cols;
  const std::size_t row_bytes = ggml_row_bytes(w.type, w.cols);
  pack_gemm_panel<K>(static_cast<const uint8_t*>(w.data) + r0 * row_bytes, row_bytes, nb, panel);
  static constexpr auto kTiles = gemm_tiles<K>(std::make_integer_sequence<int, kGemmTokens<K>>{});
  // Q8_0 on VNNI and Q6_K take the biased codes (x + 128), the others the signed ones.
  const TileCodes codes = kBiasedTile<K> ? TileCodes{x.biased_codes, cols, 32}
                                                                : TileCodes{reinterpret_cast<const uint8_t*>(x.codes), cols, 32};
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kGemmTokens<K>) {
    const int64_t tokens = std::min<int64_t>(kGemmTokens<K>, n_tokens - t0);
    const TileCodes first{codes.codes + t0 * codes.token_stride, codes.token_stride, codes.block_stride};
    kTiles[tokens - 1](panel, nb, first, x.d + t0 * nb, x.s + t0 * nb, y + t0 * w.rows + r0, w.rows);
  }
}

#endif

void int8_gemm_rows(const WeightMatrix& w, const Int8Activations& x, int64_t n_tokens, int64_t row_begin,
                    int64_t row_end, [[maybe_unused]] GemmBlock* panel, float* y) {
#if MKV_SIMD >= 2
  if (row_end - row_begin == kGemmRows)
    return visit_kind(w.type, [&]<Kind K>() { gemm_panel<K>(w, x, n_tokens, row_begin, panel, y); });
#endif
  visit_kind(w.type, [&]<Kind K>() { run_rows<K>(w, x, n_tokens, row_begin, row_end, y); });
}

}  // namespace
}  // namespace mkv::kernels::inline MKV_SIMD_NS
