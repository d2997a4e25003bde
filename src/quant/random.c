/* random: quant_random_blocks, synthetic weights for benchmarks and synthetic models (cmd_synth fills
 * multi-GB files with it, so it is built for speed: one rng_u64 per 8 payload bytes).
 *
 * Method: the whole destination is filled with random bytes, which makes every quant payload (nibbles,
 * sign/high bits, packed 4/6-bit sub-block scales, int8 scales) uniformly random and valid; then each
 * block's fp16 scale fields are overwritten with finite values chosen so that the dequantized values have
 * an RMS of about `scale` (jittered by 0.75..1.25 per block, as real blocks differ). For each type the
 * RMS of a value with d = 1 under uniform random payload was worked out by hand (UNIT_* below, e.g.
 * Q4_0: q - 8 uniform on -8..7 has RMS sqrt(21.5) = 4.64). Types with a min get dmin (or m) set so the
 * expected value is about zero. Plain float types get uniform values on [-sqrt(3), sqrt(3)) * scale
 * (1024 equally spaced levels).
 * Nothing here can produce NaN or Inf: scales are capped so even dmin * 15.5 stays below 65504. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "quant/blocks.h"
#include "quant/quant.h"

/* RMS of a dequantized value with unit super-block scale and uniformly random payload. */
#define UNIT_Q4_0 4.64f    /* q - 8 on -8..7: E[v^2] = 21.5 */
#define UNIT_Q4_1 4.61f    /* q on 0..15 minus its mean 7.5: variance 21.25 */
#define UNIT_Q5_0 9.25f    /* q - 16 on -16..15: E[v^2] = 85.5 */
#define UNIT_Q5_1 9.23f    /* q on 0..31 minus 15.5: variance 85.25 */
#define UNIT_Q8_0 73.9f    /* int8 uniform: E[v^2] = 5461.5 */
#define UNIT_Q2_K 13.87f   /* sc*q - 1.5*m, sc, m on 0..15, q on 0..3: E[v^2] = 192.5 */
#define UNIT_Q3_K 43.3f    /* (sc - 32) * q, q on -4..3: 341.5 * 5.5 */
#define UNIT_Q4_K 258.3f   /* sc*q - 7.5*m, sc, m on 0..63, q on 0..15: E[v^2] = 66727 */
#define UNIT_Q5_K 526.9f   /* sc*q - 15.5*m, q on 0..31: E[v^2] = 277651 */
#define UNIT_Q6_K 1365.7f  /* int8 sc * (q - 32): 5461.5 * 341.5 */
#define UNIT_IQ4_NL 67.44f /* RMS of the 16 table levels */
#define UNIT_IQ4_XS 1246.3f /* table RMS * RMS of (sc - 32) on -32..31 */
/* IQ2_XXS: d (0.5 + s) / 4 * grid * sign, s on 0..15 (E[(s + 0.5)^2] = 85.25), E[grid^2] = 534.43 over the
 * 256 x 8 magnitudes of quant_iq2xxs_grid (summed once from the table); every byte pattern is a valid
 * index / sign / scale, so random payload is a well-formed block. */
#define UNIT_IQ2_XXS 53.36f
/* IQ1_S: d (2s + 1) (g + delta), s on 0..7 (E[(2s + 1)^2] = 85), g of quant_iq1s_grid (E[g^2] = 0.594,
 * mean ~0) and delta +-1/8 by a random sign bit (adds 1/64): every 11-bit index is a grid row. */
#define UNIT_IQ1_S 7.20f
/* IQ1_M: IQ1_S's values with the 3-bit scale per 16 and the delta sign per 8 values: the same RMS. Its fp16
 * d has no field of its own (spread over the top nibbles of the four uint16 scales: d_spread below). */
#define UNIT_IQ1_M 7.20f
/* IQ2_XS, IQ2_S: IQ2_XXS's (0.5 + s) / 4 with E[grid^2] = 586.48 (512-row grid) and 596.84 (1024 rows);
 * IQ3_XXS: d (0.5 + s) / 2 * grid, E[grid^2] = 951.64; IQ3_S: d (2s + 1) * grid, E[(2s + 1)^2] = 341,
 * E[grid^2] = 57.67 (all summed once from the tables). Every byte pattern is a valid index / sign / scale. */
#define UNIT_IQ2_XS 55.90f
#define UNIT_IQ2_S 56.39f
#define UNIT_IQ3_XXS 142.41f
#define UNIT_IQ3_S 140.24f
#define UNIT_Q1_0 1.0f /* +-d by one bit: |x| = d always */

/* d values above this would let dmin = 15.5 * d overflow fp16. */
#define D_CAP 4000.0f

typedef struct layout {
    enum qtype t;
    float unit;     /* UNIT_* */
    size_t d_off;   /* byte offset of the fp16 d */
    long m_off;     /* byte offset of the fp16 dmin / m, or -1 */
    float m_ratio;  /* dmin = m_ratio * d (positive: subtracted), or m = -m_ratio * d for Q4_1/Q5_1 */
    bool m_negated; /* m stored as a signed offset (Q4_1, Q5_1) rather than a subtracted dmin */
    bool d_spread;  /* IQ1_M: d's 4 nibbles are the top nibbles of the 4 uint16 at d_off (low nibble first) */
} layout;

static const layout layouts[] = {
    {QT_Q4_0, UNIT_Q4_0, offsetof(block_q4_0, d), -1, 0, false, false},
    {QT_Q4_1, UNIT_Q4_1, offsetof(block_q4_1, d), offsetof(block_q4_1, m), 7.5f, true, false},
    {QT_Q5_0, UNIT_Q5_0, offsetof(block_q5_0, d), -1, 0, false, false},
    {QT_Q5_1, UNIT_Q5_1, offsetof(block_q5_1, d), offsetof(block_q5_1, m), 15.5f, true, false},
    {QT_Q8_0, UNIT_Q8_0, offsetof(block_q8_0, d), -1, 0, false, false},
    {QT_Q2_K, UNIT_Q2_K, offsetof(block_q2_K, d), offsetof(block_q2_K, dmin), 1.5f, false, false},
    {QT_Q3_K, UNIT_Q3_K, offsetof(block_q3_K, d), -1, 0, false, false},
    {QT_Q4_K, UNIT_Q4_K, offsetof(block_q4_K, d), offsetof(block_q4_K, dmin), 7.5f, false, false},
    {QT_Q5_K, UNIT_Q5_K, offsetof(block_q5_K, d), offsetof(block_q5_K, dmin), 15.5f, false, false},
    {QT_Q6_K, UNIT_Q6_K, offsetof(block_q6_K, d), -1, 0, false, false},
    {QT_IQ4_NL, UNIT_IQ4_NL, offsetof(block_iq4_nl, d), -1, 0, false, false},
    {QT_IQ4_XS, UNIT_IQ4_XS, offsetof(block_iq4_xs, d), -1, 0, false, false},
    {QT_IQ2_XXS, UNIT_IQ2_XXS, offsetof(block_iq2_xxs, d), -1, 0, false, false},
    {QT_IQ1_S, UNIT_IQ1_S, offsetof(block_iq1_s, d), -1, 0, false, false},
    {QT_IQ1_M, UNIT_IQ1_M, offsetof(block_iq1_m, scales), -1, 0, false, true},
    {QT_IQ2_XS, UNIT_IQ2_XS, offsetof(block_iq2_xs, d), -1, 0, false, false},
    {QT_IQ2_S, UNIT_IQ2_S, offsetof(block_iq2_s, d), -1, 0, false, false},
    {QT_IQ3_XXS, UNIT_IQ3_XXS, offsetof(block_iq3_xxs, d), -1, 0, false, false},
    {QT_IQ3_S, UNIT_IQ3_S, offsetof(block_iq3_s, d), -1, 0, false, false},
    {QT_Q1_0, UNIT_Q1_0, offsetof(block_q1_0, d), -1, 0, false, false},
};

static void fill_bytes(uint8_t *p, size_t nbytes, rng *r) {
    size_t i = 0;
    for (; i + 8 <= nbytes; i += 8) {
        const uint64_t v = rng_u64(r);
        memcpy(p + i, &v, 8);
    }
    if (i < nbytes) {
        const uint64_t v = rng_u64(r);
        memcpy(p + i, &v, nbytes - i);
    }
}

static void put_half(uint8_t *p, uint16_t h) { memcpy(p, &h, 2); }

/* IQ1_M's d: nibble k of h into bits 12..15 of the k-th uint16 at p, the scale bits below kept. */
static void put_half_spread(uint8_t *p, uint16_t h) {
    uint16_t sc[4];
    memcpy(sc, p, sizeof sc);
    for (int k = 0; k < 4; k++) sc[k] = (uint16_t)((sc[k] & 0x0fff) | ((h >> (4 * k)) & 15) << 12);
    memcpy(p, sc, sizeof sc);
}

/* Plain floats: uniform on [-sqrt(3), sqrt(3)) * scale (RMS = scale), drawn from a table of NLEVEL equally
 * spaced levels (already converted to the destination type) indexed by 10 random bits, so a value costs a
 * table load rather than a float -> half conversion: 6 values per rng_u64. */
#define LEVEL_BITS 10
#define NLEVEL (1 << LEVEL_BITS)

static float level_value(int k, float scale) {
    return (((float)k + 0.5f) * (2.0f / NLEVEL) - 1.0f) * 1.7320508f * scale;
}

static bool random_floats(enum qtype t, void *dst, int64_t n, float scale, rng *r) {
    float lv32[NLEVEL]; /* 6 KiB of stack in all */
    uint16_t lv16[NLEVEL];
    for (int k = 0; k < NLEVEL; k++) {
        const float f = level_value(k, scale);
        if (t == QT_F32) lv32[k] = f;
        else lv16[k] = t == QT_F16 ? fp16_from_f32(f) : bf16_from_f32(f);
    }
    const int per = 64 / LEVEL_BITS;
    for (int64_t i = 0; i < n; i += per) {
        uint64_t v = rng_u64(r);
        const int cnt = n - i >= per ? per : (int)(n - i);
        for (int k = 0; k < cnt; k++, v >>= LEVEL_BITS) {
            const int idx = (int)(v & (NLEVEL - 1));
            if (t == QT_F32) ((float *)dst)[i + k] = lv32[idx];
            else ((uint16_t *)dst)[i + k] = lv16[idx];
        }
    }
    return true;
}

bool quant_random_blocks(enum qtype t, void *dst, int64_t nblocks, float scale, struct rng *r) {
    if (nblocks < 0 || !isfinite(scale)) return false;
    scale = fabsf(scale);
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) {
        /* a float's range caps what a "scale" can mean; beyond fp16's the values would be Inf */
        if (t == QT_F16 && scale > 30000.0f) scale = 30000.0f;
        if (scale > 1e30f) scale = 1e30f;
        return random_floats(t, dst, nblocks, scale, r);
    }
    const layout *L = NULL;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (layouts[i].t == t) L = &layouts[i];
    if (!L) return false;
    const size_t bsize = qtype_get((uint32_t)t)->type_size;

    /* 16 jittered scale pairs, picked per block by 4 random bits: one fp16 conversion per call, not per
     * block. */
    uint16_t dh[16], mh[16];
    for (int k = 0; k < 16; k++) {
        float d = scale / L->unit * (0.75f + (float)k / 30.0f);
        if (d > D_CAP) d = D_CAP;
        dh[k] = fp16_from_f32(d);
        mh[k] = fp16_from_f32(L->m_negated ? -L->m_ratio * d : L->m_ratio * d);
    }

    uint8_t *p = dst;
    fill_bytes(p, (size_t)nblocks * bsize, r);
    uint64_t bits = 0;
    for (int64_t i = 0; i < nblocks; i++, p += bsize) {
        if ((i & 15) == 0) bits = rng_u64(r);
        const int k = (int)((bits >> (4 * (i & 15))) & 15);
        if (L->d_spread) put_half_spread(p + L->d_off, dh[k]);
        else put_half(p + L->d_off, dh[k]);
        if (L->m_off >= 0) put_half(p + L->m_off, mh[k]);
    }
    return true;
}
