/* mmq_unit: the float arithmetic of one 32-value unit in the integer expert GEMM (kernels/mmq.cu), shared by
 * the kernel and the host (tests/cuda/cuda_mmq_unit_test.c, check_prefill_mmq.c), so that the host model
 * gives the kernel's bits and the test proves the unpacking of every type's scales and mins on the CPU.
 *
 * Weights: the GEMV layout (gemv_unpack.h): a unit's value v is w_v = a * q_v + b, q_v a signed int8 (Q6_K:
 * w_v = (a * sc_h) * q_v with the 16-value half's integer scale sc_h, h = v / 16; b = 0 except Q4_1, Q4_K,
 * Q5_K). a * q_v + b in float is the CPU's to_float bit for bit (tests/cuda/cuda_repack_test.c).
 * Activations: q8_1 units (kernels/quantize.cu): x_v ~ d * x8_v, x8_v in [-127, 127], S = fl(d * sum_v x8_v).
 *
 * The kernel's term of one (weight row, activation row, unit), from the exact integer sums of the tensor core:
 *     I   = sum_v q_v x8_v                   (Q6_K: sc0 * sum_{v<16} + sc1 * sum_{v>=16})
 *     acc = fma(a, fl(d * I), acc)
 *     acc = fma(b, S, acc)                    (types with a min only)
 * and an output is acc over the row's units in order, from 0. I is exact in float: |I| <= 32 * 128 * 127
 * < 2^22 for the one-sum types; for Q6_K each half-sum is < 16 * 32 * 127 = 65024, sc0 * lo < 2^23 and
 * |I| < 2^24, so fma(sc1, hi, sc0 * lo) is exact.
 *
 * Error bound of an output against sum_k w_k x_k in double (w_k = to_float, x_k unquantized), U = K / 32:
 *     |y - ref| <= (1/2 + 2^-15) sum_k |w'_k| d_k          (q8_1 rounding: |x - d x8| <= d/2 (1 + 2^-14))
 *               + (2U + 3) 2^-24 sum_k m_k d_k |x8_k|       (the float work, below)
 *               + 2^-24 sum_k |w'_k x_k|                    (to_float's rounding of w' = a q + b)
 * with w'_k = a q_k + b (the exact real; Q6_K: a sc_h q_k), m_k = |a q_k| + |b| (Q6_K: |a sc_h q_k|) and d_k
 * the scale of x_k's unit. The float work: sum_u (a_u d_u I_u + b_u S_u) is sum_k w'_k d_k x8_k exactly but
 * for S's own rounding (2^-24 |b d sum x8|); each unit adds one rounding of d * I and one or two of the
 * accumulator (at most 2U in all), each at most 2^-24 of a value bounded by M = sum_k m_k d_k |x8_k| (to
 * first order; the 3rd of 2U + 3 covers the second, 2U 2^-24 < 2^-17 of it). Derived, not fitted: the check
 * (check_prefill_mmq.c) evaluates it per output. */
#ifndef LLM170_BACKENDS_CUDA_MMQ_UNIT_H
#define LLM170_BACKENDS_CUDA_MMQ_UNIT_H

#include <stdbool.h>

#include "backends/cuda/kernels/gemv_unpack.h"

/* one rounding each, never contracted: the device's intrinsics, the host's fmaf (correctly rounded) */
#ifdef __CUDA_ARCH__
#define MMQ_FMA(a, b, c) __fmaf_rn(a, b, c)
#define MMQ_MUL(a, b) __fmul_rn(a, b)
#else
#include <math.h>
#define MMQ_FMA(a, b, c) fmaf(a, b, c)
#define MMQ_MUL(a, b) ((a) * (b))
#endif

/* whether the type's units have a min term (b != 0) */
GEMV_CX bool mmq_has_min(enum qtype t) { return t == QT_Q4_1 || t == QT_Q4_K || t == QT_Q5_K; }

/* The two per-unit values the kernel keeps in its scale table, p = (a, b), or (sc0, sc1) for Q6_K, whose a is
 * the super-block's (*a6); from the unit's meta (gemv_unit_scale: j is the unit within its meta group) */
GEMV_HD void mmq_unit_scale(enum qtype t, const uint8_t *meta, int j, float *p0, float *p1, float *a6) {
    const gemv_scale s = gemv_unit_scale(t, meta, j);
    if (t == QT_Q6_K) {
        *p0 = (float)s.sc0, *p1 = (float)s.sc1, *a6 = s.a;
    } else {
        *p0 = s.a, *p1 = s.b, *a6 = 0.0f;
    }
}

/* acc plus one unit's term. ilo: the unit's integer sum as a float (Q6_K: its first half's); ihi: Q6_K's
 * second half's (unused otherwise); d, S: the activation unit's q8_1 scale and scaled sum. */
GEMV_HD float mmq_unit_acc(enum qtype t, float acc, float ilo, float ihi, float d, float S, float p0, float p1,
                           float a6) {
    if (t == QT_Q6_K) {
        const float I = MMQ_FMA(p1, ihi, MMQ_MUL(p0, ilo)); /* exact: see the header */
        return MMQ_FMA(a6, MMQ_MUL(d, I), acc);
    }
    acc = MMQ_FMA(p0, MMQ_MUL(d, ilo), acc);
    if (mmq_has_min(t)) acc = MMQ_FMA(p1, S, acc);
    return acc;
}

#endif
