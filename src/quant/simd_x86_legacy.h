/* simd_x86_legacy: AVX2-shaped kernels for the float types and the 32-value block types (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, IQ4_NL) and their activation formats Q8_0 / Q8_1. Internal to src/quant/: included
 * once by simd_avx2.c and once by simd_avx512.c (which compiles the byte dot products to VNNI); names get
 * the ISA suffix through SIMD_NAME.
 *
 * Shape of every block dot product: one 32-value block is one __m256i of bytes, low nibbles (values
 * 0..15) in the low 128 bits and high nibbles (values 16..31) in the high ones, matching the Q8 block's
 * order; its 32 products are summed into 8 int32 lanes, converted to float (exact: |sum| < 2^24) and
 * multiplied by the block's float scale into 8 float accumulators. The integers are the scalar code's;
 * only the order of the float additions differs.
 *
 * The quantizers Q8_0 / Q8_1 must give the scalar reference's bytes: same amax, d = amax / 127,
 * id = 1 / d, q = roundf(x * id) (halfway cases away from zero), d and s rounded to half by fp16.h. */
#ifndef LLM170_QUANT_SIMD_X86_LEGACY_H
#define LLM170_QUANT_SIMD_X86_LEGACY_H

#include "quant/blocks.h"
#include "quant/simd_x86.h"

/* ---- float types ---------------------------------------------------------------------------------- */

static void SIMD_NAME(f32_vec_dot_f32)(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        simd_prefetch(x + i, 16 * sizeof *x);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
    }
    float sum = simd_hsum_ps(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

static void SIMD_NAME(f16_vec_dot_f16)(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        simd_prefetch(x + i, 16 * sizeof *x);
        __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
        __m256 y0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i)));
        __m256 x1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8)));
        __m256 y1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i + 8)));
        a0 = _mm256_fmadd_ps(x0, y0, a0);
        a1 = _mm256_fmadd_ps(x1, y1, a1);
    }
    float sum = simd_hsum_ps(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    *s = sum;
}

/* bfloat16 -> float is a 16-bit left shift of the bits. */
static inline __m256 SIMD_NAME(bf16x8_load)(const uint16_t *p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static void SIMD_NAME(bf16_vec_dot_bf16)(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        simd_prefetch(x + i, 16 * sizeof *x);
        a0 = _mm256_fmadd_ps(SIMD_NAME(bf16x8_load)(x + i), SIMD_NAME(bf16x8_load)(y + i), a0);
        a1 = _mm256_fmadd_ps(SIMD_NAME(bf16x8_load)(x + i + 8), SIMD_NAME(bf16x8_load)(y + i + 8), a1);
    }
    float sum = simd_hsum_ps(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    *s = sum;
}

/* Bit-exact: both conversions are exact. */
static void SIMD_NAME(f16_to_float)(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    for (; i < n; i++) y[i] = fp16_to_f32(x[i]);
}

static void SIMD_NAME(bf16_to_float)(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, SIMD_NAME(bf16x8_load)(x + i));
    for (; i < n; i++) y[i] = bf16_to_f32(x[i]);
}

/* ---- 32-value blocks x Q8_0 / Q8_1 ---------------------------------------------------------------- */

static inline __m256i simd_load32(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

static inline __m256 simd_scale_acc(__m256 acc, __m256i isum, float d) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d), acc);
}

/* Q4_0 values q - 8 in -8..7: the sign trick keeps pmaddubsw pairs within 8 * 127 * 2. */
static void SIMD_NAME(q4_0_vec_dot_q8_0)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK4_0; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i q = _mm256_sub_epi8(simd_nibbles_lo_hi(x[b].qs), eight);
        __m256i isum = simd_dot_s8s8(_mm256_setzero_si256(), q, simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
    }
    *s = simd_hsum_ps(acc);
}

/* Q4_1: sum d*q*yd*yq + m * (yd * sum yq); the second term is the Q8_1 block's precomputed s. */
static void SIMD_NAME(q4_1_vec_dot_q8_1)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summ = 0.0f;
    for (int64_t b = 0; b < n / QK4_1; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = simd_dot_u8s8(_mm256_setzero_si256(), simd_nibbles_lo_hi(x[b].qs), simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
        summ += _cvtsh_ss(x[b].m) * _cvtsh_ss(y[b].s);
    }
    *s = simd_hsum_ps(acc) + summ;
}

/* The 5-bit values of a Q5 block, 0..31, in the nibble order. */
static inline __m256i simd_q5_values(const uint8_t *qs, const uint8_t *qh) {
    uint32_t h;
    memcpy(&h, qh, 4);
    __m256i hi = _mm256_and_si256(simd_bits_to_bytes(h), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(simd_nibbles_lo_hi(qs), hi);
}

static void SIMD_NAME(q5_0_vec_dot_q8_0)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK5_0; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i q = _mm256_sub_epi8(simd_q5_values(x[b].qs, x[b].qh), sixteen); /* -16..15 */
        __m256i isum = simd_dot_s8s8(_mm256_setzero_si256(), q, simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
    }
    *s = simd_hsum_ps(acc);
}

static void SIMD_NAME(q5_1_vec_dot_q8_1)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float summ = 0.0f;
    for (int64_t b = 0; b < n / QK5_1; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i q = simd_q5_values(x[b].qs, x[b].qh); /* 0..31: pairs within 31 * 128 * 2 */
        __m256i isum = simd_dot_u8s8(_mm256_setzero_si256(), q, simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
        summ += _cvtsh_ss(x[b].m) * _cvtsh_ss(y[b].s);
    }
    *s = simd_hsum_ps(acc) + summ;
}

/* Q8_0 x Q8_0: the sign trick needs y != -128, true of activations made by q8_0_from_float
 * (|x * id| <= 127 rounds to at most 127). */
static void SIMD_NAME(q8_0_vec_dot_q8_0)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK8_0; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = simd_dot_s8s8(_mm256_setzero_si256(), simd_load32(x[b].qs), simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
    }
    *s = simd_hsum_ps(acc);
}

/* The IQ4_NL / IQ4_XS code book (values from ggml's kvalues_iq4nl), twice for the two 128-bit lanes. */
static inline __m256i simd_iq4nl_table(void) {
    return _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
}

static void SIMD_NAME(iq4_nl_vec_dot_q8_0)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    const __m256i table = simd_iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK4_NL; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i q = _mm256_shuffle_epi8(table, simd_nibbles_lo_hi(x[b].qs)); /* |q| <= 127 */
        __m256i isum = simd_dot_s8s8(_mm256_setzero_si256(), q, simd_load32(y[b].qs));
        acc = simd_scale_acc(acc, isum, _cvtsh_ss(x[b].d) * _cvtsh_ss(y[b].d));
    }
    *s = simd_hsum_ps(acc);
}

/* ---- dequantize ----------------------------------------------------------------------------------- */

/* 8 int8 -> 8 floats times d: (float)q * d, one rounding, as the scalar code does. */
static inline __m256 simd_i8x8_scaled(__m128i q8, __m256 d) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
}

/* Bit-exact with the scalar code: y = (float)(q - 8) * d. */
static void SIMD_NAME(q4_0_to_float)(const void *vx, float *y, int64_t n) {
    const block_q4_0 *x = vx;
    for (int64_t b = 0; b < n / QK4_0; b++, y += QK4_0) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256 d = _mm256_set1_ps(_cvtsh_ss(x[b].d));
        __m256i q = _mm256_sub_epi8(simd_nibbles_lo_hi(x[b].qs), _mm256_set1_epi8(8));
        __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
        _mm256_storeu_ps(y + 0, simd_i8x8_scaled(lo, d));
        _mm256_storeu_ps(y + 8, simd_i8x8_scaled(_mm_srli_si128(lo, 8), d));
        _mm256_storeu_ps(y + 16, simd_i8x8_scaled(hi, d));
        _mm256_storeu_ps(y + 24, simd_i8x8_scaled(_mm_srli_si128(hi, 8), d));
    }
}

/* Bit-exact with the scalar code: y = (float)q * d. */
static void SIMD_NAME(q8_0_to_float)(const void *vx, float *y, int64_t n) {
    const block_q8_0 *x = vx;
    for (int64_t b = 0; b < n / QK8_0; b++, y += QK8_0) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256 d = _mm256_set1_ps(_cvtsh_ss(x[b].d));
        for (int j = 0; j < QK8_0; j += 8) {
            _mm256_storeu_ps(y + j, simd_i8x8_scaled(_mm_loadl_epi64((const __m128i *)(x[b].qs + j)), d));
        }
    }
}

/* ---- quantize activations ------------------------------------------------------------------------- */

/* One 32-value block to q[0..32) with the reference's d and rounding; returns d (before fp16) and sets
 * *sum to the sum of the q (for Q8_1). */
static inline float SIMD_NAME(q8_block)(const float *x, int8_t *q, int *sum) {
    const float amax = simd_amax(x, 32);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256 v[4];
    for (int k = 0; k < 4; k++) v[k] = simd_round_away(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid));
    simd_store_i8x32(q, _mm256_cvtps_epi32(v[0]), _mm256_cvtps_epi32(v[1]), _mm256_cvtps_epi32(v[2]),
                     _mm256_cvtps_epi32(v[3]));
    if (sum) { /* the q are integers <= 127 in magnitude: float sums of 32 of them are exact */
        __m256 t = _mm256_add_ps(_mm256_add_ps(v[0], v[1]), _mm256_add_ps(v[2], v[3]));
        *sum = (int)simd_hsum_ps(t);
    }
    return d;
}

static void SIMD_NAME(q8_0_from_float)(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < n / QK8_0; b++) y[b].d = fp16_from_f32(SIMD_NAME(q8_block)(x + b * QK8_0, y[b].qs, NULL));
}

static void SIMD_NAME(q8_1_from_float)(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t b = 0; b < n / QK8_1; b++) {
        int sum = 0;
        const float d = SIMD_NAME(q8_block)(x + b * QK8_1, y[b].qs, &sum);
        y[b].d = fp16_from_f32(d);
        y[b].s = fp16_from_f32((float)sum * d);
    }
}

#endif
