/* iq1: IQ1_S (1.56 bits per weight) and IQ1_M (1.75), scalar reference.
 *
 * Both code groups of 8 values as an 11-bit index into a 2048-entry grid of values in {-1, 0, 1}, shifted
 * by a per-group delta of +-1/8: x = dl * (grid[j] + delta), dl = d * (2s + 1) with a 3-bit scale s.
 *   IQ1_S: per 32 values a uint16 qh[ib]: bits 3l..3l+2 = high index bits of group l, bits 12..14 = s,
 *          bit 15 = sign of delta (set: -1/8); low index bits in qs[4 * ib + l].
 *   IQ1_M: per 8 values a nibble of qh (group k: nibble k % 2 of qh[k / 2]): 3 high index bits, and bit 3
 *          = sign of delta; 3-bit scales per 16 values packed in the 4 uint16 of scales[] (scale m: bits
 *          3 (m % 4).. of scales16[m / 4]); the fp16 d is spread over the top nibbles of those 4 uint16.
 * to_float mirrors gguf-py's float32 order: dl = d * float(2s + 1), then dl * (grid + delta).
 * vec_dot: sum dl * (g + delta) * q8 = d * (ls * sum(g * q8) + delta * ls * sum(q8)); both sums are exact
 * integers, the delta (+-1/8) is applied once per block. The sums of q8 are taken from qs, not from Q8_K's
 * bsums, so this reference does not depend on how bsums were filled.
 * u8 form (quant.h): 8 (g + delta) = 8g +- 1 is an integer in -9..9, so u = 8g +- 1 + 9 (umax 18, off 9)
 * and S = dl * 0.125 (exact: a power of two), one S per scale (IQ1_S: 32 values, IQ1_M: 16). S * (u - 9)
 * is dl * (g + delta) rounded once, as to_float's product. */
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/iquants.h"

#define IQ1_DELTA 0.125f

/* ---- IQ1_S ---- */

void iq1_s_to_float(const void *vx, float *y, int64_t n) {
    const block_iq1_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const unsigned qh = x[i].qh[ib];
            const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = (qh & 0x8000) ? -IQ1_DELTA : IQ1_DELTA;
            for (int l = 0; l < 4; l++) {
                const int8_t *g = quant_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++) *y++ = dl * ((float)g[j] + delta);
            }
        }
    }
}

void iq1_s_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_s *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const int8_t *q8 = y[i].qs;
        int32_t sumi = 0;  /* sum of ls * grid * q8 */
        int32_t sumi1 = 0; /* sum of ls * (+-1) * q8, to be scaled by 1/8 */
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const unsigned qh = x[i].qh[ib];
            const int32_t ls = 2 * ((qh >> 12) & 7) + 1;
            int32_t lsum = 0, qsum = 0;
            for (int l = 0; l < 4; l++) {
                const int8_t *g = quant_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++) {
                    lsum += g[j] * q8[j];
                    qsum += q8[j];
                }
                q8 += 8;
            }
            sumi += ls * lsum;
            sumi1 += ls * (qh & 0x8000 ? -qsum : qsum);
        }
        sumf += fp16_to_f32(x[i].d) * y[i].d * ((float)sumi + IQ1_DELTA * (float)sumi1);
    }
    *s = sumf;
}

void iq1_s_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq1_s *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const unsigned qh = x[i].qh[ib];
            *S++ = d * (float)(2 * ((qh >> 12) & 7) + 1) * IQ1_DELTA;
            const int delta = (qh & 0x8000) ? -1 : 1;
            for (int l = 0; l < 4; l++) {
                const int8_t *g = quant_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++) *u++ = (uint8_t)(8 * g[j] + delta + 9);
            }
        }
    }
}

/* ---- IQ1_M ---- */

/* The 4 scale words, and the fp16 super-block scale rebuilt from their top nibbles. */
static inline float iq1m_scales(const block_iq1_m *b, uint16_t sc[4]) {
    memcpy(sc, b->scales, 4 * sizeof(uint16_t));
    const uint16_t h = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
    return fp16_to_f32(h);
}

static inline unsigned iq1m_scale(const uint16_t sc[4], int m) { return (sc[m / 4] >> (3 * (m % 4))) & 7; }

/* Nibble of group k (8 values): bits 0..2 = high index bits, bit 3 = delta sign. */
static inline unsigned iq1m_nibble(const block_iq1_m *b, int k) { return (b->qh[k / 2] >> (4 * (k % 2))) & 15; }

void iq1_m_to_float(const void *vx, float *y, int64_t n) {
    const block_iq1_m *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        const float d = iq1m_scales(&x[i], sc);
        for (int k = 0; k < QK_K / 8; k++) {
            const unsigned nib = iq1m_nibble(&x[i], k);
            const float dl = d * (float)(2 * iq1m_scale(sc, k / 2) + 1);
            const float delta = (nib & 8) ? -IQ1_DELTA : IQ1_DELTA;
            const int8_t *g = quant_iq1s_grid[x[i].qs[k] | ((nib & 7) << 8)];
            for (int j = 0; j < 8; j++) *y++ = dl * ((float)g[j] + delta);
        }
    }
}

void iq1_m_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq1_m *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        const float d = iq1m_scales(&x[i], sc);
        const int8_t *q8 = y[i].qs;
        int32_t sumi = 0, sumi1 = 0; /* as in IQ1_S */
        for (int k = 0; k < QK_K / 8; k++) {
            const unsigned nib = iq1m_nibble(&x[i], k);
            const int32_t ls = 2 * (int32_t)iq1m_scale(sc, k / 2) + 1;
            const int8_t *g = quant_iq1s_grid[x[i].qs[k] | ((nib & 7) << 8)];
            int32_t lsum = 0, qsum = 0;
            for (int j = 0; j < 8; j++) {
                lsum += g[j] * q8[j];
                qsum += q8[j];
            }
            q8 += 8;
            sumi += ls * lsum;
            sumi1 += ls * (nib & 8 ? -qsum : qsum);
        }
        sumf += d * y[i].d * ((float)sumi + IQ1_DELTA * (float)sumi1);
    }
    *s = sumf;
}

void iq1_m_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq1_m *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint16_t sc[4];
        const float d = iq1m_scales(&x[i], sc);
        for (int m = 0; m < QK_K / 16; m++) *S++ = d * (float)(2 * iq1m_scale(sc, m) + 1) * IQ1_DELTA;
        for (int k = 0; k < QK_K / 8; k++) {
            const unsigned nib = iq1m_nibble(&x[i], k);
            const int delta = (nib & 8) ? -1 : 1;
            const int8_t *g = quant_iq1s_grid[x[i].qs[k] | ((nib & 7) << 8)];
            for (int j = 0; j < 8; j++) *u++ = (uint8_t)(8 * g[j] + delta + 9);
        }
    }
}

void quant_register_iq1(quant_table t) {
    t[QT_IQ1_S][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq1_s_to_float, .from_float = NULL, .vec_dot = iq1_s_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ1_M][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq1_m_to_float, .from_float = NULL, .vec_dot = iq1_m_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_IQ1_S][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq1_s_to_u8, .sb = 32, .off = 9, .umax = 18};
    t[QT_IQ1_M][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq1_m_to_u8, .sb = 16, .off = 9, .umax = 18};
}
