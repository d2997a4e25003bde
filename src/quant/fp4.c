/* fp4: the E2M1 (4-bit float) types MXFP4 and NVFP4, scalar reference.
 *
 * A 4-bit code indexes quant_kvalues_mxfp4 (E2M1 values doubled: 0, 1, 2, 3, 4, 6, 8, 12 and negatives),
 * so every scale below is stored halved to compensate.
 *   MXFP4 (OCP microscaling): 32 values, one E8M0 exponent e: scale = 2^(e - 127) / 2; values 0..15 in the
 *         low nibbles of qs, 16..31 in the high nibbles.
 *   NVFP4: 64 values in 4 sub-blocks of 16, each with an unsigned E4M3 scale byte (bias 7, subnormals,
 *         0x7F read as 0); scale = value / 2; sub-block s: values 0..7 in the low nibbles of qs[8s..8s+8),
 *         8..15 in the high nibbles.
 * to_float is bit-exact with gguf-py 0.19. MXFP4's from_float is bit-exact with gguf-py's quantize
 * (e = floor(log2(max |x|)) - 2 + 127, each value to the nearest code, the lower code on ties); gguf-py
 * has no NVFP4 quantizer, so NVFP4's follows llama.cpp's reference (scale = max |x| / 6 rounded to E4M3,
 * half up). vec_dot pairs with Q8_0 (two Q8_0 blocks per NVFP4 block), integer sums per scale. */
#include <math.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "quant/iquants.h"

/* E8M0 exponent -> 2^(e - 128) (the halved scale); e = 0 and 1 are the float subnormals 2^-128, 2^-127. */
static inline float e8m0_to_f32_half(uint8_t e) {
    return fp32_from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
}

/* Unsigned E4M3 -> value / 2; every result is exact in float. */
static inline float ue4m3_to_f32_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exp = (x >> 3) & 0xF, man = x & 7;
    const float raw = exp == 0 ? (float)man * 0x1p-9f : ldexpf(1.0f + (float)man / 8.0f, exp - 7);
    return raw * 0.5f;
}

/* float -> unsigned E4M3 as llama.cpp's reference rounds it: clamp to (0, 448], subnormals as
 * round(x * 512) clamped to 1..7 (below 1: 0), normals by rounding the mantissa half up, 0x7E at the top. */
static uint8_t ue4m3_from_f32(float x) {
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    const uint32_t bits = fp32_to_bits(x);
    int exp = (int)((bits >> 23) & 0xFF) - 127 + 7;
    if (exp <= 0) {
        int man = (int)(x * 512.0f + 0.5f);
        if (man > 7) man = 7;
        return man < 1 ? 0 : (uint8_t)man;
    }
    if (exp >= 15) return 0x7E;
    int man = (int)((bits >> 20) & 7) + (int)((bits >> 19) & 1);
    if (man > 7) {
        man = 0;
        if (++exp >= 15) return 0x7E;
    }
    return (uint8_t)(exp << 3 | man);
}

/* The code whose value (times scale d) is nearest x; the first (lowest) code wins ties, as numpy's argmin.
 * A NaN error never wins, which also matches argmin here: errors are NaN only when x is, and then all are. */
static uint8_t fp4_best_code(float x, float d) {
    uint8_t best = 0;
    float best_err = fabsf(d * (float)quant_kvalues_mxfp4[0] - x);
    for (uint8_t c = 1; c < 16; c++) {
        const float err = fabsf(d * (float)quant_kvalues_mxfp4[c] - x);
        if (err < best_err) {
            best = c;
            best_err = err;
        }
    }
    return best;
}

/* ---- MXFP4 ---- */

void mxfp4_to_float(const void *vx, float *y, int64_t n) {
    const block_mxfp4 *x = vx;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, y += QK_MXFP4) {
        const float d = e8m0_to_f32_half(x[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j] = d * (float)quant_kvalues_mxfp4[x[i].qs[j] & 0xF];
            y[j + QK_MXFP4 / 2] = d * (float)quant_kvalues_mxfp4[x[i].qs[j] >> 4];
        }
    }
}

void mxfp4_from_float(const float *x, void *vy, int64_t n) {
    block_mxfp4 *y = vy;
    for (int64_t i = 0; i < n / QK_MXFP4; i++, x += QK_MXFP4) {
        float amax = 0.0f; /* numpy's max: NaN if any value is NaN */
        for (int j = 0; j < QK_MXFP4 && !isnan(amax); j++) {
            const float a = fabsf(x[j]);
            if (isnan(a) || a > amax) amax = a;
        }
        /* numpy's float -> uint8 cast wraps negatives (amax below 2^-125) and sends inf to 0. */
        const float ef = floorf(log2f(amax)) - 2.0f + 127.0f;
        y[i].e = amax > 0.0f && isfinite(ef) ? (uint8_t)(int)ef : 0;
        const float d = e8m0_to_f32_half(y[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++)
            y[i].qs[j] = (uint8_t)(fp4_best_code(x[j], d) | fp4_best_code(x[j + QK_MXFP4 / 2], d) << 4);
    }
}

void mxfp4_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_MXFP4; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            sumi += quant_kvalues_mxfp4[x[i].qs[j] & 0xF] * y[i].qs[j];
            sumi += quant_kvalues_mxfp4[x[i].qs[j] >> 4] * y[i].qs[j + QK_MXFP4 / 2];
        }
        sumf += fp16_to_f32(y[i].d) * e8m0_to_f32_half(x[i].e) * (float)sumi;
    }
    *s = sumf;
}

/* ---- NVFP4 ---- */

void nvfp4_to_float(const void *vx, float *y, int64_t n) {
    const block_nvfp4 *x = vx;
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int sb = 0; sb < QK_NVFP4 / QK_NVFP4_SUB; sb++, y += QK_NVFP4_SUB) {
            const float d = ue4m3_to_f32_half(x[i].d[sb]);
            const uint8_t *qs = x[i].qs + sb * QK_NVFP4_SUB / 2;
            for (int j = 0; j < QK_NVFP4_SUB / 2; j++) {
                y[j] = d * (float)quant_kvalues_mxfp4[qs[j] & 0xF];
                y[j + QK_NVFP4_SUB / 2] = d * (float)quant_kvalues_mxfp4[qs[j] >> 4];
            }
        }
    }
}

void nvfp4_from_float(const float *x, void *vy, int64_t n) {
    block_nvfp4 *y = vy;
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int sb = 0; sb < QK_NVFP4 / QK_NVFP4_SUB; sb++, x += QK_NVFP4_SUB) {
            float amax = 0.0f; /* llama.cpp's max skips NaN */
            for (int j = 0; j < QK_NVFP4_SUB; j++)
                if (amax < fabsf(x[j])) amax = fabsf(x[j]);
            y[i].d[sb] = ue4m3_from_f32(amax / 6.0f); /* 6 = the largest E2M1 value */
            const float d = ue4m3_to_f32_half(y[i].d[sb]);
            uint8_t *qs = y[i].qs + sb * QK_NVFP4_SUB / 2;
            for (int j = 0; j < QK_NVFP4_SUB / 2; j++)
                qs[j] = (uint8_t)(fp4_best_code(x[j], d) | fp4_best_code(x[j + QK_NVFP4_SUB / 2], d) << 4);
        }
    }
}

void nvfp4_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_nvfp4 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int sb = 0; sb < QK_NVFP4 / QK_NVFP4_SUB; sb++) {
            /* sub-blocks 0, 1 fall in Q8_0 block 2i, sub-blocks 2, 3 in 2i + 1 */
            const block_q8_0 *yb = &y[2 * i + sb / 2];
            const int8_t *q8 = yb->qs + (sb % 2) * QK_NVFP4_SUB;
            const uint8_t *qs = x[i].qs + sb * QK_NVFP4_SUB / 2;
            int32_t sumi = 0;
            for (int j = 0; j < QK_NVFP4_SUB / 2; j++) {
                sumi += quant_kvalues_mxfp4[qs[j] & 0xF] * q8[j];
                sumi += quant_kvalues_mxfp4[qs[j] >> 4] * q8[j + QK_NVFP4_SUB / 2];
            }
            sumf += fp16_to_f32(yb->d) * ue4m3_to_f32_half(x[i].d[sb]) * (float)sumi;
        }
    }
    *s = sumf;
}

void quant_register_fp4(quant_table t) {
    t[QT_MXFP4][QUANT_ISA_SCALAR] = (quant_ops){.to_float = mxfp4_to_float, .from_float = mxfp4_from_float, .vec_dot = mxfp4_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    t[QT_NVFP4][QUANT_ISA_SCALAR] = (quant_ops){.to_float = nvfp4_to_float, .from_float = nvfp4_from_float, .vec_dot = nvfp4_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
}
