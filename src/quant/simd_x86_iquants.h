/* simd_x86_iquants: AVX2-shaped dot products of the grid-coded low-bit types (IQ1_S, IQ1_M, IQ2_XXS,
 * IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S against Q8_K; Q1_0 against Q8_0). Internal to src/quant/: included once
 * by simd_avx2.c and once by simd_avx512.c (byte dot products become VNNI there); names get the ISA
 * suffix through SIMD_NAME.
 *
 * Shape: one super-block is handled 32 values (one __m256i of bytes) at a time, in the order the Q8_K
 * block stores them. The work is the grid lookups: each group of 8 (IQ3: 4) values is one scalar table
 * load of its grid row, four (eight) of them assembled into a vector. Signs are applied to the
 * activations, not the weights (sign trick: g * s * y == g * (y * s) for s = +-1), so the grid magnitudes
 * stay unsigned for pmaddubsw; the sub-block scale (2s + 1, odd, <= 31) multiplies the int16 pair sums
 * in pmaddwd. pmaddubsw range: magnitude <= 62 and |y| <= 127 keep pairs within 62 * 127 * 2 < 32767.
 *
 * Exactness: each super-block's int32 lanes sum to the scalar code's integer (the same products in
 * another order), converted to float exactly (|lane| < 2^24) and scaled by the same d * dy; only the
 * order of the float additions differs from the scalar references in iq1.c / iq2.c / iq3.c / q1_0.c
 * (tests/quant/test_quant_simd.c bounds the difference). The constant factor of each type (1/8 for the
 * IQ1 delta and the IQ2 (2s + 1) / 8 scale, 1/4 for IQ3_XXS) is applied once to the row's sum, as the
 * scalar code does. */
#ifndef LLM170_QUANT_SIMD_X86_IQUANTS_H
#define LLM170_QUANT_SIMD_X86_IQUANTS_H

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/simd_x86.h"
#include "quant/quant_impl.h"
#include "quant/simd_x86_kquants.h" /* simd_ld */

/* Four 8-byte grid rows as one vector, row 0 in the lowest bytes. */
static inline __m256i simd_grid8x4(const void *r0, const void *r1, const void *r2, const void *r3) {
    uint64_t a, b, c, d;
    memcpy(&a, r0, 8), memcpy(&b, r1, 8), memcpy(&c, r2, 8), memcpy(&d, r3, 8);
    return _mm256_set_epi64x((long long)d, (long long)c, (long long)b, (long long)a);
}

/* Eight 4-byte grid rows (IQ3) of the indices idx[0..8) as one vector. */
static inline __m256i simd_grid4x8(const uint8_t (*grid)[4], const unsigned idx[8]) {
    uint32_t v[8];
    for (int k = 0; k < 8; k++) memcpy(&v[k], grid[idx[k]], 4);
    return _mm256_loadu_si256((const __m256i *)v);
}

/* 32 sign bits (bit j set: value j negated) -> bytes -1 / +1, for _mm256_sign_epi8. */
static inline __m256i simd_pm1(uint32_t bits) { return _mm256_or_si256(simd_bits_to_bytes(bits), _mm256_set1_epi8(1)); }

/* The 4 x 7 sign bits of an IQ2_XXS / IQ3_XXS word (bits 0..27) -> 32 bytes -1 / +1: each 7-bit field
 * becomes 8 sign bits through the even-parity table. */
static inline __m256i simd_ksigns4(uint32_t w) {
    const uint32_t bits = (uint32_t)quant_ksigns_iq2xs[w & 127] | (uint32_t)quant_ksigns_iq2xs[(w >> 7) & 127] << 8 |
                          (uint32_t)quant_ksigns_iq2xs[(w >> 14) & 127] << 16 |
                          (uint32_t)quant_ksigns_iq2xs[(w >> 21) & 127] << 24;
    return simd_pm1(bits);
}

/* int16 multipliers: lo in the low 128 bits (values 0..15 of a group of 32), hi in the high 128 bits. */
static inline __m256i simd_scale2(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

/* ---- IQ1_S: x = d * ls * (g + delta), g in {-1, 0, 1}, delta = +-1/8 per 32 values -----------------
 * Per 32 values: sum ls * g * y as sign(y, g) summed against bytes of 1; the delta part needs only the
 * sums of y, which Q8_K's bsums hold (per 16 values): sum ls * (+-1) * bsums in one pmaddwd per block.
 * The lanes hold 8 * sum(ls g y) + sum(ls (+-1) y), the scalar code's 8 * sumi + sumi1 (< 2^22). */
static void SIMD_NAME(iq1_s_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        int16_t dls[QK_K / 16]; /* +-ls of the delta, one per bsum */
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const unsigned qh = x[b].qh[ib];
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            const uint8_t *qs = x[b].qs + 4 * ib;
            /* group l's index: qs[l] | bits 3l..3l+2 of qh as bits 8..10 */
            const __m256i g = simd_grid8x4(quant_iq1s_grid[qs[0] | ((qh << 8) & 0x700)],
                                           quant_iq1s_grid[qs[1] | ((qh << 5) & 0x700)],
                                           quant_iq1s_grid[qs[2] | ((qh << 2) & 0x700)],
                                           quant_iq1s_grid[qs[3] | ((qh >> 1) & 0x700)]);
            const __m256i gy = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), g);
            isum = simd_dot_u8s8_scaled(isum, ones, gy, _mm256_set1_epi16((short)ls));
            dls[2 * ib] = dls[2 * ib + 1] = (int16_t)(qh & 0x8000 ? -ls : ls);
        }
        const __m256i delta = _mm256_madd_epi16(simd_ld(dls), simd_ld(y[b].bsums));
        isum = _mm256_add_epi32(_mm256_slli_epi32(isum, 3), delta);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* ---- IQ1_M: as IQ1_S with the delta sign per 8 values and ls per 16 -------------------------------
 * The delta changes every 8 values, finer than bsums, so each value is formed as the integer
 * v = 8 * (g + delta) = 8g +- 1 (|v| <= 9) and v . y taken with the sign trick: the lanes hold the scalar
 * code's 8 * sumi + sumi1. */
static void SIMD_NAME(iq1_m_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint16_t sc[4];
        memcpy(sc, x[b].scales, sizeof sc);
        const uint16_t dh = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            /* groups 4ib .. 4ib + 3: nibble (3 high index bits, delta sign in bit 3) of qh[2ib], qh[2ib + 1] */
            const unsigned h = x[b].qh[2 * ib] | (unsigned)x[b].qh[2 * ib + 1] << 8;
            const uint8_t *qs = x[b].qs + 4 * ib;
            const __m256i g = simd_grid8x4(quant_iq1s_grid[qs[0] | ((h << 8) & 0x700)],
                                           quant_iq1s_grid[qs[1] | ((h << 4) & 0x700)],
                                           quant_iq1s_grid[qs[2] | (h & 0x700)],
                                           quant_iq1s_grid[qs[3] | ((h >> 4) & 0x700)]);
            /* delta bytes: -1 for the groups whose nibble has bit 3 set, else +1 */
            const __m256i dsign = _mm256_set_epi64x(h & 0x8000 ? -1 : 0, h & 0x0800 ? -1 : 0, h & 0x80 ? -1 : 0, h & 0x8 ? -1 : 0);
            const __m256i v = _mm256_add_epi8(_mm256_sign_epi8(eight, g), _mm256_or_si256(dsign, _mm256_set1_epi8(1)));
            const int m = 2 * ib; /* scales of values 0..15 and 16..31: 3 bits each, m and m + 1 */
            const int ls0 = 2 * ((sc[m / 4] >> (3 * (m % 4))) & 7) + 1, ls1 = 2 * ((sc[(m + 1) / 4] >> (3 * ((m + 1) % 4))) & 7) + 1;
            const __m256i yq = simd_ld(y[b].qs + 32 * ib);
            isum = simd_dot_u8s8_scaled(isum, _mm256_sign_epi8(v, v), _mm256_sign_epi8(yq, v), simd_scale2(ls0, ls1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(dh) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* ---- IQ2_XXS: per 32 values 4 x 8-bit grid indices, 4 x 7 sign bits, 4-bit s; x ~ (2s + 1) g / 8 ---- */
static void SIMD_NAME(iq2_xxs_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux[2]; /* aux[0]: 4 grid indices; aux[1]: 4 x 7 sign bits, s in bits 28..31 */
            memcpy(aux, x[b].qs + 4 * ib, sizeof aux);
            const __m256i g = simd_grid8x4(quant_iq2xxs_grid[aux[0] & 255], quant_iq2xxs_grid[(aux[0] >> 8) & 255],
                                           quant_iq2xxs_grid[(aux[0] >> 16) & 255], quant_iq2xxs_grid[aux[0] >> 24]);
            const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_ksigns4(aux[1]));
            isum = simd_dot_u8s8_scaled(isum, g, ys, _mm256_set1_epi16((short)(2 * (aux[1] >> 28) + 1)));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* ---- IQ2_XS: per 8 values a uint16 (9-bit index, 7 sign bits); s per 16 values in scales[] ---------- */
static void SIMD_NAME(iq2_xs_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xs *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint16_t *q = x[b].qs + 4 * ib;
            const __m256i g = simd_grid8x4(quant_iq2xs_grid[q[0] & 511], quant_iq2xs_grid[q[1] & 511],
                                           quant_iq2xs_grid[q[2] & 511], quant_iq2xs_grid[q[3] & 511]);
            const uint32_t bits = (uint32_t)quant_ksigns_iq2xs[q[0] >> 9] | (uint32_t)quant_ksigns_iq2xs[q[1] >> 9] << 8 |
                                  (uint32_t)quant_ksigns_iq2xs[q[2] >> 9] << 16 | (uint32_t)quant_ksigns_iq2xs[q[3] >> 9] << 24;
            const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_pm1(bits));
            const unsigned sc = x[b].scales[ib];
            isum = simd_dot_u8s8_scaled(isum, g, ys, simd_scale2(2 * (int)(sc & 15) + 1, 2 * (int)(sc >> 4) + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* ---- IQ2_S: per 8 values a 10-bit index (qs + 2 bits of qh) and an explicit sign byte --------------- */
static void SIMD_NAME(iq2_s_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_s *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t *q = x[b].qs + 4 * ib;
            const unsigned qh = x[b].qh[ib]; /* bits 2l..2l+1: index bits 8..9 of group l */
            const __m256i g = simd_grid8x4(quant_iq2s_grid[q[0] | ((qh << 8) & 0x300)], quant_iq2s_grid[q[1] | ((qh << 6) & 0x300)],
                                           quant_iq2s_grid[q[2] | ((qh << 4) & 0x300)], quant_iq2s_grid[q[3] | ((qh << 2) & 0x300)]);
            uint32_t bits; /* the sign bytes of the four groups, at qs[32 + 4ib] */
            memcpy(&bits, x[b].qs + QK_K / 8 + 4 * ib, sizeof bits);
            const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_pm1(bits));
            const unsigned sc = x[b].scales[ib];
            isum = simd_dot_u8s8_scaled(isum, g, ys, simd_scale2(2 * (int)(sc & 15) + 1, 2 * (int)(sc >> 4) + 1));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* ---- IQ3_XXS: per 32 values 8 x 8-bit indices into 4-value rows, and IQ2_XXS's sign/scale word ------ */
static void SIMD_NAME(iq3_xxs_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t *q = x[b].qs + 8 * ib;
            const unsigned idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
            uint32_t aux; /* 4 x 7 sign bits, s in bits 28..31 */
            memcpy(&aux, x[b].qs + QK_K / 4 + 4 * ib, sizeof aux);
            const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_ksigns4(aux));
            isum = simd_dot_u8s8_scaled(isum, simd_grid4x8(quant_iq3xxs_grid, idx), ys, _mm256_set1_epi16((short)(2 * (aux >> 28) + 1)));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.25f * simd_hsum_ps(acc);
}

/* ---- IQ3_S: per 4 values a 9-bit index (qs + bit of qh), explicit sign bits, s per 32 values -------- */
static void SIMD_NAME(iq3_s_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_s *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t *q = x[b].qs + 8 * ib;
            const unsigned qh = x[b].qh[ib]; /* bit k: index bit 8 of group k */
            unsigned idx[8];
            for (int k = 0; k < 8; k++) idx[k] = q[k] | ((qh << (8 - k)) & 0x100);
            uint32_t bits;
            memcpy(&bits, x[b].signs + 4 * ib, sizeof bits);
            const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_pm1(bits));
            const int ls = 2 * ((x[b].scales[ib / 2] >> (4 * (ib & 1))) & 15) + 1;
            isum = simd_dot_u8s8_scaled(isum, simd_grid4x8(quant_iq3s_grid, idx), ys, _mm256_set1_epi16((short)ls));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = simd_hsum_ps(acc);
}

/* ---- Q1_0 against Q8_0: x = bit ? d : -d, four Q8_0 blocks per Q1_0 block ---------------------------
 * Per Q8_0 block: y negated where the bit is clear, summed against bytes of 1; acc += sum * (dx * dy). */
static void SIMD_NAME(q1_0_vec_dot_q8_0)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK1_0; i++) {
        simd_prefetch(&x[i], (int)sizeof x[i]);
        const float dx = _cvtsh_ss(x[i].d);
        for (int k = 0; k < QK1_0 / QK8_0; k++) {
            const block_q8_0 *yb = &y[i * (QK1_0 / QK8_0) + k];
            uint32_t bits;
            memcpy(&bits, x[i].qs + k * QK8_0 / 8, sizeof bits);
            const __m256i ys = _mm256_sign_epi8(simd_ld(yb->qs), simd_pm1(~bits));
            const __m256i isum = simd_dot_u8s8(_mm256_setzero_si256(), ones, ys);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dx * _cvtsh_ss(yb->d)), acc);
        }
    }
    *s = simd_hsum_ps(acc);
}

static void SIMD_NAME(simd_x86_register_iquants)(quant_table t, enum quant_isa isa) {
    t[QT_IQ1_S][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq1_s_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ1_M][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq1_m_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_XXS][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq2_xxs_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_XS][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq2_xs_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_S][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq2_s_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ3_XXS][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq3_xxs_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_IQ3_S][isa] = (quant_ops){.vec_dot = SIMD_NAME(iq3_s_vec_dot_q8_k), .vec_dot_type = QT_Q8_K};
    t[QT_Q1_0][isa] = (quant_ops){.vec_dot = SIMD_NAME(q1_0_vec_dot_q8_0), .vec_dot_type = QT_Q8_0};
}

#endif
