/* kquants_quantize: our reference quantizers for Q2_K..Q6_K, IQ4_NL and IQ4_XS (gguf-py has none for
 * these types, and ggml's are not ours to copy). They are not byte-compatible with ggml's quantizers; any
 * valid encoding dequantizes the same way everywhere, which is what matters.
 *
 * Method, in two levels:
 *   1. Each sub-block gets a float scale (and for Q2_K/Q4_K/Q5_K a float min) from a small search: a sweep
 *      of candidate scales around "largest value maps to the end level", each followed by a least-squares
 *      refit of scale (and offset) for the levels it assigned and a re-assignment; the candidate of least
 *      squared error wins. This is plain minimum-MSE fitting, unweighted.
 *   2. The sub-block scales are themselves quantized against one fp16 super-block scale (and mins against
 *      fp16 dmin), and every value is finally assigned the nearest level under the *stored* effective
 *      scale (fp16(d) * integer scale), so rounding of the scales is partly compensated.
 * Layouts are documented in kquants.c; the pack helpers below are the inverse of its unpackers. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/fp16.h"
#include "quant/blocks.h"
#include "quant/scalar.h"

/* Candidate scales are end * (1 + SWEEP_STEP * k) for k in [-SWEEP, SWEEP]: +-25% around the
 * "largest magnitude lands on the end level" scale, enough to let an outlier clip or to leave headroom. */
#define SWEEP 10
#define SWEEP_STEP 0.025f

/* Index of the level nearest to v in ascending levels lv[0..nl). */
static int nearest_level(const int8_t *lv, int nl, float v) {
    int lo = 0, hi = nl - 1;
    if (v <= (float)lv[0]) return 0;
    if (v >= (float)lv[nl - 1]) return nl - 1;
    while (hi - lo > 1) { /* invariant: lv[lo] < v < lv[hi] */
        const int mid = (lo + hi) / 2;
        if ((float)lv[mid] <= v) lo = mid; else hi = mid;
    }
    return (v - (float)lv[lo] <= (float)lv[hi] - v) ? lo : hi;
}

/* Levels of the linear symmetric types: Q3_K q in -4..3, Q6_K q in -32..31. */
static const int8_t lv_q3[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
static const int8_t lv_q6[64] = {
    -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17,
    -16, -15, -14, -13, -12, -11, -10, -9,  -8,  -7,  -6,  -5,  -4,  -3,  -2,  -1,
    0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15,
    16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,  28,  29,  30,  31};

/* Squared error of x ~ s * lv[idx] with idx the nearest level to x / s; also returns sum x*l, sum l*l. */
static float sym_assign(const float *x, int n, const int8_t *lv, int nl, float s, float *sxl, float *sll) {
    float err = 0.0f, a = 0.0f, b = 0.0f;
    for (int i = 0; i < n; i++) {
        const float l = (float)lv[nearest_level(lv, nl, x[i] / s)];
        const float e = s * l - x[i];
        err += e * e;
        a += x[i] * l;
        b += l * l;
    }
    *sxl = a;
    *sll = b;
    return err;
}

/* Scale s (either sign) minimizing sum (s * lv[idx_i] - x_i)^2 over the candidates of the sweep; 0 for
 * an all-zero sub-block. */
static float fit_sym(const float *x, int n, const int8_t *lv, int nl) {
    float mx = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > fabsf(mx)) mx = x[i];
    if (mx == 0.0f) return 0.0f;
    float best_s = mx / (float)lv[0], best_err = FLT_MAX;
    const float ends[2] = {(float)lv[0], (float)lv[nl - 1]}; /* mx onto the most negative or positive level */
    for (int e = 0; e < 2; e++) {
        for (int k = -SWEEP; k <= SWEEP; k++) {
            float s = mx / (ends[e] * (1.0f + SWEEP_STEP * (float)k)), sxl, sll;
            float err = sym_assign(x, n, lv, nl, s, &sxl, &sll);
            if (sll > 0.0f && sxl != 0.0f) { /* least-squares scale for these levels, then re-assign */
                const float s2 = sxl / sll;
                float sxl2, sll2;
                const float err2 = sym_assign(x, n, lv, nl, s2, &sxl2, &sll2);
                if (err2 < err) {
                    err = err2;
                    s = s2;
                }
            }
            if (err < best_err) {
                best_err = err;
                best_s = s;
            }
        }
    }
    return best_s;
}

/* Squared error of x ~ s * q + lo with q = clamp(round((x - lo) / s), 0, nmax); accumulates the sums a
 * least-squares refit needs: sum q, sum q^2, sum x, sum q x. */
static float asym_assign(const float *x, int n, int nmax, float s, float lo, float sums[4]) {
    float err = 0.0f;
    sums[0] = sums[1] = sums[2] = sums[3] = 0.0f;
    for (int i = 0; i < n; i++) {
        float q = roundf((x[i] - lo) / s);
        q = q < 0.0f ? 0.0f : q > (float)nmax ? (float)nmax : q;
        const float e = s * q + lo - x[i];
        err += e * e;
        sums[0] += q;
        sums[1] += q * q;
        sums[2] += x[i];
        sums[3] += q * x[i];
    }
    return err;
}

/* Scale s >= 0 and min m >= 0 with x ~ s * q - m, q in 0..nmax, of least squared error over the sweep.
 * m >= 0 is the format's constraint (the offset is always subtracted), so the offset lo = -m is <= 0. */
static void fit_asym(const float *x, int n, int nmax, float *s_out, float *m_out) {
    float mn = 0.0f, mx = x[0];
    for (int i = 0; i < n; i++) {
        if (x[i] < mn) mn = x[i];
        if (x[i] > mx) mx = x[i];
    }
    if (!(mx > mn)) { /* every value equals mn <= 0: the min alone represents it */
        *s_out = 0.0f;
        *m_out = -mn;
        return;
    }
    float best_s = (mx - mn) / (float)nmax, best_lo = mn, best_err = FLT_MAX;
    for (int k = -SWEEP; k <= SWEEP; k++) {
        float s = (mx - mn) / ((float)nmax * (1.0f + SWEEP_STEP * (float)k)), lo = mn, sums[4];
        float err = asym_assign(x, n, nmax, s, lo, sums);
        /* least squares for (s, lo) given q: the 2x2 normal equations; lo clamped to <= 0 */
        const float det = (float)n * sums[1] - sums[0] * sums[0];
        if (det > 0.0f) {
            float s2 = ((float)n * sums[3] - sums[0] * sums[2]) / det;
            float lo2 = (sums[2] - s2 * sums[0]) / (float)n;
            if (lo2 > 0.0f) {
                lo2 = 0.0f;
                s2 = sums[3] / sums[1];
            }
            if (s2 > 0.0f) {
                float sums2[4];
                const float err2 = asym_assign(x, n, nmax, s2, lo2, sums2);
                if (err2 < err) {
                    err = err2;
                    s = s2;
                    lo = lo2;
                }
            }
        }
        if (err < best_err) {
            best_err = err;
            best_s = s;
            best_lo = lo;
        }
    }
    *s_out = best_s;
    *m_out = -best_lo;
}

/* Integer scales of float sub-block scales s[0..ns): d = (signed largest) / end, sc = clamp(round(s / d)).
 * Returns the fp16 d; sc written to out. end is the level the largest maps to (e.g. -32 for 6-bit signed
 * scales, 63 for 6-bit unsigned ones). */
static uint16_t quantize_scales(const float *s, int ns, float end, int lo, int hi, int *out) {
    float mx = 0.0f;
    for (int j = 0; j < ns; j++)
        if (fabsf(s[j]) > fabsf(mx)) mx = s[j];
    const float d = mx / end;
    const uint16_t d16 = fp16_from_f32(d);
    const float dq = fp16_to_f32(d16);
    for (int j = 0; j < ns; j++) {
        int v = dq == 0.0f ? 0 : (int)lrintf(s[j] / dq);
        out[j] = v < lo ? lo : v > hi ? hi : v;
    }
    return d16;
}

/* q in 0..nmax for x ~ dl * q - ml, under the stored scale and min. */
static int asym_final(float x, float dl, float ml, int nmax) {
    if (dl == 0.0f) return 0;
    const float q = roundf((x + ml) / dl);
    return !(q > 0.0f) ? 0 : q > (float)nmax ? nmax : (int)q;
}

/* Level index for x ~ dl * lv[idx]; the level nearest zero when dl == 0. */
static int sym_final(float x, float dl, const int8_t *lv, int nl) {
    return nearest_level(lv, nl, dl == 0.0f ? 0.0f : x / dl);
}

/* ---- Q2_K ---- */

void q2_k_from_float(const float *x, void *vy, int64_t n) {
    block_q2_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float s[16], m[16];
        int sc[16], mi[16];
        for (int j = 0; j < 16; j++) fit_asym(x + 16 * j, 16, 3, &s[j], &m[j]);
        memset(&y[i], 0, sizeof y[i]);
        y[i].d = quantize_scales(s, 16, 15.0f, 0, 15, sc);
        y[i].dmin = quantize_scales(m, 16, 15.0f, 0, 15, mi);
        const float d = fp16_to_f32(y[i].d), dmin = fp16_to_f32(y[i].dmin);
        for (int j = 0; j < 16; j++) {
            y[i].scales[j] = (uint8_t)(sc[j] | mi[j] << 4);
            const float dl = d * (float)sc[j], ml = dmin * (float)mi[j];
            for (int p = 16 * j; p < 16 * j + 16; p++) {
                const int q = asym_final(x[p], dl, ml, 3);
                y[i].qs[32 * (p / 128) + p % 32] |= (uint8_t)(q << (2 * ((p % 128) / 32)));
            }
        }
    }
}

/* ---- Q3_K ---- */

void q3_k_from_float(const float *x, void *vy, int64_t n) {
    block_q3_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float s[16];
        int sc[16];
        for (int j = 0; j < 16; j++) s[j] = fit_sym(x + 16 * j, 16, lv_q3, 8);
        memset(&y[i], 0, sizeof y[i]);
        y[i].d = quantize_scales(s, 16, -32.0f, -32, 31, sc);
        const float d = fp16_to_f32(y[i].d);
        for (int k = 0; k < 16; k++) { /* 6-bit scale + 32: low nibble, then 2 high bits */
            const int u = sc[k] + 32;
            y[i].scales[k % 8] |= (uint8_t)((u & 15) << (4 * (k / 8)));
            y[i].scales[8 + k % 4] |= (uint8_t)((u >> 4) << (2 * (k / 4)));
        }
        for (int j = 0; j < 16; j++) {
            const float dl = d * (float)sc[j];
            for (int p = 16 * j; p < 16 * j + 16; p++) {
                const int u = sym_final(x[p], dl, lv_q3, 8); /* q + 4: low 2 bits, high bit */
                y[i].qs[32 * (p / 128) + p % 32] |= (uint8_t)((u & 3) << (2 * ((p % 128) / 32)));
                y[i].hmask[p % 32] |= (uint8_t)((u >> 2) << (p / 32));
            }
        }
    }
}

/* ---- Q4_K / Q5_K: shared scale search and packing ---- */

/* Fits the 8 sub-blocks of 32 and packs the 6-bit scales and mins; writes the stored effective scale and
 * min of each sub-block to dl, ml. */
static void k4_scales(const float *x, int nmax, uint16_t *d16, uint16_t *dmin16, uint8_t scales[12], float dl[8],
                      float ml[8]) {
    float s[8], m[8];
    int sc[8], mi[8];
    for (int j = 0; j < 8; j++) fit_asym(x + 32 * j, 32, nmax, &s[j], &m[j]);
    *d16 = quantize_scales(s, 8, 63.0f, 0, 63, sc);
    *dmin16 = quantize_scales(m, 8, 63.0f, 0, 63, mi);
    for (int j = 0; j < 4; j++) {
        scales[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        scales[j + 4] = (uint8_t)(mi[j] | (mi[j + 4] >> 4) << 6);
        scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mi[j + 4] & 15) << 4);
    }
    const float d = fp16_to_f32(*d16), dmin = fp16_to_f32(*dmin16);
    for (int j = 0; j < 8; j++) {
        dl[j] = d * (float)sc[j];
        ml[j] = dmin * (float)mi[j];
    }
}

void q4_k_from_float(const float *x, void *vy, int64_t n) {
    block_q4_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float dl[8], ml[8];
        memset(&y[i], 0, sizeof y[i]);
        k4_scales(x, 15, &y[i].d, &y[i].dmin, y[i].scales, dl, ml);
        for (int j = 0; j < 8; j++)
            for (int p = 32 * j; p < 32 * j + 32; p++) {
                const int q = asym_final(x[p], dl[j], ml[j], 15);
                y[i].qs[32 * (j / 2) + p % 32] |= (uint8_t)(q << (4 * (j % 2)));
            }
    }
}

void q5_k_from_float(const float *x, void *vy, int64_t n) {
    block_q5_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float dl[8], ml[8];
        memset(&y[i], 0, sizeof y[i]);
        k4_scales(x, 31, &y[i].d, &y[i].dmin, y[i].scales, dl, ml);
        for (int j = 0; j < 8; j++)
            for (int p = 32 * j; p < 32 * j + 32; p++) {
                const int q = asym_final(x[p], dl[j], ml[j], 31);
                y[i].qs[32 * (j / 2) + p % 32] |= (uint8_t)((q & 15) << (4 * (j % 2)));
                y[i].qh[p % 32] |= (uint8_t)((q >> 4) << j);
            }
    }
}

/* ---- Q6_K ---- */

void q6_k_from_float(const float *x, void *vy, int64_t n) {
    block_q6_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float s[16];
        int sc[16];
        for (int j = 0; j < 16; j++) s[j] = fit_sym(x + 16 * j, 16, lv_q6, 64);
        memset(&y[i], 0, sizeof y[i]);
        y[i].d = quantize_scales(s, 16, -128.0f, -128, 127, sc);
        const float d = fp16_to_f32(y[i].d);
        for (int j = 0; j < 16; j++) {
            y[i].scales[j] = (int8_t)sc[j];
            const float dl = d * (float)sc[j];
            for (int p = 16 * j; p < 16 * j + 16; p++) {
                const int u = sym_final(x[p], dl, lv_q6, 64); /* q + 32, 6 bits */
                const int h = p / 128, r = p % 128;
                y[i].ql[64 * h + r % 64] |= (uint8_t)((u & 15) << (4 * (r / 64)));
                y[i].qh[32 * h + r % 32] |= (uint8_t)((u >> 4) << (2 * (r / 32)));
            }
        }
    }
}

/* ---- IQ4_NL / IQ4_XS ---- */

void iq4_nl_from_float(const float *x, void *vy, int64_t n) {
    block_iq4_nl *y = vy;
    for (int64_t i = 0; i < n / QK4_NL; i++, x += QK4_NL) {
        y[i].d = fp16_from_f32(fit_sym(x, QK4_NL, quant_kvalues_iq4nl, 16));
        const float d = fp16_to_f32(y[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            const int a = sym_final(x[j], d, quant_kvalues_iq4nl, 16);
            const int b = sym_final(x[j + QK4_NL / 2], d, quant_kvalues_iq4nl, 16);
            y[i].qs[j] = (uint8_t)(a | b << 4);
        }
    }
}

void iq4_xs_from_float(const float *x, void *vy, int64_t n) {
    block_iq4_xs *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float s[8];
        int sc[8];
        for (int j = 0; j < 8; j++) s[j] = fit_sym(x + 32 * j, 32, quant_kvalues_iq4nl, 16);
        memset(&y[i], 0, sizeof y[i]);
        y[i].d = quantize_scales(s, 8, -32.0f, -32, 31, sc);
        const float d = fp16_to_f32(y[i].d);
        for (int j = 0; j < 8; j++) {
            const int u = sc[j] + 32;
            y[i].scales_l[j / 2] |= (uint8_t)((u & 15) << (4 * (j % 2)));
            y[i].scales_h |= (uint16_t)((u >> 4) << (2 * j));
            const float dl = d * (float)sc[j];
            for (int p = 32 * j; p < 32 * j + 32; p++) {
                const int r = p % 32;
                const int idx = sym_final(x[p], dl, quant_kvalues_iq4nl, 16);
                y[i].qs[16 * j + r % 16] |= (uint8_t)(idx << (4 * (r / 16)));
            }
        }
    }
}
