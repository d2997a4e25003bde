/* simd_x86_kquants: AVX2-shaped kernels for the 256-value super-block types (Q2_K..Q6_K, IQ4_XS) against
 * Q8_K activations, the Q8_K quantizer and the Q4_K / Q6_K dequantizers. Internal to src/quant/: included
 * once by simd_avx2.c and once by simd_avx512.c (byte dot products become VNNI there).
 *
 * Shape: one super-block is handled 32 values (one __m256i of bytes) at a time, in the order the Q8_K
 * block stores them. Weights are expanded to non-negative bytes u (the format's offset removed), so
 * value = u - offset; the sub-block scales multiply the pmaddubsw pair sums as int16 and everything is
 * summed into 8 int32 lanes per super-block. The offsets come back exactly through the Q8_K block's
 * bsums (sums of 16 activations): sum sc*(u - o)*y = sum sc*u*y - o * sum_j sc_j * bsums_j. So the
 * integer sum per super-block equals the scalar code's; only the float additions are reordered.
 * pmaddubsw range: u <= 63 and |y| <= 127 keep pairs within 63 * 127 * 2 < 32767.
 *
 * The Q8_K quantizer reproduces the reference bytes: max = the first x of largest |x|, iscale = -127/max,
 * q = min(127, round-half-even(iscale * x)) (cvtps2dq rounds as ggml's nearest_int), d = 1 / iscale. */
#ifndef LLM170_QUANT_SIMD_X86_KQUANTS_H
#define LLM170_QUANT_SIMD_X86_KQUANTS_H

#include "quant/blocks.h"
#include "quant/simd_x86.h"
#include "quant/simd_x86_legacy.h" /* simd_iq4nl_table */

/* The 6-bit scales and mins of Q4_K / Q5_K (8 of each in 12 bytes) as 8 bytes each, sub-block j in byte
 * j: j < 4 in the low 6 bits of bytes j (scale) and j + 4 (min); j >= 4 low 4 bits in byte j + 4 and the
 * top 2 bits in the spare bits 6..7 of bytes j - 4 and j. Done on 32-bit words, 4 sub-blocks at a time. */
static inline void simd_k4_unpack(const uint8_t *p, uint64_t *sc, uint64_t *mn) {
    uint32_t a[3];
    memcpy(a, p, 12);
    const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const uint32_t sc_hi = (a[2] & m4) | (((a[0] >> 6) & m2) << 4);
    const uint32_t mn_hi = ((a[2] >> 4) & m4) | (((a[1] >> 6) & m2) << 4);
    *sc = (a[0] & m6) | (uint64_t)sc_hi << 32;
    *mn = (a[1] & m6) | (uint64_t)mn_hi << 32;
}

/* 8 bytes (unsigned or signed) -> 8 int16, the same in both 128-bit lanes, for simd_pick. */
static inline __m256i simd_u8x8_i16x2(uint64_t v) {
    return _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)v)));
}
static inline __m256i simd_i8x8_i16x2(__m128i v) { return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(v)); }

/* From s (8 int16 per lane, both lanes equal): int16 s[a] in every lane of the low half, s[b] in the high
 * half. a and b are constants once the callers' fixed loops unroll. */
static inline __m256i simd_pick(__m256i s, int a, int b) {
    const __m256i ctrl = _mm256_set_m128i(_mm_set1_epi16((short)(0x0100 + 0x0202 * b)), _mm_set1_epi16((short)(0x0100 + 0x0202 * a)));
    return _mm256_shuffle_epi8(s, ctrl);
}

static inline __m256i simd_lo4(__m256i q) { return _mm256_and_si256(q, _mm256_set1_epi8(0x0f)); }
static inline __m256i simd_hi4(__m256i q) { return _mm256_and_si256(_mm256_srli_epi16(q, 4), _mm256_set1_epi8(0x0f)); }

static inline __m256i simd_ld(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 int16 scales (one per 16 values) times the Q8_K bsums, as 8 int32 lanes (pairs of sub-blocks). */
static inline __m256i simd_scaled_bsums(__m256i sc16, const block_q8_K *y) {
    return _mm256_madd_epi16(sc16, simd_ld(y->bsums));
}

/* ---- Q2_K: u = 2-bit q, x = d * sc * u - dmin * m ------------------------------------------------- */
static void SIMD_NAME(q2_k_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        const __m128i sc8 = _mm_and_si128(s8, _mm_set1_epi8(15));
        const __m128i mn8 = _mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(15));
        const float dy = y[b].d;
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(simd_scaled_bsums(_mm256_cvtepu8_epi16(mn8), &y[b])),
                               _mm256_set1_ps(dy * _cvtsh_ss(x[b].dmin)), accm);
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q = simd_ld(x[b].qs + 32 * h);
            const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(h ? _mm_srli_si128(sc8, 8) : sc8));
            for (int k = 0; k < 4; k++) { /* values 128h + 32k + l = bits 2k..2k+1 of q[l] */
                __m256i u = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), _mm256_set1_epi8(3));
                isum = simd_dot_u8s8_scaled(isum, u, simd_ld(y[b].qs + 128 * h + 32 * k), simd_pick(sc, 2 * k, 2 * k + 1));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dy * _cvtsh_ss(x[b].d)), acc);
    }
    *s = simd_hsum_ps(_mm256_sub_ps(acc, accm));
}

/* ---- Q3_K: value = (u - 4) with u = 2-bit q + 4 * hmask bit; scales 6-bit minus 32 ----------------- */

/* The 16 scales of a Q3_K block minus 32, as int8 in order: low 4 bits of scale j in the nibbles of bytes
 * 0..7 (j < 8: low nibble of byte j; else high nibble of byte j - 8), high 2 bits in bytes 8..11 (scale j
 * at bits 2 * (j / 4) of byte 8 + j % 4). */
static inline __m128i simd_q3_scales(const uint8_t *p) {
    uint32_t a[3];
    memcpy(a, p, 12);
    const uint32_t m4 = 0x0f0f0f0f, m2 = 0x03030303;
    const __m128i u = _mm_setr_epi32((int)((a[0] & m4) | (((a[2] >> 0) & m2) << 4)),
                                     (int)((a[1] & m4) | (((a[2] >> 2) & m2) << 4)),
                                     (int)(((a[0] >> 4) & m4) | (((a[2] >> 4) & m2) << 4)),
                                     (int)(((a[1] >> 4) & m4) | (((a[2] >> 6) & m2) << 4)));
    return _mm_sub_epi8(u, _mm_set1_epi8(32));
}

static void SIMD_NAME(q3_k_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = simd_q3_scales(x[b].scales);
        /* the -4 offset of every value: isum starts at -4 * sum_j sc_j * bsums_j */
        __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(),
                                        _mm256_slli_epi32(simd_scaled_bsums(_mm256_cvtepi8_epi16(s8), &y[b]), 2));
        const __m256i hm = simd_ld(x[b].hmask);
        for (int h = 0; h < 2; h++) {
            const __m256i q = simd_ld(x[b].qs + 32 * h);
            const __m256i sc = simd_i8x8_i16x2(h ? _mm_srli_si128(s8, 8) : s8);
            for (int k = 0; k < 4; k++) { /* values 128h + 32k + l: bits 2k of q[l], bit 4h + k of hmask[l] */
                /* move hmask bit 4h + k to bit 2 (the 16-bit shifts only bring in bits from the other byte at
                 * positions the mask drops: shift counts stay within 0..5) */
                const int hb = 4 * h + k;
                __m256i hi = hb >= 2 ? _mm256_srli_epi16(hm, hb - 2) : _mm256_slli_epi16(hm, 2 - hb);
                hi = _mm256_and_si256(hi, _mm256_set1_epi8(4));
                __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), _mm256_set1_epi8(3)), hi);
                isum = simd_dot_u8s8_scaled(isum, u, simd_ld(y[b].qs + 128 * h + 32 * k), simd_pick(sc, 2 * k, 2 * k + 1));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(acc);
}

/* ---- Q4_K / Q5_K: x = d * sc * u - dmin * m over 8 sub-blocks of 32 ------------------------------- */

/* dmin * dy * sum_j m_j * (bsums[2j] + bsums[2j+1]), added into 8 float lanes */
static inline __m256 simd_k4_mins(__m256 accm, uint64_t mn, const block_q8_K *y, float dmin) {
    const __m256i pairs = _mm256_madd_epi16(simd_ld(y->bsums), _mm256_set1_epi16(1));
    const __m256i m32 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mn));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(pairs, m32)), _mm256_set1_ps(y->d * dmin), accm);
}

static void SIMD_NAME(q4_k_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        accm = simd_k4_mins(accm, mn8, &y[b], _cvtsh_ss(x[b].dmin));
        const __m256i sc = simd_u8x8_i16x2(sc8);
        __m256i isum = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) { /* 32 bytes: low nibbles = sub-block 2g, high = 2g + 1 */
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            isum = simd_dot_u8s8_scaled(isum, simd_lo4(q), simd_ld(y[b].qs + 64 * g), simd_pick(sc, 2 * g, 2 * g));
            isum = simd_dot_u8s8_scaled(isum, simd_hi4(q), simd_ld(y[b].qs + 64 * g + 32), simd_pick(sc, 2 * g + 1, 2 * g + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(_mm256_sub_ps(acc, accm));
}

static void SIMD_NAME(q5_k_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i sixteen = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        accm = simd_k4_mins(accm, mn8, &y[b], _cvtsh_ss(x[b].dmin));
        const __m256i sc = simd_u8x8_i16x2(sc8);
        const __m256i qh = simd_ld(x[b].qh);
        __m256i isum = _mm256_setzero_si256();
        for (int g = 0; g < 4; g++) { /* 5th bit of value l of sub-block j is bit j of qh[l] */
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * g))), b1 = _mm256_set1_epi8((char)(2 << (2 * g)));
            __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b0), b0), sixteen);
            __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, b1), b1), sixteen);
            isum = simd_dot_u8s8_scaled(isum, _mm256_or_si256(simd_lo4(q), h0), simd_ld(y[b].qs + 64 * g),
                                        simd_pick(sc, 2 * g, 2 * g));
            isum = simd_dot_u8s8_scaled(isum, _mm256_or_si256(simd_hi4(q), h1), simd_ld(y[b].qs + 64 * g + 32),
                                        simd_pick(sc, 2 * g + 1, 2 * g + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(_mm256_sub_ps(acc, accm));
}

/* ---- Q6_K: value = u - 32, u = 4 bits of ql + 2 bits of qh; int8 scales per 16 --------------------- */

/* The four 32-value groups of one 128-value half, as u in 0..63 (group k = values 32k .. 32k + 31). */
static inline void simd_q6_half(const uint8_t *ql, const uint8_t *qh, __m256i u[4]) {
    const __m256i l0 = simd_ld(ql), l1 = simd_ld(ql + 32), h = simd_ld(qh);
    const __m256i m30 = _mm256_set1_epi8(0x30);
    u[0] = _mm256_or_si256(simd_lo4(l0), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    u[1] = _mm256_or_si256(simd_lo4(l1), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    u[2] = _mm256_or_si256(simd_hi4(l0), _mm256_and_si256(h, m30));
    u[3] = _mm256_or_si256(simd_hi4(l1), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

static void SIMD_NAME(q6_k_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[b].scales);
        /* the -32 offset of every value: isum starts at -32 * sum_j sc_j * bsums_j */
        __m256i isum = _mm256_sub_epi32(_mm256_setzero_si256(),
                                        _mm256_slli_epi32(simd_scaled_bsums(_mm256_cvtepi8_epi16(s8), &y[b]), 5));
        for (int h = 0; h < 2; h++) {
            __m256i u[4];
            simd_q6_half(x[b].ql + 64 * h, x[b].qh + 32 * h, u);
            const __m256i sc = simd_i8x8_i16x2(h ? _mm_srli_si128(s8, 8) : s8);
            for (int k = 0; k < 4; k++)
                isum = simd_dot_u8s8_scaled(isum, u[k], simd_ld(y[b].qs + 128 * h + 32 * k), simd_pick(sc, 2 * k, 2 * k + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(acc);
}

/* ---- IQ4_XS: value = (ls - 32) * table[q], 8 sub-blocks of 32 in the nibble order ------------------ */
static void SIMD_NAME(iq4_xs_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    const __m256i table = simd_iq4nl_table();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        /* ls of sub-block ib: 4 bits from nibble ib of scales_l, 2 from bits 2ib of scales_h; pdep spreads
         * both into byte ib at once */
        uint32_t sl;
        memcpy(&sl, x[b].scales_l, 4);
        const uint64_t ls = _pdep_u64(sl, 0x0f0f0f0f0f0f0f0full) | _pdep_u64(x[b].scales_h, 0x3030303030303030ull);
        const __m256i sc = simd_i8x8_i16x2(_mm_sub_epi8(_mm_cvtsi64_si128((long long)ls), _mm_set1_epi8(32)));
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            __m256i q = _mm256_shuffle_epi8(table, simd_nibbles_lo_hi(x[b].qs + 16 * ib));
            __m256i yq = simd_ld(y[b].qs + 32 * ib);
            /* sign trick: |q| <= 127 and |y| <= 127 keep pmaddubsw pairs below 32767 */
            isum = simd_dot_u8s8_scaled(isum, _mm256_sign_epi8(q, q), _mm256_sign_epi8(yq, q), simd_pick(sc, ib, ib));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(acc);
}

/* ---- dequantize Q4_K / Q6_K (bit-exact: per value the scalar code's two roundings) ----------------- */

/* 8 bytes at p -> 8 floats */
static inline __m256 simd_u8x8_ps(const uint8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
static inline __m256 simd_i8x8_ps(const int8_t *p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* y = (d * sc) * u - (dmin * m) */
static void SIMD_NAME(q4_k_to_float)(const void *vx, float *y, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint64_t sc8, mn8;
        simd_k4_unpack(x[b].scales, &sc8, &mn8);
        uint8_t sc[8], mn[8];
        memcpy(sc, &sc8, 8);
        memcpy(mn, &mn8, 8);
        const float d = _cvtsh_ss(x[b].d), dmin = _cvtsh_ss(x[b].dmin);
        for (int g = 0; g < 4; g++, y += 64) {
            uint8_t u[64];
            const __m256i q = simd_ld(x[b].qs + 32 * g);
            _mm256_storeu_si256((__m256i *)u, simd_lo4(q));
            _mm256_storeu_si256((__m256i *)(u + 32), simd_hi4(q));
            for (int half = 0; half < 2; half++) {
                const __m256 d1 = _mm256_set1_ps(d * sc[2 * g + half]), m1 = _mm256_set1_ps(dmin * mn[2 * g + half]);
                for (int l = 0; l < 32; l += 8) {
                    __m256 v = _mm256_sub_ps(_mm256_mul_ps(d1, simd_u8x8_ps(u + 32 * half + l)), m1);
                    _mm256_storeu_ps(y + 32 * half + l, v);
                }
            }
        }
    }
}

/* y = (d * sc) * (u - 32) */
static void SIMD_NAME(q6_k_to_float)(const void *vx, float *y, int64_t n) {
    const block_q6_K *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = _cvtsh_ss(x[b].d);
        for (int h = 0; h < 2; h++, y += 128) {
            __m256i u[4];
            simd_q6_half(x[b].ql + 64 * h, x[b].qh + 32 * h, u);
            int8_t v[128];
            for (int k = 0; k < 4; k++) _mm256_storeu_si256((__m256i *)(v + 32 * k), _mm256_sub_epi8(u[k], _mm256_set1_epi8(32)));
            for (int j = 0; j < 8; j++) { /* sub-block of 16 values */
                const __m256 f = _mm256_set1_ps(d * (float)x[b].scales[8 * h + j]);
                _mm256_storeu_ps(y + 16 * j, _mm256_mul_ps(f, simd_i8x8_ps(v + 16 * j)));
                _mm256_storeu_ps(y + 16 * j + 8, _mm256_mul_ps(f, simd_i8x8_ps(v + 16 * j + 8)));
            }
        }
    }
}

/* ---- quantize activations to Q8_K ------------------------------------------------------------------ */
static void SIMD_NAME(q8_k_from_float)(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        const float amax = simd_amax(x, QK_K);
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        /* the first value whose |x| is amax, sign kept (the reference scans with a strict >) */
        const __m256 sign = _mm256_set1_ps(-0.0f), vmax = _mm256_set1_ps(amax);
        int first = 0;
        for (int j = 0; j < QK_K; j += 8) {
            int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)), vmax, _CMP_EQ_OQ));
            if (m) {
                first = j + __builtin_ctz((unsigned)m);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i cap = _mm256_set1_epi32(127);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i v[4];
            for (int k = 0; k < 4; k++) /* cvtps2dq rounds half to even, as nearest_int does */
                v[k] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * k))), cap);
            simd_store_i8x32(y[b].qs + j, v[0], v[1], v[2], v[3]);
            /* bsums of the two groups of 16 */
            __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), simd_ld(y[b].qs + j));
            __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
            s32 = _mm256_hadd_epi32(s32, s32);
            s32 = _mm256_hadd_epi32(s32, s32);
            y[b].bsums[j / 16] = (int16_t)_mm256_cvtsi256_si32(s32);
            y[b].bsums[j / 16 + 1] = (int16_t)_mm256_extract_epi32(s32, 4);
        }
        y[b].d = 1 / iscale;
    }
}

#endif
