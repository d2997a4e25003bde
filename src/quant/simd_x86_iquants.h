/* simd_x86_iquants: AVX2-shaped dot products and u8 forms (quant.h, for prefill's int8 matrix products)
 * of the grid-coded low-bit types: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S against Q8_K,
 * Q1_0 against Q8_0. Internal to src/quant/: included once by simd_avx2.c and once by simd_avx512.c
 * (byte dot products become VNNI there); names get the ISA suffix through SIMD_NAME.
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
 * scalar code does.
 *
 * One unpack function per type gives a group of 32 values as vectors (grid magnitudes and +-1 signs, or
 * IQ1's signed values); the dot product and the u8 form both start from it. */
#ifndef LLM170_QUANT_SIMD_X86_IQUANTS_H
#define LLM170_QUANT_SIMD_X86_IQUANTS_H

#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/quant_impl.h"
#include "quant/simd_x86.h"
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

/* The scale of 16 values m of IQ2_XS / IQ2_S: nibble m % 2 of scales[m / 2]. */
static inline int simd_iq2_scale(const uint8_t *scales, int m) { return (scales[m / 2] >> (4 * (m & 1))) & 15; }

/* IQ2's db = d * (0.5 + s) * 0.25, formed as iq2.c forms it (the u8 forms' S) */
static inline float simd_iq2_db(float d, int s) { return d * (0.5f + (float)s) * 0.25f; }

/* u = off + grid * (+-1): the u8 form of the IQ2 / IQ3 types (off = the largest magnitude) */
static inline __m256i simd_grid_u8(__m256i g, __m256i pm1, int off) {
    return _mm256_add_epi8(_mm256_set1_epi8((char)off), _mm256_sign_epi8(g, pm1));
}

/* ---- unpack: values 32 ib .. 32 ib + 31 of a block ---------------------------------------------------- */

/* IQ1_S: the grid values g in {-1, 0, 1}; group l's index is qs[l] | bits 3l..3l+2 of qh as bits 8..10 */
static inline __m256i simd_iq1s_grid(const block_iq1_s *b, int ib) {
    const unsigned qh = b->qh[ib];
    const uint8_t *qs = b->qs + 4 * ib;
    return simd_grid8x4(quant_iq1s_grid[qs[0] | ((qh << 8) & 0x700)], quant_iq1s_grid[qs[1] | ((qh << 5) & 0x700)],
                        quant_iq1s_grid[qs[2] | ((qh << 2) & 0x700)], quant_iq1s_grid[qs[3] | ((qh >> 1) & 0x700)]);
}

/* IQ1_M: the super-block scale, rebuilt from the top nibbles of the four scale words (copied to sc) */
static inline float simd_iq1m_d(const block_iq1_m *b, uint16_t sc[4]) {
    memcpy(sc, b->scales, 4 * sizeof(uint16_t));
    return _cvtsh_ss((uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
}

/* IQ1_M's 3-bit scale of 16 values m */
static inline int simd_iq1m_scale(const uint16_t sc[4], int m) { return (sc[m / 4] >> (3 * (m % 4))) & 7; }

/* IQ1_M: v = 8 * (g + delta) = 8g +- 1 (|v| <= 9, never 0). Groups 4ib .. 4ib + 3 take their nibbles (3 high
 * index bits, the delta sign in bit 3) from qh[2ib] and qh[2ib + 1]. */
static inline __m256i simd_iq1m_values(const block_iq1_m *b, int ib) {
    const unsigned h = b->qh[2 * ib] | (unsigned)b->qh[2 * ib + 1] << 8;
    const uint8_t *qs = b->qs + 4 * ib;
    const __m256i g = simd_grid8x4(quant_iq1s_grid[qs[0] | ((h << 8) & 0x700)], quant_iq1s_grid[qs[1] | ((h << 4) & 0x700)],
                                   quant_iq1s_grid[qs[2] | (h & 0x700)], quant_iq1s_grid[qs[3] | ((h >> 4) & 0x700)]);
    /* delta bytes: -1 for the groups whose nibble has bit 3 set, else +1 */
    const __m256i dsign = _mm256_set_epi64x(h & 0x8000 ? -1 : 0, h & 0x0800 ? -1 : 0, h & 0x80 ? -1 : 0, h & 0x8 ? -1 : 0);
    return _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), g), _mm256_or_si256(dsign, _mm256_set1_epi8(1)));
}

/* IQ2_XXS: per 32 values 4 grid indices (aux[0]) and 4 x 7 sign bits with s in bits 28..31 (aux[1]) */
static inline __m256i simd_iq2xxs_grid(const block_iq2_xxs *b, int ib, __m256i *pm1) {
    uint32_t aux[2];
    memcpy(aux, b->qs + 4 * ib, sizeof aux);
    *pm1 = simd_ksigns4(aux[1]);
    return simd_grid8x4(quant_iq2xxs_grid[aux[0] & 255], quant_iq2xxs_grid[(aux[0] >> 8) & 255],
                        quant_iq2xxs_grid[(aux[0] >> 16) & 255], quant_iq2xxs_grid[aux[0] >> 24]);
}

/* IQ2_XS: per 8 values a uint16 (9-bit grid index, 7 sign bits) */
static inline __m256i simd_iq2xs_grid(const block_iq2_xs *b, int ib, __m256i *pm1) {
    const uint16_t *q = b->qs + 4 * ib;
    *pm1 = simd_pm1((uint32_t)quant_ksigns_iq2xs[q[0] >> 9] | (uint32_t)quant_ksigns_iq2xs[q[1] >> 9] << 8 |
                    (uint32_t)quant_ksigns_iq2xs[q[2] >> 9] << 16 | (uint32_t)quant_ksigns_iq2xs[q[3] >> 9] << 24);
    return simd_grid8x4(quant_iq2xs_grid[q[0] & 511], quant_iq2xs_grid[q[1] & 511], quant_iq2xs_grid[q[2] & 511],
                        quant_iq2xs_grid[q[3] & 511]);
}

/* IQ2_S: per 8 values a 10-bit index (qs, and bits 2l..2l+1 of qh[ib] as bits 8..9) and a sign byte at
 * qs[32 + 4ib + l] */
static inline __m256i simd_iq2s_grid(const block_iq2_s *b, int ib, __m256i *pm1) {
    const uint8_t *q = b->qs + 4 * ib;
    const unsigned qh = b->qh[ib];
    uint32_t bits;
    memcpy(&bits, b->qs + QK_K / 8 + 4 * ib, sizeof bits);
    *pm1 = simd_pm1(bits);
    return simd_grid8x4(quant_iq2s_grid[q[0] | ((qh << 8) & 0x300)], quant_iq2s_grid[q[1] | ((qh << 6) & 0x300)],
                        quant_iq2s_grid[q[2] | ((qh << 4) & 0x300)], quant_iq2s_grid[q[3] | ((qh << 2) & 0x300)]);
}

/* IQ3_XXS: 8 x 8-bit indices into 4-value rows, and IQ2_XXS's sign / scale word at qs[64 + 4ib] */
static inline __m256i simd_iq3xxs_grid(const block_iq3_xxs *b, int ib, __m256i *pm1) {
    const uint8_t *q = b->qs + 8 * ib;
    const unsigned idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
    uint32_t aux;
    memcpy(&aux, b->qs + QK_K / 4 + 4 * ib, sizeof aux);
    *pm1 = simd_ksigns4(aux);
    return simd_grid4x8(quant_iq3xxs_grid, idx);
}

/* IQ3_S: 8 x 9-bit indices (qs, and bit k of qh[ib] as bit 8), explicit sign bits */
static inline __m256i simd_iq3s_grid(const block_iq3_s *b, int ib, __m256i *pm1) {
    const uint8_t *q = b->qs + 8 * ib;
    const unsigned qh = b->qh[ib];
    unsigned idx[8];
    for (int k = 0; k < 8; k++) idx[k] = q[k] | ((qh << (8 - k)) & 0x100);
    uint32_t bits;
    memcpy(&bits, b->signs + 4 * ib, sizeof bits);
    *pm1 = simd_pm1(bits);
    return simd_grid4x8(quant_iq3s_grid, idx);
}

/* ---- scales: the 4-bit s of sub-block j (IQ2_XS / IQ2_S: 16 values, the others 32), the pmaddwd
 * multipliers 2s + 1 of values 32 ib .. 32 ib + 31, and the u8 forms' S as the scalar code forms it ---- */
static inline int simd_iq2xxs_s(const block_iq2_xxs *b, int j) { return b->qs[4 * j + 3] >> 12; }
static inline int simd_iq2xs_s(const block_iq2_xs *b, int j) { return simd_iq2_scale(b->scales, j); }
static inline int simd_iq2s_s(const block_iq2_s *b, int j) { return simd_iq2_scale(b->scales, j); }
static inline int simd_iq3xxs_s(const block_iq3_xxs *b, int j) { return b->qs[QK_K / 4 + 4 * j + 3] >> 4; }
static inline int simd_iq3s_s(const block_iq3_s *b, int j) { return (b->scales[j / 2] >> (4 * (j & 1))) & 15; }

/* one scale per 32 values (S_FN(b, ib)), or two per 32 (S_FN(b, 2ib), S_FN(b, 2ib + 1)) */
#define SIMD_LS32(S_FN, b, ib) _mm256_set1_epi16((short)(2 * S_FN(b, ib) + 1))
#define SIMD_LS16(S_FN, b, ib) simd_scale2(2 * S_FN(b, 2 * (ib)) + 1, 2 * S_FN(b, 2 * (ib) + 1) + 1)

static inline float simd_iq3xxs_db(float d, int s) { return d * (0.5f + (float)s) * 0.5f; }
static inline float simd_iq3s_db(float d, int s) { return d * (float)(1 + 2 * s); }

/* ---- dot products ------------------------------------------------------------------------------------- */

/* IQ1_S: x = d * ls * (g + delta), delta = +-1/8 per 32 values. Per 32 values sum ls * g * y as sign(y, g)
 * against bytes of 1; the delta part needs only the sums of y, which Q8_K's bsums hold (per 16 values):
 * sum ls * (+-1) * bsums in scalar integers, added to lane 0. (A vector of the 16 +-ls built through
 * memory for one pmaddwd with the bsums was 517 ns a 4096-value row against 401 this way, quant-bench on
 * the Zen 3 VM: 16 two-byte stores read back by one 256-bit load defeat store forwarding.) The lanes hold
 * 8 * sum(ls g y) + sum(ls (+-1) y), the scalar code's 8 * sumi + sumi1 (< 2^22). */
static void SIMD_NAME(iq1_s_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    const __m256i ones = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        __m256i isum = _mm256_setzero_si256();
        int32_t delta = 0; /* sum ls * (+-1) * (the 32 values' two bsums) */
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const unsigned qh = x[b].qh[ib];
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            const __m256i gy = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), simd_iq1s_grid(&x[b], ib));
            isum = simd_dot_u8s8_scaled(isum, ones, gy, _mm256_set1_epi16((short)ls));
            delta += (qh & 0x8000 ? -ls : ls) * (y[b].bsums[2 * ib] + y[b].bsums[2 * ib + 1]);
        }
        isum = _mm256_add_epi32(_mm256_slli_epi32(isum, 3), _mm256_castsi128_si256(_mm_cvtsi32_si128(delta)));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* IQ1_M: the delta sign changes every 8 values, finer than bsums, so the values are the integers
 * v = 8g +- 1 and v . y is taken with the sign trick: the lanes hold the scalar code's 8 * sumi + sumi1. */
static void SIMD_NAME(iq1_m_vec_dot_q8_k)(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; b++) {
        simd_prefetch(&x[b], (int)sizeof x[b]);
        uint16_t sc[4];
        const float d = simd_iq1m_d(&x[b], sc);
        __m256i isum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const __m256i v = simd_iq1m_values(&x[b], ib), yq = simd_ld(y[b].qs + 32 * ib);
            /* values 0..15 take scale 2ib, 16..31 scale 2ib + 1 */
            const __m256i ls = simd_scale2(2 * simd_iq1m_scale(sc, 2 * ib) + 1, 2 * simd_iq1m_scale(sc, 2 * ib + 1) + 1);
            isum = simd_dot_u8s8_scaled(isum, _mm256_sign_epi8(v, v), _mm256_sign_epi8(yq, v), ls);
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * y[b].d), acc);
    }
    *s = 0.125f * simd_hsum_ps(acc);
}

/* IQ2_* and IQ3_*: x = d * (2s + 1) * c * grid * sign, c = 1/8 (IQ2), 1/4 (IQ3_XXS), 1 (IQ3_S): per 32 values
 * (2s + 1) * grid . (y * sign); the row's sum times c. UNPACK(block, ib, &pm1) gives the grid magnitudes
 * and signs, LS(S_FN, block, ib) the multipliers. */
#define SIMD_GRID_DOT(NAME, BLOCK, UNPACK, LS, S_FN, C)                                                        \
    static void SIMD_NAME(NAME)(int64_t n, float *s, const void *vx, const void *vy) {                         \
        const BLOCK *x = vx;                                                                                   \
        const block_q8_K *y = vy;                                                                              \
        __m256 acc = _mm256_setzero_ps();                                                                      \
        for (int64_t b = 0; b < n / QK_K; b++) {                                                               \
            simd_prefetch(&x[b], (int)sizeof x[b]);                                                            \
            __m256i isum = _mm256_setzero_si256();                                                             \
            for (int ib = 0; ib < QK_K / 32; ib++) {                                                           \
                __m256i pm1;                                                                                   \
                const __m256i g = UNPACK(&x[b], ib, &pm1);                                                     \
                const __m256i ys = _mm256_sign_epi8(simd_ld(y[b].qs + 32 * ib), pm1);                          \
                isum = simd_dot_u8s8_scaled(isum, g, ys, LS(S_FN, &x[b], ib));                                 \
            }                                                                                                  \
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(_cvtsh_ss(x[b].d) * y[b].d), acc); \
        }                                                                                                      \
        *s = (C) * simd_hsum_ps(acc);                                                                          \
    }
SIMD_GRID_DOT(iq2_xxs_vec_dot_q8_k, block_iq2_xxs, simd_iq2xxs_grid, SIMD_LS32, simd_iq2xxs_s, 0.125f)
SIMD_GRID_DOT(iq2_xs_vec_dot_q8_k, block_iq2_xs, simd_iq2xs_grid, SIMD_LS16, simd_iq2xs_s, 0.125f)
SIMD_GRID_DOT(iq2_s_vec_dot_q8_k, block_iq2_s, simd_iq2s_grid, SIMD_LS16, simd_iq2s_s, 0.125f)
SIMD_GRID_DOT(iq3_xxs_vec_dot_q8_k, block_iq3_xxs, simd_iq3xxs_grid, SIMD_LS32, simd_iq3xxs_s, 0.25f)
SIMD_GRID_DOT(iq3_s_vec_dot_q8_k, block_iq3_s, simd_iq3s_grid, SIMD_LS32, simd_iq3s_s, 1.0f)

/* Q1_0 against Q8_0: x = bit ? d : -d, four Q8_0 blocks per Q1_0 block. Per Q8_0 block: y negated where
 * the bit is clear, summed against bytes of 1; acc += sum * (dx * dy). */
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

/* ---- u8 forms (quant.h; the scalar ones in iq1.c, iq2.c, iq3.c, q1_0.c say why each is exact) ----------
 * u = off + the signed value per byte, from the same unpacking as the dot products; S is formed by the
 * scalar code's float expression, so every ISA writes the same bytes and floats (test_gemm checks them
 * against to_float bit for bit). */

static void SIMD_NAME(iq1_s_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq1_s *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = _cvtsh_ss(x[b].d);
        for (int ib = 0; ib < QK_K / 32; ib++, u += 32) { /* u = 8g +- 1 + 9 */
            const unsigned qh = x[b].qh[ib];
            *S++ = d * (float)(2 * ((qh >> 12) & 7) + 1) * 0.125f;
            const __m256i g8 = _mm256_sign_epi8(_mm256_set1_epi8(8), simd_iq1s_grid(&x[b], ib));
            simd_st(u, _mm256_add_epi8(g8, _mm256_set1_epi8(qh & 0x8000 ? 9 - 1 : 9 + 1)));
        }
    }
}

static void SIMD_NAME(iq1_m_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq1_m *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++) {
        uint16_t sc[4];
        const float d = simd_iq1m_d(&x[b], sc);
        for (int m = 0; m < QK_K / 16; m++) *S++ = d * (float)(2 * simd_iq1m_scale(sc, m) + 1) * 0.125f;
        for (int ib = 0; ib < QK_K / 32; ib++, u += 32)
            simd_st(u, _mm256_add_epi8(simd_iq1m_values(&x[b], ib), _mm256_set1_epi8(9)));
    }
}

/* IQ2_* and IQ3_*: u = off + grid * sign, off the largest magnitude; S = DB(d, s) per sub-block of SB */
#define SIMD_GRID_U8(NAME, BLOCK, UNPACK, S_FN, SB, DB, OFF)                                                \
    static void SIMD_NAME(NAME)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {               \
        (void)M;                                                                                           \
        const BLOCK *x = vx;                                                                               \
        for (int64_t b = 0; b < n / QK_K; b++) {                                                           \
            const float d = _cvtsh_ss(x[b].d);                                                             \
            for (int j = 0; j < QK_K / (SB); j++) *S++ = DB(d, S_FN(&x[b], j));                            \
            for (int ib = 0; ib < QK_K / 32; ib++, u += 32) {                                              \
                __m256i pm1;                                                                               \
                const __m256i g = UNPACK(&x[b], ib, &pm1);                                                 \
                simd_st(u, simd_grid_u8(g, pm1, OFF));                                                     \
            }                                                                                              \
        }                                                                                                  \
    }
SIMD_GRID_U8(iq2_xxs_to_u8, block_iq2_xxs, simd_iq2xxs_grid, simd_iq2xxs_s, 32, simd_iq2_db, 43)
SIMD_GRID_U8(iq2_xs_to_u8, block_iq2_xs, simd_iq2xs_grid, simd_iq2xs_s, 16, simd_iq2_db, 43)
SIMD_GRID_U8(iq2_s_to_u8, block_iq2_s, simd_iq2s_grid, simd_iq2s_s, 16, simd_iq2_db, 43)
SIMD_GRID_U8(iq3_xxs_to_u8, block_iq3_xxs, simd_iq3xxs_grid, simd_iq3xxs_s, 32, simd_iq3xxs_db, 62)
SIMD_GRID_U8(iq3_s_to_u8, block_iq3_s, simd_iq3s_grid, simd_iq3s_s, 32, simd_iq3s_db, 15)

/* Q1_0: u = 2 * bit */
static void SIMD_NAME(q1_0_to_u8)(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q1_0 *x = vx;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        const float d = _cvtsh_ss(x[i].d);
        for (int k = 0; k < QK1_0 / 32; k++, u += 32) {
            uint32_t bits;
            memcpy(&bits, x[i].qs + 4 * k, sizeof bits);
            *S++ = d;
            simd_st(u, _mm256_and_si256(simd_bits_to_bytes(bits), _mm256_set1_epi8(2)));
        }
    }
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
    t[QT_IQ1_S][isa].u8.to_u8 = SIMD_NAME(iq1_s_to_u8);
    t[QT_IQ1_M][isa].u8.to_u8 = SIMD_NAME(iq1_m_to_u8);
    t[QT_IQ2_XXS][isa].u8.to_u8 = SIMD_NAME(iq2_xxs_to_u8);
    t[QT_IQ2_XS][isa].u8.to_u8 = SIMD_NAME(iq2_xs_to_u8);
    t[QT_IQ2_S][isa].u8.to_u8 = SIMD_NAME(iq2_s_to_u8);
    t[QT_IQ3_XXS][isa].u8.to_u8 = SIMD_NAME(iq3_xxs_to_u8);
    t[QT_IQ3_S][isa].u8.to_u8 = SIMD_NAME(iq3_s_to_u8);
    t[QT_Q1_0][isa].u8.to_u8 = SIMD_NAME(q1_0_to_u8);
}

#endif
