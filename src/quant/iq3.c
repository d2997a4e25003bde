/* iq3: IQ3_XXS (3.06 bits per weight) and IQ3_S (3.44), scalar reference.
 *
 * Both code groups of 4 values as an index into a grid of 4 magnitudes, with sign bits per 8 values.
 *   IQ3_XXS: qs[0..64) = 8-bit indices into a 256-entry grid (magnitudes 4, 12, ..., 62); per 32 values a
 *            uint32 at qs[64 + 4 * ib]: 4 x 7 sign bits (8th = parity, quant_ksigns_iq2xs) and the scale
 *            s in the top 4 bits; x = d * (0.5 + s) * 0.5 * grid * sign.
 *   IQ3_S:   9-bit indices into a 512-entry grid (odd magnitudes 1..15): 8 bits in qs, bit 8 in qh;
 *            explicit sign bits (value v: bit v % 8 of signs[v / 8]); 4-bit scale s per 32 values;
 *            x = d * (1 + 2s) * grid * sign.
 * to_float mirrors gguf-py's float32 order (db first, then (db * grid) * (+-1)). vec_dot sums
 * (2s + 1) * grid * sign * q8 in integers; IQ3_XXS's (0.5 + s) * 0.5 = (2s + 1) / 4 gives a final 0.25.
 * u8 form (quant.h): u = off +- grid with off the largest magnitude (IQ3_XXS 62, IQ3_S 15), S = db per
 * 32 values; S * (u - off) = db * (+-grid), to_float's product with its sign. */
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/iquants.h"

/* gguf-py multiplies by a float +-1, and the multiply returns a NaN operand unchanged; a compiler turns
 * v * -1.0f into a sign flip, so NaN is passed through explicitly to keep the bits alike. */
static inline float signed_by(float v, unsigned bit) { return bit && !isnan(v) ? -v : v; }

/* ---- IQ3_XXS ---- */

void iq3_xxs_to_float(const void *vx, float *y, int64_t n) {
    const block_iq3_xxs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *idx = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux; /* 4 x 7 sign bits, scale in bits 28..31 */
            memcpy(&aux, x[i].qs + QK_K / 4 + 4 * ib, sizeof aux);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) { /* 8 values: two grid entries, one sign byte */
                const uint8_t signs = quant_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) {
                    const uint8_t g = quant_iq3xxs_grid[idx[2 * l + j / 4]][j % 4];
                    *y++ = signed_by(db * (float)g, (signs >> j) & 1);
                }
            }
            idx += 8;
        }
    }
}

void iq3_xxs_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_xxs *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *q8 = y[i].qs;
        const uint8_t *idx = x[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            uint32_t aux;
            memcpy(&aux, x[i].qs + QK_K / 4 + 4 * ib, sizeof aux);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t signs = quant_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) {
                    const uint8_t g = quant_iq3xxs_grid[idx[2 * l + j / 4]][j % 4];
                    sumi += (signs >> j & 1 ? -1 : 1) * g * q8[j];
                }
                q8 += 8;
            }
            idx += 8;
            bsum += sumi * (int32_t)(2 * (aux >> 28) + 1);
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
    }
    *s = 0.25f * sumf;
}

#define IQ3XXS_U8_OFF 62 /* the largest IQ3_XXS grid magnitude */
#define IQ3S_U8_OFF 15   /* the largest IQ3_S grid magnitude */

void iq3_xxs_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq3_xxs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        const uint8_t *idx = x[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, idx += 8) {
            uint32_t aux;
            memcpy(&aux, x[i].qs + QK_K / 4 + 4 * ib, sizeof aux);
            *S++ = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                const uint8_t signs = quant_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; j++) {
                    const int g = quant_iq3xxs_grid[idx[2 * l + j / 4]][j % 4];
                    *u++ = (uint8_t)((signs >> j) & 1 ? IQ3XXS_U8_OFF - g : IQ3XXS_U8_OFF + g);
                }
            }
        }
    }
}

/* ---- IQ3_S ---- */

/* Grid index of group k (4 values): 8 bits from qs[k], bit 8 = bit k % 8 of qh[k / 8]. */
static inline unsigned iq3s_index(const block_iq3_s *b, int k) {
    return b->qs[k] | (((unsigned)b->qh[k / 8] >> (k % 8) & 1) << 8);
}

/* Scale nibble of the 32 values ib: low nibble of scales[ib / 2] for even ib, high for odd. */
static inline unsigned iq3s_scale(const block_iq3_s *b, int ib) { return (b->scales[ib / 2] >> (4 * (ib & 1))) & 15; }

void iq3_s_to_float(const void *vx, float *y, int64_t n) {
    const block_iq3_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float db = d * (float)(1 + 2 * iq3s_scale(&x[i], ib));
            for (int v = 32 * ib; v < 32 * ib + 32; v++) {
                const uint8_t g = quant_iq3s_grid[iq3s_index(&x[i], v / 4)][v % 4];
                *y++ = signed_by(db * (float)g, (x[i].signs[v / 8] >> (v % 8)) & 1);
            }
        }
    }
}

void iq3_s_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq3_s *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            int32_t sumi = 0;
            for (int v = 32 * ib; v < 32 * ib + 32; v++) {
                const uint8_t g = quant_iq3s_grid[iq3s_index(&x[i], v / 4)][v % 4];
                sumi += (x[i].signs[v / 8] >> (v % 8) & 1 ? -1 : 1) * g * y[i].qs[v];
            }
            bsum += sumi * (int32_t)(1 + 2 * iq3s_scale(&x[i], ib));
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * (float)bsum;
    }
    *s = sumf;
}

void iq3_s_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq3_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) *S++ = d * (float)(1 + 2 * iq3s_scale(&x[i], ib));
        for (int v = 0; v < QK_K; v++) {
            const int g = quant_iq3s_grid[iq3s_index(&x[i], v / 4)][v % 4];
            *u++ = (uint8_t)((x[i].signs[v / 8] >> (v % 8)) & 1 ? IQ3S_U8_OFF - g : IQ3S_U8_OFF + g);
        }
    }
}

void quant_register_iq3(quant_table t) {
    t[QT_IQ3_XXS][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq3_xxs_to_float, .from_float = NULL, .vec_dot = iq3_xxs_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ3_S][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq3_s_to_float, .from_float = NULL, .vec_dot = iq3_s_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ3_XXS][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq3_xxs_to_u8, .sb = 32, .off = IQ3XXS_U8_OFF, .umax = 2 * IQ3XXS_U8_OFF};
    t[QT_IQ3_S][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq3_s_to_u8, .sb = 32, .off = IQ3S_U8_OFF, .umax = 2 * IQ3S_U8_OFF};
}
