/* simd_neon: the NEON (AArch64 Advanced SIMD) quant kernels and their registration under QUANT_ISA_NEON.
 * Built only on aarch64, where NEON is part of the base ISA (no run-time check needed).
 *
 * Covered: vec_dot of Q4_0 and Q8_0 (x Q8_0), Q4_K and Q6_K (x Q8_K); from_float of the activation
 * formats Q8_0, Q8_1 and Q8_K (the scalar reference's bytes: vcvtaq rounds half away from zero as roundf
 * does, vcvtnq half to even as ggml's nearest_int does). Other members fall back to scalar through
 * quant_ops_best.
 *
 * Shape: 16 bytes (one int8x16) at a time. With the ARMv8.2 dot-product extension compiled in
 * (__ARM_FEATURE_DOTPROD) a 16-byte signed dot product is one sdot into 4 int32 lanes; otherwise it is two
 * widening multiplies (int8 x int8 fits int16 exactly) and pairwise add-accumulates. As on x86 the integer
 * sum per block is the scalar code's; only the float accumulation order differs. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"
#include "quant/scalar.h"

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

/* ---- 32-value blocks x Q8_0 ----------------------------------------------------------------------- */

static void q4_0_vec_dot_q8_0_neon(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    const int8x16_t eight = vdupq_n_s8(8);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < n / QK4_0; b++) {
        const uint8x16_t q = vld1q_u8(x[b].qs);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), eight); /* values 0..15 */
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight); /* values 16..31 */
        int32x4_t isum = dot16(vdupq_n_s32(0), lo, vld1q_s8(y[b].qs));
        isum = dot16(isum, hi, vld1q_s8(y[b].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d));
    }
    *s = vaddvq_f32(acc);
}

static void q8_0_vec_dot_q8_0_neon(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < n / QK8_0; b++) {
        int32x4_t isum = dot16(vdupq_n_s32(0), vld1q_s8(x[b].qs), vld1q_s8(y[b].qs));
        isum = dot16(isum, vld1q_s8(x[b].qs + 16), vld1q_s8(y[b].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d));
    }
    *s = vaddvq_f32(acc);
}

/* ---- super-blocks x Q8_K -------------------------------------------------------------------------- */

/* x = d * sc * q - dmin * m over 8 sub-blocks of 32; the mins term uses the Q8_K bsums. */
static void q4_k_vec_dot_q8_k_neon(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        int32_t isum = 0, summ = 0;
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            quant_k4_scale_min(x[b].scales, j, &sc, &m);
            summ += m * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
            /* sub-block j: low (j even) or high (j odd) nibbles of bytes 32 * (j / 2) .. + 32 */
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            const int8_t *q8 = y[b].qs + 32 * j;
            uint8x16_t q0 = vld1q_u8(q), q1 = vld1q_u8(q + 16);
            q0 = (j & 1) ? vshrq_n_u8(q0, 4) : vandq_u8(q0, m4);
            q1 = (j & 1) ? vshrq_n_u8(q1, 4) : vandq_u8(q1, m4);
            int32x4_t d = dot16(vdupq_n_s32(0), vreinterpretq_s8_u8(q0), vld1q_s8(q8));
            d = dot16(d, vreinterpretq_s8_u8(q1), vld1q_s8(q8 + 16));
            isum += sc * vaddvq_s32(d);
        }
        sumf += fp16_to_f32(x[b].d) * y[b].d * (float)isum - fp16_to_f32(x[b].dmin) * y[b].d * (float)summ;
    }
    *s = sumf;
}

/* value = (4 bits of ql | 2 bits of qh << 4) - 32, int8 scale per 16 values (one int8x16 each). */
static void q6_k_vec_dot_q8_k_neon(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
    const int8x16_t m32 = vdupq_n_s8(32);
    float sumf = 0.0f;
    for (int64_t b = 0; b < n / QK_K; b++) {
        int32_t isum = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[b].ql + 64 * h, *qh = x[b].qh + 32 * h;
            for (int p = 0; p < 2; p++) { /* bytes 16p .. 16p + 15 of each 32-byte run */
                const uint8x16_t l0 = vld1q_u8(ql + 16 * p), l1 = vld1q_u8(ql + 32 + 16 * p);
                const uint8x16_t hb = vld1q_u8(qh + 16 * p);
                uint8x16_t u[4] = {
                    vorrq_u8(vandq_u8(l0, m4), vandq_u8(vshlq_n_u8(hb, 4), m30)),
                    vorrq_u8(vandq_u8(l1, m4), vandq_u8(vshlq_n_u8(hb, 2), m30)),
                    vorrq_u8(vshrq_n_u8(l0, 4), vandq_u8(hb, m30)),
                    vorrq_u8(vshrq_n_u8(l1, 4), vandq_u8(vshrq_n_u8(hb, 2), m30)),
                };
                for (int k = 0; k < 4; k++) { /* values 128h + 32k + 16p ..: sub-block 8h + 2k + p */
                    const int8x16_t v = vsubq_s8(vreinterpretq_s8_u8(u[k]), m32);
                    const int32x4_t d = dot16(vdupq_n_s32(0), v, vld1q_s8(y[b].qs + 128 * h + 32 * k + 16 * p));
                    isum += x[b].scales[8 * h + 2 * k + p] * vaddvq_s32(d);
                }
            }
        }
        sumf += fp16_to_f32(x[b].d) * y[b].d * (float)isum;
    }
    *s = sumf;
}

/* ---- quantize activations ------------------------------------------------------------------------- */

static float amax_n(const float *x, int n) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int j = 0; j < n; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + j)));
    return vmaxvq_f32(m);
}

/* 4 int32 in -128..127 per vector, 8 vectors -> 32 int8 */
static void store_i8x32(int8_t *dst, const int32x4_t v[8]) {
    for (int k = 0; k < 8; k += 2) {
        const int16x8_t w = vcombine_s16(vqmovn_s32(v[k]), vqmovn_s32(v[k + 1]));
        vst1_s8(dst + 4 * k, vqmovn_s16(w));
    }
}

/* Q8_0 / Q8_1 block: d = amax / 127, q = roundf(x * (1 / d)); returns d, sets *sum = sum(q). */
static float q8_block_neon(const float *x, int8_t *q, int32_t *sum) {
    const float amax = amax_n(x, 32);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32x4_t v[8], acc = vdupq_n_s32(0);
    for (int k = 0; k < 8; k++) {
        v[k] = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + 4 * k), id)); /* ties away from zero */
        acc = vaddq_s32(acc, v[k]);
    }
    store_i8x32(q, v);
    *sum = vaddvq_s32(acc);
    return d;
}

static void q8_0_from_float_neon(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t b = 0; b < n / QK8_0; b++) {
        int32_t sum;
        y[b].d = fp16_from_f32(q8_block_neon(x + b * QK8_0, y[b].qs, &sum));
    }
}

static void q8_1_from_float_neon(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t b = 0; b < n / QK8_1; b++) {
        int32_t sum;
        const float d = q8_block_neon(x + b * QK8_1, y[b].qs, &sum);
        y[b].d = fp16_from_f32(d);
        y[b].s = fp16_from_f32((float)sum * d);
    }
}

/* max = first x of largest |x| (sign kept), iscale = -127 / max, q = min(127, round-half-even(iscale x)). */
static void q8_k_from_float_neon(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K) {
        memset(&y[b], 0, sizeof y[b]);
        const float amax = amax_n(x, QK_K);
        if (amax == 0.0f) continue;
        int first = 0;
        while (first < QK_K - 1 && fabsf(x[first]) != amax) first++; /* bounded: NaN input never matches */
        const float iscale = -127.0f / x[first];
        const int32x4_t cap = vdupq_n_s32(127);
        for (int j = 0; j < QK_K; j += 32) {
            int32x4_t v[8];
            for (int k = 0; k < 8; k++) v[k] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * k), iscale)), cap);
            store_i8x32(y[b].qs + j, v);
            y[b].bsums[j / 16] = (int16_t)(vaddvq_s32(vaddq_s32(vaddq_s32(v[0], v[1]), vaddq_s32(v[2], v[3]))));
            y[b].bsums[j / 16 + 1] = (int16_t)(vaddvq_s32(vaddq_s32(vaddq_s32(v[4], v[5]), vaddq_s32(v[6], v[7]))));
        }
        y[b].d = 1.0f / iscale;
    }
}

void quant_register_neon(quant_table t) {
    const enum quant_isa isa = QUANT_ISA_NEON;
    t[QT_Q4_0][isa] = (quant_ops){.vec_dot = q4_0_vec_dot_q8_0_neon, .vec_dot_type = QT_Q8_0};
    t[QT_Q8_0][isa] = (quant_ops){.vec_dot = q8_0_vec_dot_q8_0_neon, .from_float = q8_0_from_float_neon,
                                  .vec_dot_type = QT_Q8_0};
    t[QT_Q4_K][isa] = (quant_ops){.vec_dot = q4_k_vec_dot_q8_k_neon, .vec_dot_type = QT_Q8_K};
    t[QT_Q6_K][isa] = (quant_ops){.vec_dot = q6_k_vec_dot_q8_k_neon, .vec_dot_type = QT_Q8_K};
    t[QT_Q8_1][isa] = (quant_ops){.from_float = q8_1_from_float_neon, .vec_dot_type = QT_Q8_1};
    t[QT_Q8_K][isa] = (quant_ops){.from_float = q8_k_from_float_neon, .vec_dot_type = QT_Q8_K};
}
