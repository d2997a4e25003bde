/* The scalar quant references (src/quant/legacy.c, kquants.c, kquants_quantize.c, random.c) on their own:
 *   1. round trip: quantize N(0, 0.5^2) data, dequantize, RMSE / std below a per-type bound (the bound is
 *      ~1.15x what the reference achieves; the measured value is printed);
 *   2. vec_dot(x, quantize_to_vec_dot_type(y)) equals the double-precision dot of dequant(x) and
 *      dequant(y): |err| <= tol * sum |dequant(x)_i * dequant(y)_i| with tol = 1e-5 (only float
 *      accumulation differs), 2e-3 for the Q8_1 pairs (s = fp16(d * sum q) is rounded twice);
 *   3. quant_random_blocks gives finite values with RMS within [0.7, 1.4] x scale;
 *   4. edge cases: all-zero block -> exact zeros; constant block -> that constant (fp16 precision);
 *      one huge outlier -> the outlier kept to 2% and the rest finite and bounded; one block vs many
 *      blocks -> same bytes for the shared block;
 *   5. hand-made facts: rounding rules of Q8_0 / Q8_K / Q4_0, Q8_K bsums, Q8_1's s, and a hand-packed
 *      Q4_K and Q3_K block dequantized to known values.
 * Bit-exactness against gguf-py is tested by test_quant_gguf_py.c with committed fixtures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fp16.h"
#include "base/rng.h"
#include "check.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant/scalar.h"

typedef struct tcase {
    enum qtype t;
    double rmse_bound; /* RMSE / std of a normal round trip */
    double const_tol;  /* relative error allowed on a constant block */
} tcase;

static const tcase cases[] = {
    {QT_F32, 1e-7, 0},        {QT_F16, 4e-4, 1e-3},    {QT_BF16, 3e-3, 8e-3},  {QT_Q4_0, 0.095, 2e-3},
    {QT_Q4_1, 0.088, 2e-3},   {QT_Q5_0, 0.048, 2e-3},  {QT_Q5_1, 0.043, 2e-3}, {QT_Q8_0, 0.0062, 2e-3},
    {QT_Q8_1, 0.0062, 2e-3},  {QT_Q2_K, 0.31, 2e-3},   {QT_Q3_K, 0.165, 2e-3}, {QT_Q4_K, 0.082, 2e-3},
    {QT_Q5_K, 0.042, 2e-3},   {QT_Q6_K, 0.019, 2e-3},  {QT_Q8_K, 0.0095, 2e-3}, {QT_IQ4_NL, 0.084, 2e-3},
    {QT_IQ4_XS, 0.085, 2e-3},
};

#define NBLK_K 16 /* values per test row: 16 super-blocks = 4096 */
#define N (NBLK_K * QK_K)

static const quant_ops *ops_of(enum qtype t) { return quant_ops_get(t, QUANT_ISA_SCALAR); }
static const char *tname(enum qtype t) { return qtype_get((uint32_t)t)->name; }
static int64_t blck(enum qtype t) { return qtype_get((uint32_t)t)->blck; }

static void *quantize(enum qtype t, const float *x, int64_t n) {
    void *q = calloc(1, qtype_row_bytes(t, n) + 1);
    ops_of(t)->from_float(x, q, n);
    return q;
}

static void roundtrip(enum qtype t, const float *x, float *y, int64_t n) {
    void *q = quantize(t, x, n);
    ops_of(t)->to_float(q, y, n);
    free(q);
}

static double rmse(const float *a, const float *b, int64_t n) {
    double e = 0;
    for (int64_t i = 0; i < n; i++) e += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(e / (double)n);
}

static void test_roundtrip(const tcase *c, const float *x, float std) {
    float *y = malloc(N * sizeof(float));
    roundtrip(c->t, x, y, N);
    const double r = rmse(x, y, N) / std;
    printf("  %-7s rmse/std %.5f (bound %.4f)\n", tname(c->t), r, c->rmse_bound);
    CHECKF(r <= c->rmse_bound, "%s: round-trip rmse/std %.5f > bound %.4f", tname(c->t), r, c->rmse_bound);
    free(y);
}

static void test_vec_dot(const tcase *c, const float *x, const float *yv) {
    const quant_ops *o = ops_of(c->t);
    if (!o->vec_dot) return;
    const enum qtype vt = o->vec_dot_type;
    void *qx = quantize(c->t, x, N), *qy = quantize(vt, yv, N);
    float *dx = malloc(N * sizeof(float)), *dy = malloc(N * sizeof(float));
    o->to_float(qx, dx, N);
    ops_of(vt)->to_float(qy, dy, N);
    double ref = 0, mag = 0;
    for (int i = 0; i < N; i++) {
        ref += (double)dx[i] * dy[i];
        mag += fabs((double)dx[i] * dy[i]);
    }
    float got = NAN;
    o->vec_dot(N, &got, qx, qy);
    const double tol = vt == QT_Q8_1 ? 2e-3 : 1e-5;
    const double err = fabs(got - ref) / mag;
    printf("  %-7s x %-5s vec_dot error %.2e of sum|xy| (tol %.0e)\n", tname(c->t), tname(vt), err, tol);
    CHECKF(err <= tol, "%s x %s: vec_dot %.9g, float dot %.9g: error %.3g of sum|xy| > %.0e", tname(c->t), tname(vt),
           got, ref, err, tol);
    /* one block only (the tail a SIMD variant hands to the scalar code) */
    const int64_t nb = blck(c->t);
    ref = mag = 0;
    for (int64_t i = 0; i < nb; i++) {
        ref += (double)dx[i] * dy[i];
        mag += fabs((double)dx[i] * dy[i]);
    }
    o->vec_dot(nb, &got, qx, qy);
    CHECKF(fabs(got - ref) <= tol * mag, "%s: one-block vec_dot %.9g vs float dot %.9g", tname(c->t), got, ref);
    free(qx), free(qy), free(dx), free(dy);
}

static void test_edges(const tcase *c, rng *r) {
    const int64_t b = blck(c->t) == 1 ? 32 : blck(c->t);
    float x[QK_K], y[QK_K];
    /* all zero */
    memset(x, 0, sizeof x);
    roundtrip(c->t, x, y, b);
    int nz = 0;
    for (int64_t i = 0; i < b; i++) nz += y[i] != 0.0f;
    CHECKF(nz == 0, "%s: all-zero block dequantized to %d non-zero values", tname(c->t), nz);
    /* constant blocks, both signs */
    for (int s = -1; s <= 1; s += 2) {
        const float v = 0.37f * (float)s;
        for (int64_t i = 0; i < b; i++) x[i] = v;
        roundtrip(c->t, x, y, b);
        double worst = 0;
        for (int64_t i = 0; i < b; i++) worst = fmax(worst, fabs(y[i] - v) / fabs(v));
        CHECKF(worst <= c->const_tol, "%s: constant block %g: worst relative error %.3g > %.0e", tname(c->t), v, worst,
               c->const_tol);
    }
    /* one huge outlier among N(0,1) values: the outlier survives, the rest stay finite and bounded */
    for (int64_t i = 0; i < b; i++) x[i] = rng_normal(r);
    x[b / 3] = 1000.0f;
    roundtrip(c->t, x, y, b);
    int finite = 1;
    for (int64_t i = 0; i < b; i++) finite &= isfinite(y[i]) != 0;
    CHECKF(finite, "%s: outlier block dequantized to a non-finite value", tname(c->t));
    CHECKF(fabs(y[b / 3] - 1000.0) <= 20.0, "%s: outlier 1000 came back as %g", tname(c->t), y[b / 3]);
    y[b / 3] = x[b / 3];
    /* IQ4_NL's table has no zero level (the one nearest zero is 1 of -127..113), so beside the outlier
     * every value of its 32 becomes about +-1000/113: its bound is that, not the others' 3. */
    const double rest = rmse(x, y, b), rest_bound = c->t == QT_IQ4_NL ? 10.0 : 3.0;
    CHECKF(rest <= rest_bound, "%s: rmse of the values beside an outlier %.3g > %g (they are N(0,1))", tname(c->t),
           rest, rest_bound);
    /* one block vs many blocks: blocks are independent, the first block's bytes match */
    const int64_t many = 37 * b;
    float *xm = malloc((size_t)many * sizeof(float));
    for (int64_t i = 0; i < many; i++) xm[i] = rng_normal(r) * 3.0f;
    void *q1 = quantize(c->t, xm, b), *qm = quantize(c->t, xm, many);
    CHECKF(memcmp(q1, qm, qtype_row_bytes(c->t, b)) == 0, "%s: first block differs between n=%lld and n=%lld",
           tname(c->t), (long long)b, (long long)many);
    float *ym = malloc((size_t)many * sizeof(float));
    ops_of(c->t)->to_float(qm, ym, many);
    const double rm = rmse(xm, ym, many) / 3.0;
    CHECKF(rm <= c->rmse_bound * 1.3, "%s: rmse/std over %lld blocks %.4f", tname(c->t), (long long)(many / b), rm);
    free(q1), free(qm), free(xm), free(ym);
}

static void test_random_blocks(rng *r) {
    static const enum qtype types[] = {QT_F32,  QT_F16,  QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0,   QT_Q5_1,  QT_Q8_0,
                                       QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_IQ4_NL, QT_IQ4_XS,
                                       QT_IQ2_XXS, QT_IQ1_S, QT_Q1_0};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const enum qtype t = types[k];
        const int64_t nblocks = N / blck(t);
        void *q = malloc(qtype_row_bytes(t, N));
        float *y = malloc(N * sizeof(float));
        const float scale = 0.02f;
        CHECKF(quant_random_blocks(t, q, nblocks, scale, r), "%s: quant_random_blocks refused", tname(t));
        ops_of(t)->to_float(q, y, N);
        int bad = 0;
        double ss = 0;
        for (int i = 0; i < N; i++) {
            bad += !isfinite(y[i]);
            ss += (double)y[i] * y[i];
        }
        const double ratio = sqrt(ss / N) / scale;
        printf("  random %-7s rms/scale %.3f\n", tname(t), ratio);
        CHECKF(bad == 0, "%s: %d random values not finite", tname(t), bad);
        CHECKF(ratio >= 0.7 && ratio <= 1.4, "%s: random rms/scale %.3f outside [0.7, 1.4]", tname(t), ratio);
        free(q), free(y);
    }
    char dummy[64];
    CHECK(!quant_random_blocks(QT_Q8_K, dummy, 0, 1.0f, r)); /* activation format: no generator */
    CHECK(!quant_random_blocks(QT_Q4_0, dummy, 1, NAN, r));
}

/* Facts of the activation formats and gguf-py's rounding, on hand-picked values. */
static void test_rounding_facts(void) {
    float x[QK_K];
    /* Q8_0: amax 127 -> d = 1, q = roundf(x): half away from zero */
    memset(x, 0, sizeof x);
    x[0] = 127.0f, x[1] = 2.5f, x[2] = -2.5f, x[3] = 0.5f;
    block_q8_0 b8;
    q8_0_from_float(x, &b8, 32);
    CHECK(fp16_to_f32(b8.d) == 1.0f && b8.qs[1] == 3 && b8.qs[2] == -3 && b8.qs[3] == 1);
    /* Q8_1: s = fp16(d * sum q) = 127 + 3 - 3 + 1 */
    block_q8_1 b81;
    q8_1_from_float(x, &b81, 32);
    CHECK(fp16_to_f32(b81.s) == 128.0f && memcmp(b81.qs, b8.qs, 32) == 0);
    /* Q8_K: max -127 -> iscale 1, nearest with ties to even; d = 1 / iscale; bsums */
    x[0] = -127.0f, x[1] = 2.5f, x[2] = -2.5f, x[3] = 3.5f;
    block_q8_K bk;
    q8_k_from_float(x, &bk, QK_K);
    CHECK(bk.d == 1.0f && bk.qs[0] == -127 && bk.qs[1] == 2 && bk.qs[2] == -2 && bk.qs[3] == 4);
    CHECK(bk.bsums[0] == -127 + 2 - 2 + 4 && bk.bsums[1] == 0);
    memset(x, 0, sizeof x);
    q8_k_from_float(x, &bk, QK_K);
    CHECK(bk.d == 0.0f && bk.qs[7] == 0 && bk.bsums[3] == 0);
    /* Q4_0: max -8 -> d = 1; q = trunc(x + 8.5): 0.5 -> 9, -0.5 -> 8, 7.4 -> 15 */
    x[0] = -8.0f, x[1] = 0.5f, x[2] = -0.5f, x[3] = 7.4f;
    block_q4_0 b4;
    q4_0_from_float(x, &b4, 32);
    CHECK(fp16_to_f32(b4.d) == 1.0f && (b4.qs[0] & 15) == 0 && (b4.qs[1] & 15) == 9 && (b4.qs[2] & 15) == 8 &&
          (b4.qs[3] & 15) == 15);
}

/* Hand-packed blocks with known dequantized values (independent of our packers). */
static void test_handmade_blocks(void) {
    float y[QK_K];
    /* Q4_K: d = 1, dmin = 0.5; sub-block j: scale j + 1, min j (6 bits: j < 4 direct, j >= 4 split); q = p % 16 */
    block_q4_K b;
    memset(&b, 0, sizeof b);
    b.d = fp16_from_f32(1.0f), b.dmin = fp16_from_f32(0.5f);
    for (int j = 0; j < 4; j++) {
        b.scales[j] = (uint8_t)(j + 1);
        b.scales[j + 4] = (uint8_t)j;
        b.scales[j + 8] = (uint8_t)((j + 5) | (j + 4) << 4); /* low nibbles of scale j+4 = j+5, min j+4 */
    }
    for (int p = 0; p < QK_K; p++) b.qs[32 * (p / 64) + p % 32] |= (uint8_t)((p % 16) << (4 * ((p / 32) % 2)));
    q4_k_to_float(&b, y, QK_K);
    int bad = 0;
    for (int p = 0; p < QK_K; p++) bad += y[p] != (float)((p / 32 + 1) * (p % 16)) - 0.5f * (float)(p / 32);
    CHECKF(bad == 0, "hand-made Q4_K block: %d wrong values", bad);
    /* Q3_K: d = 0.25, every scale 33 (-> +1), q from low bits 2 and hmask 0 -> 2 - 4 = -2 */
    block_q3_K b3;
    memset(&b3, 0, sizeof b3);
    b3.d = fp16_from_f32(0.25f);
    for (int k = 0; k < 8; k++) b3.scales[k] = 0x11;     /* low nibble 1 for scales 0..15 */
    for (int k = 8; k < 12; k++) b3.scales[k] = 0xaa;    /* high bits 2 -> 1 | 2 << 4 = 33 */
    memset(b3.qs, 0xaa, sizeof b3.qs);                     /* every 2-bit field = 2 */
    q3_k_to_float(&b3, y, QK_K);
    bad = 0;
    for (int p = 0; p < QK_K; p++) bad += y[p] != 0.25f * -2.0f;
    CHECKF(bad == 0, "hand-made Q3_K block: %d wrong values (first %g)", bad, y[0]);
}

int main(void) {
    rng r;
    rng_seed(&r, 20261130);
    const float std = 0.5f;
    float *x = malloc(N * sizeof(float)), *yv = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) x[i] = rng_normal(&r) * std;
    for (int i = 0; i < N; i++) yv[i] = rng_normal(&r) + 0.2f;

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const tcase *c = &cases[k];
        const quant_ops *o = ops_of(c->t);
        CHECKF(o && o->to_float && o->from_float, "%s: scalar to_float/from_float not registered", tname(c->t));
        if (!o || !o->to_float || !o->from_float) continue;
        test_roundtrip(c, x, std);
        test_vec_dot(c, x, yv);
        test_edges(c, &r);
    }
    test_random_blocks(&r);
    test_rounding_facts();
    test_handmade_blocks();
    free(x), free(yv);
    return check_report("test_quant_scalar");
}
