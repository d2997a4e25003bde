/* simd_x86: the small x86 building blocks shared by the AVX2 and AVX-512 quant kernels (internal to
 * src/quant/). Included only from *_avx2.c and *_avx512.c, which are compiled with their ISA's flags and
 * called only after run-time CPU detection; the same source therefore becomes two sets of machine code.
 *
 * Integer dot products of 8-bit values go through one primitive, dot_u8s8 (unsigned x signed bytes, four
 * products summed into each int32 lane). On AVX2 it is pmaddubsw + pmaddwd; where AVX-512 VNNI is
 * compiled in it is one vpdpbusd. pmaddubsw saturates pairs to int16, so every caller states why its
 * operands stay in range (|u| * |s| * 2 <= 32767). Signed x signed products use the sign trick:
 * x * y == |x| * (y * sign(x)), valid when y != -128 (our activations are in -127..127). */
#ifndef LLM170_QUANT_SIMD_X86_H
#define LLM170_QUANT_SIMD_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "base/fp16.h"

/* Function names carry the ISA: SIMD_NAME(q4_0_vec_dot_q8_0) is q4_0_vec_dot_q8_0_avx2 in simd_avx2.c. */
#define SIMD_CAT2(a, b) a##b
#define SIMD_CAT(a, b) SIMD_CAT2(a, b)
#define SIMD_NAME(f) SIMD_CAT(f, SIMD_SUFFIX)

static inline float simd_hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline void simd_st(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }

/* acc + sum of groups of 4 u[i]*s[i] per int32 lane. */
static inline __m256i simd_dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    __m256i p16 = _mm256_maddubs_epi16(u, s);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
#endif
}

/* acc + sum over pairs of (u[2i]*s[2i] + u[2i+1]*s[2i+1]) * scale16[i]: the per-sub-block scales of the
 * k-quants applied as 16-bit multipliers (pairs never straddle a sub-block of 16). */
static inline __m256i simd_dot_u8s8_scaled(__m256i acc, __m256i u, __m256i s, __m256i scale16) {
    __m256i p16 = _mm256_maddubs_epi16(u, s);
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, p16, scale16);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, scale16));
#endif
}

/* x . y for signed bytes, y != -128. */
static inline __m256i simd_dot_s8s8(__m256i acc, __m256i x, __m256i y) {
    return simd_dot_u8s8(acc, _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 16 packed nibble bytes -> 32 bytes: low nibbles in bytes 0..15, high nibbles in bytes 16..31 (the
 * order of the legacy blocks, where value j is the low nibble of byte j and value j+16 its high one). */
static inline __m256i simd_nibbles_lo_hi(const uint8_t *p) {
    __m128i q = _mm_loadu_si128((const __m128i *)p);
    __m128i m = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}

/* 32 bits -> 32 bytes: byte j is 0xff if bit j is set, else 0. */
static inline __m256i simd_bits_to_bytes(uint32_t bits) {
    __m256i v = _mm256_set1_epi32((int32_t)bits);
    /* byte j takes source byte j/8 ... */
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    v = _mm256_shuffle_epi8(v, spread);
    /* ... and tests bit j%8 of it */
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* roundf() for a vector: nearest integer, halfway cases away from zero. x - trunc(x) is exact in float,
 * so comparing it with 0.5 decides the halfway case exactly (adding 0.5 first would not be exact). */
static inline __m256 simd_round_away(__m256 x) {
    __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(x, t));
    __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    __m256 one = _mm256_or_ps(_mm256_and_ps(x, sign), _mm256_set1_ps(1.0f)); /* +-1 with x's sign */
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

/* 32 int32 in -128..127 (4 x 8, in order) -> 32 int8, in order. */
static inline void simd_store_i8x32(int8_t *dst, __m256i a, __m256i b, __m256i c, __m256i d) {
    __m256i ab = _mm256_packs_epi32(a, b);
    __m256i cd = _mm256_packs_epi32(c, d);
    __m256i v = _mm256_packs_epi16(ab, cd);
    /* the packs interleave 128-bit lanes: dwords come out as a0 b0 c0 d0 a1 b1 c1 d1 */
    v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)dst, v);
}

/* Software prefetch of the weight stream: rows are read once, front to back, and the block kernels do
 * enough work per byte that the hardware prefetchers alone leave the core waiting on DRAM. Measured with
 * `llm170 quant-bench --mb 64 --isa avx512` on a Xeon VM, single thread, no prefetch -> this one: Q8_0
 * dot ~5 -> ~9.4 GB/s, Q4_K ~4.4 -> ~6.5, Q6_K ~4.6 -> ~7.4, F16 ~6.5 -> ~10.4 (4 runs each; 2 KiB
 * ahead gained less, 8 KiB the same; prefetching each cache line exactly once was slightly worse than
 * this one-prefetch-per-64-bytes-of-block, which re-requests some lines). Past the row's end it touches
 * the next row, which a matrix-vector product reads next (a prefetch never faults). */
#define SIMD_PF_AHEAD 4096
static inline void simd_prefetch(const void *p, int size) {
    for (int o = 0; o < size; o += 64) _mm_prefetch((const char *)p + SIMD_PF_AHEAD + o, _MM_HINT_T0);
}

/* max |x[i]| over n (multiple of 8) floats */
static inline float simd_amax(const float *x, int n) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

#endif
