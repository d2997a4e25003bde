/* tq: the ternary types TQ1_0 (1.69 bits per weight) and TQ2_0 (2.06), scalar reference.
 *
 * Both hold t in {0, 1, 2} per value and x = d * (t - 1), one fp16 d per 256 values.
 *   TQ2_0: 2 bits per value; value 128 c + 32 l + m is bits 2l..2l+1 of qs[32 c + m].
 *   TQ1_0: 5 trits per byte (4 in qh), stored as a fixed-point fraction: a byte b holding digits
 *          t0..t4 (t0 most significant) is ceil(256 * (81 t0 + 27 t1 + 9 t2 + 3 t3 + t4) / 243), so
 *          digit l is recovered as ((uint8)(b * 3^l) * 3) >> 8: multiplying by 3^l shifts digit l to the
 *          top, the uint8 wrap drops the digits above it.
 *          Values: qs[0..32) give 0..160 (value 32 l + m from byte m, digit l), qs[32..48) give 160..240
 *          (160 + 16 l + m), qh[0..4) give 240..256 (240 + 4 l + m, digits 0..3).
 * to_float and from_float are bit-exact with gguf-py 0.19 (quantize: d = max |x|, t = round(x / d) + 1
 * with round half away from zero, x / d computed as x * (1 / d) in float32). vec_dot sums (t - 1) * q8 in
 * integers per block. */
#include <math.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iquants.h"

static const uint8_t pow3[5] = {1, 3, 9, 27, 81};

/* Digit l of a TQ1_0 byte, as t - 1 in {-1, 0, 1}. */
static inline int tq1_digit(uint8_t b, int l) {
    const uint8_t q = (uint8_t)(b * pow3[l]);
    return (((uint16_t)q * 3) >> 8) - 1;
}

/* Runs BODY with IDX = value index and T = t - 1, for every value of TQ1_0 block b in storage order. */
#define TQ1_FOR_EACH(b, IDX, T, BODY)                                                          \
    do {                                                                                       \
        for (int l_ = 0; l_ < 5; l_++)                                                         \
            for (int m_ = 0; m_ < 32; m_++) {                                                  \
                const int IDX = 32 * l_ + m_, T = tq1_digit((b)->qs[m_], l_);                  \
                BODY;                                                                          \
            }                                                                                  \
        for (int l_ = 0; l_ < 5; l_++)                                                         \
            for (int m_ = 0; m_ < 16; m_++) {                                                  \
                const int IDX = 160 + 16 * l_ + m_, T = tq1_digit((b)->qs[32 + m_], l_);       \
                BODY;                                                                          \
            }                                                                                  \
        for (int l_ = 0; l_ < 4; l_++)                                                         \
            for (int m_ = 0; m_ < 4; m_++) {                                                   \
                const int IDX = 240 + 4 * l_ + m_, T = tq1_digit((b)->qh[m_], l_);             \
                BODY;                                                                          \
            }                                                                                  \
    } while (0)

/* gguf-py's scale and ternary rounding: d = max |x| (NaN if any x is NaN, as numpy's max), then
 * t[j] = round_half_away(x[j] * (1 / d)) + 1, or 1 where d == 0. Returns d. */
static float tq_ternarize(const float *x, uint8_t t[QK_K]) {
    float d = 0.0f;
    for (int j = 0; j < QK_K; j++) {
        const float a = fabsf(x[j]);
        if (isnan(a) || a > d) d = a;
        if (isnan(d)) break;
    }
    const float id = d == 0.0f ? 0.0f : 1.0f / d;
    for (int j = 0; j < QK_K; j++) {
        /* |x * id| <= 1 up to rounding, or non-finite when 1 / d overflows (d subnormal): numpy's cast
         * to int8 turns NaN and inf into 0. */
        const float r = roundf(x[j] * id);
        t[j] = (uint8_t)((isfinite(r) ? (int)r : 0) + 1);
    }
    return d;
}

/* ---- TQ1_0 ---- */

void tq1_0_to_float(const void *vx, float *y, int64_t n) {
    const block_tq1_0 *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K) {
        const float d = fp16_to_f32(x[i].d);
        TQ1_FOR_EACH(&x[i], idx, t, y[idx] = d * (float)t);
    }
}

/* Packs digits t[0..k) (t[0] most significant, weights 81, 27, ... as in TQ1_FOR_EACH) into one byte. */
static inline uint8_t tq1_pack(const uint8_t *t, int stride, int k) {
    unsigned v = 0;
    for (int l = 0; l < k; l++) v += t[l * stride] * (unsigned)pow3[4 - l];
    return (uint8_t)((v * 256 + 242) / 243);
}

void tq1_0_from_float(const float *x, void *vy, int64_t n) {
    block_tq1_0 *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        uint8_t t[QK_K];
        const float d = tq_ternarize(x, t);
        for (int m = 0; m < 32; m++) y[i].qs[m] = tq1_pack(t + m, 32, 5);
        for (int m = 0; m < 16; m++) y[i].qs[32 + m] = tq1_pack(t + 160 + m, 16, 5);
        for (int m = 0; m < 4; m++) y[i].qh[m] = tq1_pack(t + 240 + m, 4, 4);
        y[i].d = fp16_from_f32(d);
    }
}

void tq1_0_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq1_0 *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32_t sumi = 0;
        TQ1_FOR_EACH(&x[i], idx, t, sumi += t * y[i].qs[idx]);
        sumf += (float)sumi * (fp16_to_f32(x[i].d) * y[i].d);
    }
    *s = sumf;
}

/* ---- TQ2_0 ---- */

void tq2_0_to_float(const void *vx, float *y, int64_t n) {
    const block_tq2_0 *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = fp16_to_f32(x[i].d);
        for (int c = 0; c < 2; c++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) *y++ = d * (float)(((x[i].qs[32 * c + m] >> (2 * l)) & 3) - 1);
    }
}

void tq2_0_from_float(const float *x, void *vy, int64_t n) {
    block_tq2_0 *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        uint8_t t[QK_K];
        const float d = tq_ternarize(x, t);
        for (int c = 0; c < 2; c++)
            for (int m = 0; m < 32; m++) {
                const uint8_t *tc = t + 128 * c + m;
                y[i].qs[32 * c + m] = (uint8_t)(tc[0] | tc[32] << 2 | tc[64] << 4 | tc[96] << 6);
            }
        y[i].d = fp16_from_f32(d);
    }
}

void tq2_0_vec_dot_q8_k(int64_t n, float *s, const void *vx, const void *vy) {
    const block_tq2_0 *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        /* sum (t - 1) q8 taken as sum t q8 - sum q8: GCC 12 at -O2 with VNNI enabled (-mavxvnni,
         * -mavx512vnni, so -march=native here) vectorizes the direct form into wrong sums. */
        int32_t sumt = 0, sumq = 0;
        for (int c = 0; c < 2; c++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++) {
                    const int8_t q8 = y[i].qs[128 * c + 32 * l + m];
                    sumt += ((x[i].qs[32 * c + m] >> (2 * l)) & 3) * q8;
                    sumq += q8;
                }
        sumf += (float)(sumt - sumq) * (y[i].d * fp16_to_f32(x[i].d));
    }
    *s = sumf;
}

void quant_register_tq(quant_table t) {
    t[QT_TQ1_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = tq1_0_to_float, .from_float = tq1_0_from_float, .vec_dot = tq1_0_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
    t[QT_TQ2_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = tq2_0_to_float, .from_float = tq2_0_from_float, .vec_dot = tq2_0_vec_dot_q8_k, .vec_dot_type = QT_Q8_K};
}
