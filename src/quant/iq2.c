/* iq2: IQ2_XXS, IQ2_XS, IQ2_S (2.06, 2.31, 2.5 bits per weight), scalar reference.
 *
 * All three code groups of 8 values as an index into a grid of 8 magnitudes in {8, 25, 43} plus 8 sign
 * bits, with a 4-bit scale s per 16 or 32 values: x = d * (0.5 + s) * 0.25 * grid[j] * sign[j].
 *   IQ2_XXS: per 32 values two uint32: a = 4 grid indices (8 bits each), b = 4 x 7 sign bits (the 8th is
 *            the parity, from quant_ksigns_iq2xs) and s in the top 4 bits.
 *   IQ2_XS:  per 8 values one uint16: 9-bit grid index, 7 sign bits; s per 16 values in scales[].
 *   IQ2_S:   per 8 values a 10-bit index (8 bits in qs[0..32), 2 in qh), one explicit sign byte in
 *            qs[32..64); s per 16 values in scales[].
 * to_float mirrors gguf-py's float32 order: db = d * (0.5f + s) * 0.25f, then (db * grid) * (+-1).
 * vec_dot works in integers: d * (0.5 + s) * 0.25 = d * (2s + 1) / 8, so each block sums
 * (2s + 1) * grid * sign * q8 and the row is scaled by 0.125 once at the end.
 * u8 form (quant.h): u = 43 +- grid (grid <= 43: umax 86, off 43), S = db per scale (IQ2_XXS: 32 values,
 * IQ2_XS / IQ2_S: 16); S * (u - 43) = db * (+-grid), to_float's product with its sign. */
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/iquants.h"

/* gguf-py multiplies by a float +-1, and the multiply returns a NaN operand unchanged; a compiler turns
 * v * -1.0f into a sign flip, so NaN is passed through explicitly to keep the bits alike. */
static inline float signed_by(float v, unsigned bit) { return bit && !isnan(v) ? -v : v; }

static inline float iq2_db(float d, unsigned s) { return d * (0.5f + (float)s) * 0.25f; }

#define IQ2_U8_OFF 43 /* the largest grid magnitude */

/* u of a grid magnitude g and its sign bit */
static inline uint8_t iq2_u(uint8_t g, unsigned bit) { return (uint8_t)(bit ? IQ2_U8_OFF - g : IQ2_U8_OFF + g); }

/* ---- IQ2_XXS ---- */

void iq2_xxs_to_float(const void *vx, float *y, int64_t n) {
    const block_iq2_xxs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux[2]; /* aux[0]: 4 grid indices; aux[1]: 4 x 7 sign bits, scale in bits 28..31 */
            memcpy(aux, x[i].qs + 4 * ib, sizeof aux);
            const float db = iq2_db(d, aux[1] >> 28);
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = quant_iq2xxs_grid[(aux[0] >> (8 * l)) & 0xff];
                const uint8_t signs = quant_ksigns_iq2xs[(aux[1] >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) *y++ = signed_by(db * (float)g[j], (signs >> j) & 1);
            }
        }
    }
}

void iq2_xxs_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xxs *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux[2];
            memcpy(aux, x[i].qs + 4 * ib, sizeof aux);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = quant_iq2xxs_grid[(aux[0] >> (8 * l)) & 0xff];
                const uint8_t signs = quant_ksigns_iq2xs[(aux[1] >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) sumi += (signs >> j & 1 ? -1 : 1) * g[j] * q8[j];
                q8 += 8;
            }
            bsum += sumi * (int32_t)(2 * (aux[1] >> 28) + 1);
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
    }
    *s = 0.125f * sumf;
}

void iq2_xxs_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq2_xxs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux[2];
            memcpy(aux, x[i].qs + 4 * ib, sizeof aux);
            *S++ = iq2_db(d, aux[1] >> 28);
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = quant_iq2xxs_grid[(aux[0] >> (8 * l)) & 0xff];
                const uint8_t signs = quant_ksigns_iq2xs[(aux[1] >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) *u++ = iq2_u(g[j], (signs >> j) & 1);
            }
        }
    }
}

/* ---- IQ2_XS ---- */

void iq2_xs_to_float(const void *vx, float *y, int64_t n) {
    const block_iq2_xs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int k = 0; k < QK_K / 8; k++) { /* k: group of 8 values; its scale covers groups k & ~1, k | 1 */
            const float db = iq2_db(d, (x[i].scales[k / 4] >> (4 * ((k / 2) & 1))) & 15);
            const uint8_t *g = quant_iq2xs_grid[x[i].qs[k] & 511];
            const uint8_t signs = quant_ksigns_iq2xs[x[i].qs[k] >> 9];
            for (int j = 0; j < 8; j++) *y++ = signed_by(db * (float)g[j], (signs >> j) & 1);
        }
    }
}

void iq2_xs_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_xs *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int k = 0; k < QK_K / 8; k++) {
            const int32_t ls = 2 * ((x[i].scales[k / 4] >> (4 * ((k / 2) & 1))) & 15) + 1;
            const uint8_t *g = quant_iq2xs_grid[x[i].qs[k] & 511];
            const uint8_t signs = quant_ksigns_iq2xs[x[i].qs[k] >> 9];
            int32_t sumi = 0;
            for (int j = 0; j < 8; j++) sumi += (signs >> j & 1 ? -1 : 1) * g[j] * q8[j];
            q8 += 8;
            bsum += sumi * ls;
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
    }
    *s = 0.125f * sumf;
}

void iq2_xs_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq2_xs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int m = 0; m < QK_K / 16; m++) *S++ = iq2_db(d, (x[i].scales[m / 2] >> (4 * (m & 1))) & 15);
        for (int k = 0; k < QK_K / 8; k++) {
            const uint8_t *g = quant_iq2xs_grid[x[i].qs[k] & 511];
            const uint8_t signs = quant_ksigns_iq2xs[x[i].qs[k] >> 9];
            for (int j = 0; j < 8; j++) *u++ = iq2_u(g[j], (signs >> j) & 1);
        }
    }
}

/* ---- IQ2_S ---- */

/* Grid index of group k: 8 bits from qs[k], bits 8..9 from the 2-bit field k % 4 of qh[k / 4]. */
static inline unsigned iq2s_index(const block_iq2_s *b, int k) {
    return b->qs[k] | (((unsigned)b->qh[k / 4] >> (2 * (k % 4)) & 3) << 8);
}

void iq2_s_to_float(const void *vx, float *y, int64_t n) {
    const block_iq2_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *signs = x[i].qs + QK_K / 8;
        for (int k = 0; k < QK_K / 8; k++) {
            const float db = iq2_db(d, (x[i].scales[k / 4] >> (4 * ((k / 2) & 1))) & 15);
            const uint8_t *g = quant_iq2s_grid[iq2s_index(&x[i], k)];
            for (int j = 0; j < 8; j++) *y++ = signed_by(db * (float)g[j], (signs[k] >> j) & 1);
        }
    }
}

void iq2_s_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq2_s *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *q8 = y[i].qs;
        const uint8_t *signs = x[i].qs + QK_K / 8;
        int32_t bsum = 0;
        for (int k = 0; k < QK_K / 8; k++) {
            const int32_t ls = 2 * ((x[i].scales[k / 4] >> (4 * ((k / 2) & 1))) & 15) + 1;
            const uint8_t *g = quant_iq2s_grid[iq2s_index(&x[i], k)];
            int32_t sumi = 0;
            for (int j = 0; j < 8; j++) sumi += (signs[k] >> j & 1 ? -1 : 1) * g[j] * q8[j];
            q8 += 8;
            bsum += sumi * ls;
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
    }
    *s = 0.125f * sumf;
}

void iq2_s_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq2_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *signs = x[i].qs + QK_K / 8;
        for (int m = 0; m < QK_K / 16; m++) *S++ = iq2_db(d, (x[i].scales[m / 2] >> (4 * (m & 1))) & 15);
        for (int k = 0; k < QK_K / 8; k++) {
            const uint8_t *g = quant_iq2s_grid[iq2s_index(&x[i], k)];
            for (int j = 0; j < 8; j++) *u++ = iq2_u(g[j], (signs[k] >> j) & 1);
        }
    }
}

void quant_register_iq2(quant_table t) {
    t[QT_IQ2_XXS][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq2_xxs_to_float, .from_float = NULL, .vec_dot = iq2_xxs_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_XS][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq2_xs_to_float, .from_float = NULL, .vec_dot = iq2_xs_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_S][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq2_s_to_float, .from_float = NULL, .vec_dot = iq2_s_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ2_XXS][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq2_xxs_to_u8, .sb = 32, .off = IQ2_U8_OFF, .umax = 2 * IQ2_U8_OFF};
    t[QT_IQ2_XS][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq2_xs_to_u8, .sb = 16, .off = IQ2_U8_OFF, .umax = 2 * IQ2_U8_OFF};
    t[QT_IQ2_S][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq2_s_to_u8, .sb = 16, .off = IQ2_U8_OFF, .umax = 2 * IQ2_U8_OFF};
}
