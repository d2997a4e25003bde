/* kquants: scalar reference dequantizers and dot products of the k-quants (Q2_K..Q6_K, 256-value
 * super-blocks), IQ4_NL and IQ4_XS, plus the Q8_K activation format. The quantizers are in
 * kquants_quantize.c.
 *
 * Value order inside a super-block (the index p = 0..255 of the dequantized value):
 *   Q2_K  q = (qs[32*(p/128) + p%32] >> 2*((p%128)/32)) & 3, sub-block p/16
 *   Q3_K  as Q2_K for the low 2 bits; high bit = (hmask[p%32] >> p/32) & 1, and q -= 4 when it is 0
 *   Q4_K  sub-block j = p/32: nibble (j%2) of qs[32*(j/2) + p%32]
 *   Q5_K  as Q4_K, plus bit 4 = (qh[p%32] >> j) & 1
 *   Q6_K  h = p/128, r = p%128: low 4 bits = nibble (r/64) of ql[64h + r%64],
 *         high 2 bits = (qh[32h + r%32] >> 2*(r/32)) & 3; q -= 32; sub-block p/16
 *   IQ4_XS sub-block j = p/32, r = p%32: nibble (r/16) of qs[16j + r%16], level table[that]
 *
 * Dequantizers mirror gguf-py 0.19 in float32, operation by operation: the sub-block scale is formed
 * first (dl = d * (float)sc, ml = dmin * (float)m) and then y = dl * q - ml as two roundings (no fused
 * multiply-add: the product goes through a float variable).
 *
 * Dot products with Q8_K (Q8_K: y = d8 * q8, bsums[g] = sum of the 16 q8 of group g):
 *   sum_p x_p y_p = d8 * [ d * sum_j sc_j * sum_{p in j} q_p q8_p  -  dmin * sum_g m_g * bsums_g ]
 * computed as: isum (int32) = sum_j sc_j * (int32 sum of q * q8 over sub-block j), summ (int32) =
 * sum_g m_g * bsums_g, then sumf += (d * d8) * isum - (dmin * d8) * summ, once per super-block. The
 * types without mins (Q3_K, Q6_K, IQ4_XS) drop the second term. int32 cannot overflow: the largest
 * per-super-block |isum| is Q6_K's 128 * 32 * 127 * 256 < 2^31. */
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"
#include "quant/scalar.h"

const int8_t quant_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};

/* ---- value extraction, one function per layout (used by to_float and vec_dot alike) ---- */

static int q2_k_q(const block_q2_K *b, int p) { return (b->qs[32 * (p / 128) + p % 32] >> (2 * ((p % 128) / 32))) & 3; }

static int q3_k_q(const block_q3_K *b, int p) {
    const int lo = (b->qs[32 * (p / 128) + p % 32] >> (2 * ((p % 128) / 32))) & 3;
    const int hi = (b->hmask[p % 32] >> (p / 32)) & 1;
    return lo - (hi ? 0 : 4);
}

static int q4_k_q(const block_q4_K *b, int p) {
    const int j = p / 32;
    return (b->qs[32 * (j / 2) + p % 32] >> (4 * (j % 2))) & 15;
}

static int q5_k_q(const block_q5_K *b, int p) {
    const int j = p / 32;
    const int lo = (b->qs[32 * (j / 2) + p % 32] >> (4 * (j % 2))) & 15;
    return lo | ((b->qh[p % 32] >> j) & 1) << 4;
}

static int q6_k_q(const block_q6_K *b, int p) {
    const int h = p / 128, r = p % 128;
    const int lo = (b->ql[64 * h + r % 64] >> (4 * (r / 64))) & 15;
    const int hi = (b->qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    return (lo | hi << 4) - 32;
}

static int iq4_xs_level(const block_iq4_xs *b, int p) {
    const int j = p / 32, r = p % 32;
    return quant_kvalues_iq4nl[(b->qs[16 * j + r % 16] >> (4 * (r / 16))) & 15];
}

/* IQ4_XS sub-block scale j (0..7), minus 32: 4 low bits in scales_l, 2 high bits in scales_h. */
static int iq4_xs_scale(const block_iq4_xs *b, int j) {
    const int lo = (b->scales_l[j / 2] >> (4 * (j % 2))) & 15;
    const int hi = (b->scales_h >> (2 * j)) & 3;
    return (lo | hi << 4) - 32;
}

/* ---- Q2_K: x = (d * sc) * q - (dmin * m), 16 sub-blocks of 16 ---- */

void q2_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q2_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        for (int p = 0; p < QK_K; p++) {
            const float dl = d * (float)(x[i].scales[p / 16] & 15);
            const float ml = dmin * (float)(x[i].scales[p / 16] >> 4);
            const float prod = dl * (float)q2_k_q(&x[i], p);
            y[p] = prod - ml;
        }
    }
}

void q2_k_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0, summ = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            int32_t sub = 0;
            for (int p = 16 * j; p < 16 * j + 16; p++) sub += q2_k_q(&x[i], p) * y[i].qs[p];
            isum += (x[i].scales[j] & 15) * sub;
            summ += (x[i].scales[j] >> 4) * y[i].bsums[j];
        }
        const float dd = fp16_to_f32(x[i].d) * y[i].d, dm = fp16_to_f32(x[i].dmin) * y[i].d;
        sumf += dd * (float)isum - dm * (float)summ;
    }
    *s = sumf;
}

/* ---- Q3_K: x = (d * (sc - 32)) * q, q in -4..3, 16 sub-blocks of 16 ---- */

void q3_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q3_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        for (int p = 0; p < QK_K; p++) {
            const float dl = d * (float)quant_k3_scale(x[i].scales, p / 16);
            y[p] = dl * (float)q3_k_q(&x[i], p);
        }
    }
}

void q3_k_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            int32_t sub = 0;
            for (int p = 16 * j; p < 16 * j + 16; p++) sub += q3_k_q(&x[i], p) * y[i].qs[p];
            isum += quant_k3_scale(x[i].scales, j) * sub;
        }
        sumf += (fp16_to_f32(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sumf;
}

/* ---- Q4_K / Q5_K: x = (d * sc) * q - (dmin * m), 8 sub-blocks of 32, 6-bit scales and mins ---- */

void q4_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            quant_k4_scale_min(x[i].scales, j, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            for (int p = 32 * j; p < 32 * j + 32; p++) {
                const float prod = dl * (float)q4_k_q(&x[i], p);
                y[p] = prod - ml;
            }
        }
    }
}

/* The mins term per 32-value sub-block j uses bsums[2j] + bsums[2j+1]. */
void q4_k_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0, summ = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            quant_k4_scale_min(x[i].scales, j, &sc, &m);
            int32_t sub = 0;
            for (int p = 32 * j; p < 32 * j + 32; p++) sub += q4_k_q(&x[i], p) * y[i].qs[p];
            isum += sc * sub;
            summ += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        const float dd = fp16_to_f32(x[i].d) * y[i].d, dm = fp16_to_f32(x[i].dmin) * y[i].d;
        sumf += dd * (float)isum - dm * (float)summ;
    }
    *s = sumf;
}

void q5_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q5_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            quant_k4_scale_min(x[i].scales, j, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            for (int p = 32 * j; p < 32 * j + 32; p++) {
                const float prod = dl * (float)q5_k_q(&x[i], p);
                y[p] = prod - ml;
            }
        }
    }
}

void q5_k_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0, summ = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            uint8_t sc, m;
            quant_k4_scale_min(x[i].scales, j, &sc, &m);
            int32_t sub = 0;
            for (int p = 32 * j; p < 32 * j + 32; p++) sub += q5_k_q(&x[i], p) * y[i].qs[p];
            isum += sc * sub;
            summ += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        const float dd = fp16_to_f32(x[i].d) * y[i].d, dm = fp16_to_f32(x[i].dmin) * y[i].d;
        sumf += dd * (float)isum - dm * (float)summ;
    }
    *s = sumf;
}

/* ---- Q6_K: x = (d * sc) * (q - 32), int8 scales, 16 sub-blocks of 16 ---- */

void q6_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        for (int p = 0; p < QK_K; p++) {
            const float dl = d * (float)x[i].scales[p / 16];
            y[p] = dl * (float)q6_k_q(&x[i], p);
        }
    }
}

void q6_k_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            int32_t sub = 0;
            for (int p = 16 * j; p < 16 * j + 16; p++) sub += q6_k_q(&x[i], p) * y[i].qs[p];
            isum += x[i].scales[j] * sub;
        }
        sumf += (fp16_to_f32(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sumf;
}

/* ---- Q8_K: activations of the k-quant and IQ4_XS dot products ---- */

void q8_k_to_float(const void *vx, float *y, int64_t n) {
    const block_q8_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K)
        for (int p = 0; p < QK_K; p++) y[p] = x[i].d * (float)x[i].qs[p];
}

/* As llama.cpp defines it: max = the value of largest magnitude (first on ties, sign kept);
 * iscale = -127 / max; q = nearest (half to even) of iscale * x, capped at 127 (iscale * max = -127, so
 * the low end never passes -127 for finite input); d = 1 / iscale. An all-zero block gets d = 0 and
 * zero q and bsums. */
void q8_k_from_float(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int p = 0; p < QK_K; p++)
            if (fabsf(x[p]) > amax) {
                amax = fabsf(x[p]);
                max = x[p];
            }
        memset(&y[i], 0, sizeof y[i]);
        if (amax == 0.0f) continue;
        const float iscale = -127.0f / max;
        for (int p = 0; p < QK_K; p++) {
            const float v = iscale * x[p];
            /* lrintf rounds half to even in the default rounding mode, as ggml's nearest_int does */
            long q = v < -128.0f ? -128 : lrintf(v);
            y[i].qs[p] = (int8_t)(q > 127 ? 127 : q);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int p = 16 * g; p < 16 * g + 16; p++) sum += y[i].qs[p];
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ---- IQ4_NL: x = d * table[q], blocks of 32 laid out as Q4_0 ---- */

void iq4_nl_to_float(const void *vx, float *y, int64_t n) {
    const block_iq4_nl *x = vx;
    for (int64_t i = 0; i < n / QK4_NL; i++, y += QK4_NL) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j] = d * (float)quant_kvalues_iq4nl[x[i].qs[j] & 15];
            y[j + QK4_NL / 2] = d * (float)quant_kvalues_iq4nl[x[i].qs[j] >> 4];
        }
    }
}

void iq4_nl_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_nl *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK4_NL; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK4_NL / 2; j++) {
            sumi += quant_kvalues_iq4nl[x[i].qs[j] & 15] * y[i].qs[j];
            sumi += quant_kvalues_iq4nl[x[i].qs[j] >> 4] * y[i].qs[j + QK4_NL / 2];
        }
        sumf += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    *s = sumf;
}

/* ---- IQ4_XS: x = (d * (sc - 32)) * table[q], 8 sub-blocks of 32 ---- */

void iq4_xs_to_float(const void *vx, float *y, int64_t n) {
    const block_iq4_xs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 32; j++) {
            const float dl = d * (float)iq4_xs_scale(&x[i], j);
            for (int p = 32 * j; p < 32 * j + 32; p++) y[p] = dl * (float)iq4_xs_level(&x[i], p);
        }
    }
}

void iq4_xs_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_iq4_xs *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t isum = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            int32_t sub = 0;
            for (int p = 32 * j; p < 32 * j + 32; p++) sub += iq4_xs_level(&x[i], p) * y[i].qs[p];
            isum += iq4_xs_scale(&x[i], j) * sub;
        }
        sumf += (fp16_to_f32(x[i].d) * y[i].d) * (float)isum;
    }
    *s = sumf;
}

/* ---- u8 forms (quant.h): one S (and M) per sub-block of the layout ---- */

void q2_k_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q2_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 16, M += QK_K / 16) {
        const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
        for (int j = 0; j < QK_K / 16; j++) {
            S[j] = d * (float)(x[i].scales[j] & 15);
            M[j] = dmin * (float)(x[i].scales[j] >> 4);
        }
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)q2_k_q(&x[i], p);
    }
}

/* u = q + 4 (q in -4..3), off = 4 */
void q3_k_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q3_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 16) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 16; j++) S[j] = d * (float)quant_k3_scale(x[i].scales, j);
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)(q3_k_q(&x[i], p) + 4);
    }
}

void q4_k_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32, M += QK_K / 32) {
        quant_k4_scales_f32(x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), S, M);
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)q4_k_q(&x[i], p);
    }
}

void q5_k_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q5_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32, M += QK_K / 32) {
        quant_k4_scales_f32(x[i].scales, fp16_to_f32(x[i].d), fp16_to_f32(x[i].dmin), S, M);
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)q5_k_q(&x[i], p);
    }
}

/* u = q + 32 (q in -32..31), off = 32 */
void q6_k_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 16) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 16; j++) S[j] = d * (float)x[i].scales[j];
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)(q6_k_q(&x[i], p) + 32);
    }
}

/* u = level + 128, off = 128 */
void iq4_nl_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq4_nl *x = vx;
    for (int64_t i = 0; i < n / QK4_NL; i++, u += QK4_NL) {
        S[i] = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            u[j] = (uint8_t)(quant_kvalues_iq4nl[x[i].qs[j] & 15] + 128);
            u[j + QK4_NL / 2] = (uint8_t)(quant_kvalues_iq4nl[x[i].qs[j] >> 4] + 128);
        }
    }
}

void iq4_xs_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_iq4_xs *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, u += QK_K, S += QK_K / 32) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK_K / 32; j++) S[j] = d * (float)iq4_xs_scale(&x[i], j);
        for (int p = 0; p < QK_K; p++) u[p] = (uint8_t)(iq4_xs_level(&x[i], p) + 128);
    }
}

void quant_register_kquants(quant_table t) {
    t[QT_Q2_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q2_k_to_float, .from_float = q2_k_from_float, .vec_dot = q2_k_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_Q3_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q3_k_to_float, .from_float = q3_k_from_float, .vec_dot = q3_k_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_Q4_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q4_k_to_float, .from_float = q4_k_from_float, .vec_dot = q4_k_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_Q5_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q5_k_to_float, .from_float = q5_k_from_float, .vec_dot = q5_k_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_Q6_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q6_k_to_float, .from_float = q6_k_from_float, .vec_dot = q6_k_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    /* Q8_K is only an activation format: no dot product of its own. */
    t[QT_Q8_K][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q8_k_to_float, .from_float = q8_k_from_float, .vec_dot = NULL, .vec_dot_type = QT_Q8_K};
    t[QT_IQ4_NL][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq4_nl_to_float, .from_float = iq4_nl_from_float, .vec_dot = iq4_nl_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    t[QT_IQ4_XS][QUANT_ISA_SCALAR] = (quant_ops){.to_float = iq4_xs_to_float, .from_float = iq4_xs_from_float, .vec_dot = iq4_xs_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    /* u8 forms */
    t[QT_Q2_K][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q2_k_to_u8, .sb = 16, .has_min = true, .umax = 3};
    t[QT_Q3_K][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q3_k_to_u8, .sb = 16, .off = 4, .umax = 7};
    t[QT_Q4_K][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q4_k_to_u8, .sb = 32, .has_min = true, .umax = 15};
    t[QT_Q5_K][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q5_k_to_u8, .sb = 32, .has_min = true, .umax = 31};
    t[QT_Q6_K][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q6_k_to_u8, .sb = 16, .off = 32, .umax = 63};
    t[QT_IQ4_NL][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq4_nl_to_u8, .sb = 32, .off = 128, .umax = 241};
    t[QT_IQ4_XS][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = iq4_xs_to_u8, .sb = 32, .off = 128, .umax = 241};
}
