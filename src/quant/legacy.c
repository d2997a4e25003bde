/* legacy: scalar reference of the plain float types (F32, F16, BF16) and the 32-value block types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, and the activation format Q8_1).
 *
 * Bit-exactness contract (checked by tests/quant/test_quant_gguf_py.c against committed fixtures):
 *   - to_float reproduces gguf-py 0.19's numpy dequantize: same float32 operations in the same order
 *     (e.g. Q4_1 is (d * q) + m, two roundings, never a fused multiply-add: each product is stored to a
 *     float variable first, which C11 ISO mode and clang's default per-expression contraction both keep).
 *   - from_float reproduces gguf-py's quantize byte for byte for F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1 and
 *     Q8_0 (gguf-py rounds with trunc(v + 0.5) for the 4/5-bit types and round-half-away for Q8_0).
 *     Q8_1 follows llama.cpp's activation quantizer: Q8_0's values plus s = fp16(d * sum(q)) with d the
 *     unrounded float32 scale.
 *   Non-finite inputs are out of contract (clamping keeps the C free of undefined conversions).
 *
 * Dot products pair as llama.cpp does: Q4_0/Q5_0/Q8_0 with Q8_0, Q4_1/Q5_1 with Q8_1, floats with their
 * own type. Per block: sumi = int32 sum of q_x * q_y, then sumf += (float)sumi * (d_x * d_y) (+ m_x * s_y
 * for the types with a min). */
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_impl.h"
#include "quant/scalar.h"

/* ---- plain floats ---- */

void f32_to_float(const void *x, float *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof(float)); }
void f32_from_float(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * sizeof(float)); }

/* Sequential float accumulation: the reference order; SIMD variants differ by reassociation only. */
void f32_vec_dot_f32(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

void f16_to_float(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = fp16_to_f32(x[i]);
}

void f16_from_float(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = fp16_from_f32(x[i]);
}

/* Products of halves are exact in float (11 x 11 bits); the sum is accumulated in float. */
void f16_vec_dot_f16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    *s = sum;
}

void bf16_to_float(const void *vx, float *y, int64_t n) {
    const uint16_t *x = vx;
    for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(x[i]);
}

void bf16_from_float(const float *x, void *vy, int64_t n) {
    uint16_t *y = vy;
    for (int64_t i = 0; i < n; i++) y[i] = bf16_from_f32(x[i]);
}

/* Products of bfloat16s are exact in float (8 x 8 bits); the sum is accumulated in float. */
void bf16_vec_dot_bf16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    *s = sum;
}

/* ---- shared quantizer pieces (gguf-py semantics) ---- */

/* The value of largest magnitude (first one on ties, as numpy's argmax), keeping its sign. */
static float signed_absmax(const float *x, int n) {
    float amax = fabsf(x[0]), max = x[0];
    for (int j = 1; j < n; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

/* Among equal values the last one wins: that reproduces which signed zero numpy's min / max return when
 * +0 and -0 tie (m = fp16(min) keeps the sign of zero, so the bytes would differ). */
static void min_max(const float *x, int n, float *mn, float *mx) {
    *mn = *mx = x[0];
    for (int j = 1; j < n; j++) {
        if (x[j] <= *mn) *mn = x[j];
        if (x[j] >= *mx) *mx = x[j];
    }
}

/* trunc(v) as uint8 clipped to [0, hi], as gguf-py's `np.trunc(v).astype(np.uint8).clip(0, hi)` for the
 * v in [0, hi + 1.5) that finite inputs produce; clamping first keeps the conversion defined. */
static uint8_t trunc_clip(float v, int hi) {
    if (!(v > 0.0f)) return 0;
    if (v >= (float)hi) return (uint8_t)hi;
    return (uint8_t)(int)v;
}

/* 1/d, or 0 when d == 0 (gguf-py's np.where(d == 0, 0, 1 / d)). */
static float inv_or_zero(float d) { return d == 0.0f ? 0.0f : 1.0f / d; }

/* ---- Q4_0: x = d * (q - 8) ---- */

void q4_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / QK4_0; i++, y += QK4_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[j] = d * (float)((x[i].qs[j] & 15) - 8);
            y[j + QK4_0 / 2] = d * (float)((x[i].qs[j] >> 4) - 8);
        }
    }
}

/* d = max / -8 (max = signed value of largest magnitude, so it maps to q = 0); q = trunc(x / d + 8.5). */
void q4_0_from_float(const float *x, void *vy, int64_t n) {
    block_q4_0 *y = vy;
    for (int64_t i = 0; i < n / QK4_0; i++, x += QK4_0) {
        const float d = signed_absmax(x, QK4_0) / -8.0f;
        const float id = inv_or_zero(d);
        y[i].d = fp16_from_f32(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            const float v0 = x[j] * id, v1 = x[j + QK4_0 / 2] * id;
            const uint8_t q0 = trunc_clip(v0 + 8.5f, 15), q1 = trunc_clip(v1 + 8.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void q4_0_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; i++) {
        int32_t sumi = 0; /* sum over the block of (q_x - 8) * q_y */
        for (int j = 0; j < QK4_0 / 2; j++) {
            sumi += ((x[i].qs[j] & 15) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK4_0 / 2];
        }
        sumf += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    *s = sumf;
}

/* ---- Q4_1: x = d * q + m ---- */

void q4_1_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / QK4_1; i++, y += QK4_1) {
        const float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const float p0 = d * (float)(x[i].qs[j] & 15);
            const float p1 = d * (float)(x[i].qs[j] >> 4);
            y[j] = p0 + m;
            y[j + QK4_1 / 2] = p1 + m;
        }
    }
}

/* d = (max - min) / 15, m = min; q = trunc((x - min) / d + 0.5). */
void q4_1_from_float(const float *x, void *vy, int64_t n) {
    block_q4_1 *y = vy;
    for (int64_t i = 0; i < n / QK4_1; i++, x += QK4_1) {
        float mn, mx;
        min_max(x, QK4_1, &mn, &mx);
        const float d = (mx - mn) / 15.0f;
        const float id = inv_or_zero(d);
        y[i].d = fp16_from_f32(d);
        y[i].m = fp16_from_f32(mn);
        for (int j = 0; j < QK4_1 / 2; j++) {
            const float v0 = (x[j] - mn) * id, v1 = (x[j + QK4_1 / 2] - mn) * id;
            const uint8_t q0 = trunc_clip(v0 + 0.5f, 15), q1 = trunc_clip(v1 + 0.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

/* sum_j (d_x q_x + m_x) (d_y q_y) = (d_x d_y) * sum(q_x q_y) + m_x * (d_y sum(q_y)) = ... + m_x * s_y. */
void q4_1_vec_dot_q8_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK4_1; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            sumi += (x[i].qs[j] & 15) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + QK4_1 / 2];
        }
        const float dd = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        const float ms = fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
        sumf += (float)sumi * dd + ms;
    }
    *s = sumf;
}

/* ---- Q5_0: x = d * (q - 16), bit 4 of value j is bit j of qh (little-endian uint32) ---- */

static uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

static void store_qh(uint8_t qh[4], uint32_t v) {
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(v >> (8 * k));
}

/* The 5-bit value j (0..31) of a Q5 block. */
static int q5_value(const uint8_t *qs, uint32_t qh, int j) {
    const int lo = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
    return lo | (int)((qh >> j) & 1) << 4;
}

void q5_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / QK5_0; i++, y += QK5_0) {
        const float d = fp16_to_f32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_0; j++) y[j] = d * (float)(q5_value(x[i].qs, qh, j) - 16);
    }
}

/* Packs 32 five-bit values: low nibbles of 0..15 and 16..31 share bytes; bit 4 of each goes to qh. */
static void q5_pack(const uint8_t q[32], uint8_t qs[16], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] << 4));
    for (int j = 0; j < 32; j++) h |= (uint32_t)(q[j] >> 4) << j;
    store_qh(qh, h);
}

/* d = max / -16; q = trunc(x / d + 16.5). */
void q5_0_from_float(const float *x, void *vy, int64_t n) {
    block_q5_0 *y = vy;
    for (int64_t i = 0; i < n / QK5_0; i++, x += QK5_0) {
        const float d = signed_absmax(x, QK5_0) / -16.0f;
        const float id = inv_or_zero(d);
        uint8_t q[QK5_0];
        for (int j = 0; j < QK5_0; j++) {
            const float v = x[j] * id;
            q[j] = trunc_clip(v + 16.5f, 31);
        }
        y[i].d = fp16_from_f32(d);
        q5_pack(q, y[i].qs, y[i].qh);
    }
}

void q5_0_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK5_0; i++) {
        const uint32_t qh = load_qh(x[i].qh);
        int32_t sumi = 0;
        for (int j = 0; j < QK5_0; j++) sumi += (q5_value(x[i].qs, qh, j) - 16) * y[i].qs[j];
        sumf += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    *s = sumf;
}

/* ---- Q5_1: x = d * q + m ---- */

void q5_1_to_float(const void *vx, float *y, int64_t n) {
    const block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / QK5_1; i++, y += QK5_1) {
        const float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_1; j++) {
            const float p = d * (float)q5_value(x[i].qs, qh, j);
            y[j] = p + m;
        }
    }
}

/* d = (max - min) / 31, m = min; q = trunc((x - min) / d + 0.5). */
void q5_1_from_float(const float *x, void *vy, int64_t n) {
    block_q5_1 *y = vy;
    for (int64_t i = 0; i < n / QK5_1; i++, x += QK5_1) {
        float mn, mx;
        min_max(x, QK5_1, &mn, &mx);
        const float d = (mx - mn) / 31.0f;
        const float id = inv_or_zero(d);
        uint8_t q[QK5_1];
        for (int j = 0; j < QK5_1; j++) {
            const float v = (x[j] - mn) * id;
            q[j] = trunc_clip(v + 0.5f, 31);
        }
        y[i].d = fp16_from_f32(d);
        y[i].m = fp16_from_f32(mn);
        q5_pack(q, y[i].qs, y[i].qh);
    }
}

void q5_1_vec_dot_q8_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK5_1; i++) {
        const uint32_t qh = load_qh(x[i].qh);
        int32_t sumi = 0;
        for (int j = 0; j < QK5_1; j++) sumi += q5_value(x[i].qs, qh, j) * y[i].qs[j];
        const float dd = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        const float ms = fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
        sumf += (float)sumi * dd + ms;
    }
    *s = sumf;
}

/* ---- Q8_0: x = d * q; also the activation format of Q4_0, Q5_0, Q8_0, IQ4_NL ---- */

void q8_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / QK8_0; i++, y += QK8_0) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_0; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

/* roundf (half away from zero) as int8; |v| <= 127 + rounding for finite input, clamped for safety. */
static int8_t round_i8(float v) {
    if (!(v > -127.0f)) return -127;
    if (v >= 127.0f) return 127;
    return (int8_t)roundf(v);
}

/* d = amax / 127; q = roundf(x / d) computed as x * (1 / d). Writes d and q; returns sum(q). */
static int32_t q8_block(const float *x, float *d_out, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = inv_or_zero(d);
    int32_t sum = 0;
    for (int j = 0; j < 32; j++) {
        qs[j] = round_i8(x[j] * id);
        sum += qs[j];
    }
    *d_out = d;
    return sum;
}

void q8_0_from_float(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        float d;
        q8_block(x, &d, y[i].qs);
        y[i].d = fp16_from_f32(d);
    }
}

void q8_0_vec_dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; i++) {
        int32_t sumi = 0;
        for (int j = 0; j < QK8_0; j++) sumi += x[i].qs[j] * y[i].qs[j];
        sumf += (float)sumi * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    *s = sumf;
}

/* ---- Q8_1: Q8_0 plus s = d * sum(q), the activation format of Q4_1 and Q5_1 ---- */

void q8_1_to_float(const void *vx, float *y, int64_t n) {
    const block_q8_1 *x = vx;
    for (int64_t i = 0; i < n / QK8_1; i++, y += QK8_1) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_1; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

/* s uses the float32 d (before rounding to fp16) times the integer sum, then rounds to fp16. */
void q8_1_from_float(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
        float d;
        const int32_t sum = q8_block(x, &d, y[i].qs);
        y[i].d = fp16_from_f32(d);
        y[i].s = fp16_from_f32((float)sum * d);
    }
}

/* ---- u8 forms (quant.h): the legacy blocks are one sub-block of 32 each ---- */

void q4_0_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / QK4_0; i++, u += QK4_0) {
        S[i] = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            u[j] = x[i].qs[j] & 15;
            u[j + QK4_0 / 2] = x[i].qs[j] >> 4;
        }
    }
}

void q4_1_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / QK4_1; i++, u += QK4_1) {
        S[i] = fp16_to_f32(x[i].d);
        M[i] = -fp16_to_f32(x[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            u[j] = x[i].qs[j] & 15;
            u[j + QK4_1 / 2] = x[i].qs[j] >> 4;
        }
    }
}

void q5_0_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / QK5_0; i++, u += QK5_0) {
        S[i] = fp16_to_f32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_0; j++) u[j] = (uint8_t)q5_value(x[i].qs, qh, j);
    }
}

void q5_1_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    const block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / QK5_1; i++, u += QK5_1) {
        S[i] = fp16_to_f32(x[i].d);
        M[i] = -fp16_to_f32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK5_1; j++) u[j] = (uint8_t)q5_value(x[i].qs, qh, j);
    }
}

/* u = q + 128 (the signed quants made unsigned), off = 128 */
void q8_0_to_u8(const void *vx, uint8_t *u, float *S, float *M, int64_t n) {
    (void)M;
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / QK8_0; i++, u += QK8_0) {
        S[i] = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK8_0; j++) u[j] = (uint8_t)(x[i].qs[j] + 128);
    }
}

void quant_register_legacy(quant_table t) {
    t[QT_F32][QUANT_ISA_SCALAR] = (quant_ops){.to_float = f32_to_float, .from_float = f32_from_float, .vec_dot = f32_vec_dot_f32, .vec_dot_type = QT_F32};
    t[QT_F16][QUANT_ISA_SCALAR] = (quant_ops){.to_float = f16_to_float, .from_float = f16_from_float, .vec_dot = f16_vec_dot_f16, .vec_dot_type = QT_F16};
    t[QT_BF16][QUANT_ISA_SCALAR] = (quant_ops){.to_float = bf16_to_float, .from_float = bf16_from_float, .vec_dot = bf16_vec_dot_bf16, .vec_dot_type = QT_BF16};
    t[QT_Q4_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q4_0_to_float, .from_float = q4_0_from_float, .vec_dot = q4_0_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    t[QT_Q4_1][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q4_1_to_float, .from_float = q4_1_from_float, .vec_dot = q4_1_vec_dot_q8_1, .vec_dot_type = QT_Q8_1};
    t[QT_Q5_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q5_0_to_float, .from_float = q5_0_from_float, .vec_dot = q5_0_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    t[QT_Q5_1][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q5_1_to_float, .from_float = q5_1_from_float, .vec_dot = q5_1_vec_dot_q8_1, .vec_dot_type = QT_Q8_1};
    t[QT_Q8_0][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q8_0_to_float, .from_float = q8_0_from_float, .vec_dot = q8_0_vec_dot_q8_0, .vec_dot_type = QT_Q8_0};
    /* Q8_1 is only an activation format: no dot product of its own. */
    t[QT_Q8_1][QUANT_ISA_SCALAR] = (quant_ops){.to_float = q8_1_to_float, .from_float = q8_1_from_float, .vec_dot = NULL, .vec_dot_type = QT_Q8_1};
    /* u8 forms: sub-block = the block */
    t[QT_Q4_0][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q4_0_to_u8, .sb = 32, .off = 8, .umax = 15};
    t[QT_Q4_1][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q4_1_to_u8, .sb = 32, .has_min = true, .umax = 15};
    t[QT_Q5_0][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q5_0_to_u8, .sb = 32, .off = 16, .umax = 31};
    t[QT_Q5_1][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q5_1_to_u8, .sb = 32, .has_min = true, .umax = 31};
    t[QT_Q8_0][QUANT_ISA_SCALAR].u8 = (quant_u8_form){.to_u8 = q8_0_to_u8, .sb = 32, .off = 128, .umax = 255};
}
