/* Backend conformance: every op of the executor interface (backends/backend.h) of one device (the CTest
 * tests/backends/test_backend_conformance.c runs it on "cpu"; `llm170 cuda-check --engine` on "cuda:N"),
 * called through the op table on device buffers, against
 * the references of engine/ops_ref.h or a plain double-precision loop here. Inputs are random, never
 * zero, with odd sizes; the matmuls run every weight type the device accepts (weight_init) and that can
 * be generated here (random blocks, quantized random floats, or for the IQ1_S / IQ2 / IQ3 grids random
 * payload under a fixed block scale; IQ1_M has none). Prints a table: device, op, case, error, tolerance.
 *
 * Tolerances (per op):
 *  - data movement (copy, zero, copy_cols, set_cols, gather_rows, get_rows, add, add_bias, scale, the
 *    expert ids of moe_route): exact; store_rows: the cache type's rounding (f16 2^-11, bf16 2^-8 of the
 *    largest value, q8_0 half a step of amax/127 plus its f16 scale);
 *  - float kernels (norms, rope, activations, gates, attention, conv, delta rule, routing weights,
 *    combine): 1e-5 of the output's largest magnitude (they differ from the references only in summation
 *    order and in exp/log approximations; test_cpu_ops.c pins the CPU's at the same bound);
 *  - matmul / matmul_experts, per output element, an error model of the activations' rounding to the
 *    weight type's vec_dot_type (f32: none; f16: half an ulp, 2^-11 relative; bf16: 2^-8; q8_0 / q8_1
 *    blocks of 32 and q8_K blocks of 256: half a step of amax/127): independent roundings, uniform on
 *    [-delta_i, delta_i], give sigma^2 = sum_i w_i^2 delta_i^2 / 3, and the bound is 6 sigma, plus the
 *    f16 block scale's rounding, correlated within a block (2^-11 of each block's partial dot product),
 *    plus float accumulation (K * 2^-22 * sum_i |w_i x_i|). The reference dequantizes the weights with the
 *    scalar to_float and sums in double.
 * A new op in exec_ops without a case here fails the op count check at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/conformance.h"

#include <stdio.h>

#include "backends/backend.h"
#include "base/rng.h"
#include "quant/quant.h"

/* the suite's own tally (a failed check prints where and why and the suite goes on) */
static int check_passed, check_failed;
#define CHECK(cond) CHECKF(cond, "%s", "")
#define CHECKF(cond, ...)                                                                  \
    do {                                                                                   \
        if (cond) {                                                                        \
            check_passed++;                                                                \
        } else {                                                                           \
            check_failed++;                                                                \
            fprintf(stderr, "conformance.c:%d: CHECK(%s) failed: ", __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
        }                                                                                  \
    } while (0)

static const char *tested_ops[64];
static int n_tested_ops;
static char device_name[32];

static void tested(const char *op) {
    for (int i = 0; i < n_tested_ops; i++)
        if (!strcmp(tested_ops[i], op)) return;
    if (n_tested_ops < 64) tested_ops[n_tested_ops++] = op;
}

static float *randn(rng *r, int64_t n, float s) {
    float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        float v = s * rng_normal(r);
        x[i] = v != 0.0f ? v : s * 0.5f; /* never zero */
    }
    return x;
}

/* device buffers: alloc + upload, download; every buffer is freed at the end of a device's run */
static backend *DEV;
static exec *X;
static void *bufs[4096];
static int n_bufs;

static void *up(const void *h, size_t bytes) {
    void *d = DEV->ops->alloc(DEV, bytes);
    if (!d) abort(); /* a test fixture of a few MB */
    if (h) X->ops->upload(X, d, h, bytes);
    bufs[n_bufs++] = d;
    return d;
}
static float *upf(const float *h, int64_t n) { return up(h, sizeof(float) * (size_t)n); }
static float *down(const void *d, int64_t n) {
    float *h = malloc(sizeof(float) * (size_t)n);
    X->ops->download(X, h, d, sizeof(float) * (size_t)n);
    return h;
}
static void free_bufs(void) {
    for (int i = 0; i < n_bufs; i++) DEV->ops->free(DEV, bufs[i]);
    n_bufs = 0;
}

/* max |got - ref| / max |ref| against tol; prints one table row */
static void expect(const char *op, const char *what, const float *got, const float *ref, int64_t n, double tol) {
    tested(op);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!(d <= num)) num = d; /* NaN propagates */
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    double e = num / (den > 0 ? den : 1);
    printf("| %s | %s | %s | %.2e | %.0e |\n", device_name, op, what, e, tol);
    CHECKF(e <= tol, "%s %s %s: error %.3e > tolerance %.1e", device_name, op, what, e, tol);
}

/* a weight of `type` with ne = {K, N, E}: random blocks (or quantized random floats) */
static bool make_weight(rng *r, enum qtype t, int64_t K, int64_t N, int64_t E, weight *w, void **data, gguf_tensor *gt) {
    const qtype_info *in = qtype_get((uint32_t)t);
    if (!in || K % in->blck) return false;
    const size_t row = qtype_row_bytes(t, K);
    const int64_t nb = K / in->blck * N * E;
    *data = malloc(row * (size_t)(N * E));
    const enum qtype d_first[] = {QT_IQ2_XXS, QT_IQ2_XS, QT_IQ2_S, QT_IQ3_XXS, QT_IQ3_S, QT_IQ1_S};
    bool random_d = false;
    for (size_t i = 0; i < sizeof d_first / sizeof d_first[0]; i++) random_d |= t == d_first[i];
    if (random_d) { /* random payload (grid indices, signs, scales: all valid) under a fixed f16 block scale */
        for (size_t i = 0; i < row * (size_t)(N * E); i++) ((uint8_t *)*data)[i] = (uint8_t)rng_u64(r);
        for (int64_t b = 0; b < nb; b++) memcpy((char *)*data + (size_t)b * in->type_size, &(uint16_t){0x2000}, 2);
    } else if (!quant_random_blocks(t, *data, nb, 0.5f, r)) {
        const quant_ops *q = quant_ops_get(t, QUANT_ISA_SCALAR);
        if (!q || !q->from_float) {
            free(*data);
            return false;
        }
        float *f = randn(r, K, 0.5f);
        for (int64_t i = 0; i < N * E; i++) q->from_float(f, (char *)*data + (size_t)i * row, K);
        free(f);
    }
    *gt = (gguf_tensor){.name = in->name, .type = (uint32_t)t, .n_dims = E > 1 ? 3 : 2, .ne = {K, N, E, 1},
                        .n_elements = K * N * E, .nbytes = row * (size_t)(N * E), .data = *data};
    err e = {0};
    if (DEV->ops->weight_init(DEV, w, gt, &e)) {
        free(*data);
        return false;
    }
    return true;
}

#include "backends/conformance_matmul.h"

/* ---------------------------------------------------------------- the other ops */

static double silu(double v) { return v / (1 + exp(-v)); }
static double sigm(double v) { return 1 / (1 + exp(-v)); }

static void check_elementwise(rng *r) {
    const int T = 7, C = 91, H = 3, D = 30;
    const int64_t n = (int64_t)T * C;
    float *a = randn(r, n, 1), *b = randn(r, n, 1), *ref = malloc(sizeof(float) * (size_t)n);
    float *da = upf(a, n), *db = upf(b, n), *dy = upf(NULL, n), *y;
    /* copy, zero */
    X->ops->copy(X, dy, da, n);
    y = down(dy, n);
    expect("copy", "91 x 7", y, a, n, 0);
    free(y);
    X->ops->zero(X, dy, n);
    y = down(dy, n);
    memset(ref, 0, sizeof(float) * (size_t)n);
    expect("zero", "91 x 7", y, ref, n, 0);
    free(y);
    /* add */
    X->ops->copy(X, dy, da, n);
    X->ops->add(X, dy, db, n);
    y = down(dy, n);
    for (int64_t i = 0; i < n; i++) ref[i] = a[i] + b[i];
    expect("add", "91 x 7", y, ref, n, 0);
    free(y);
    /* scale */
    X->ops->copy(X, dy, da, n);
    X->ops->scale(X, dy, 1.7f, n);
    y = down(dy, n);
    for (int64_t i = 0; i < n; i++) ref[i] = a[i] * 1.7f;
    expect("scale", "x 1.7", y, ref, n, 0);
    free(y);
    /* swiglu, geglu, sigmoid_mul */
    X->ops->swiglu(X, da, db, dy, n);
    y = down(dy, n);
    for (int64_t i = 0; i < n; i++) ref[i] = (float)(silu(a[i]) * b[i]);
    expect("swiglu", "91 x 7", y, ref, n, 1e-5);
    free(y);
    X->ops->geglu(X, da, db, dy, n);
    y = down(dy, n);
    ref_geglu(a, b, ref, n);
    expect("geglu", "91 x 7", y, ref, n, 1e-5);
    free(y);
    X->ops->copy(X, dy, da, n);
    X->ops->sigmoid_mul(X, dy, db, n);
    y = down(dy, n);
    for (int64_t i = 0; i < n; i++) ref[i] = (float)(a[i] * sigm(b[i]));
    expect("sigmoid_mul", "91 x 7", y, ref, n, 1e-5);
    free(y);
    /* rms_norm with and without a weight, per head */
    weight wn, wh;
    void *dn, *dh;
    gguf_tensor gn, gh;
    CHECK(make_weight(r, QT_F32, C, 1, 1, &wn, &dn, &gn) && make_weight(r, QT_F32, D, 1, 1, &wh, &dh, &gh));
    X->ops->rms_norm(X, da, &wn, dy, T, C, 1e-6f);
    y = down(dy, n);
    ref_rms_norm(a, dn, ref, T, C, 1e-6f);
    expect("rms_norm", "91 x 7, weighted", y, ref, n, 1e-5);
    free(y);
    X->ops->rms_norm(X, da, NULL, dy, T, C, 1e-6f);
    y = down(dy, n);
    ref_rms_norm(a, NULL, ref, T, C, 1e-6f);
    expect("rms_norm", "91 x 7, no weight", y, ref, n, 1e-5);
    free(y);
    const int64_t nh = (int64_t)T * H * D;
    X->ops->copy(X, dy, da, nh);
    X->ops->rms_norm_heads(X, dy, &wh, T, H, D, 1e-6f);
    y = down(dy, nh);
    ref_rms_norm(a, dh, ref, T * H, D, 1e-6f);
    expect("rms_norm_heads", "7 x 3 heads of 30", y, ref, nh, 1e-5);
    free(y);
    /* l2_norm */
    X->ops->copy(X, dy, da, nh);
    X->ops->l2_norm(X, dy, T, H, D, 1e-6f, 0.5f);
    y = down(dy, nh);
    memcpy(ref, a, sizeof(float) * (size_t)nh);
    ref_l2_norm(ref, T, H, D, 1e-6f, 0.5f);
    expect("l2_norm", "7 x 3 heads of 30", y, ref, nh, 1e-5);
    free(y);
    /* add_bias */
    X->ops->copy(X, dy, da, n);
    X->ops->add_bias(X, dy, &wn, T, C);
    y = down(dy, n);
    memcpy(ref, a, sizeof(float) * (size_t)n);
    ref_add_bias(ref, dn, T, C);
    expect("add_bias", "91 x 7", y, ref, n, 0);
    free(y);
    {   /* add_bias on three buffers one after the other in a small pass, then twice more on the third: each
         * in order, whatever an executor defers or joins (the biases after matmuls: check_matmul_bias) */
        weight wh2;
        void *dh2;
        gguf_tensor gh2;
        CHECK(make_weight(r, QT_F32, D, 1, 1, &wh2, &dh2, &gh2));
        const int64_t nd = (int64_t)T * D;
        float *d2 = upf(b, nd), *d3 = upf(a + 5, nd); /* before the pass: a GPU may capture a small pass into a
                                                       * graph, where allocating is not allowed */
        pass_span ps = {T, 1};
        X->ops->begin_pass(X, &ps, 1);
        X->ops->copy(X, dy, da, n);
        X->ops->add_bias(X, dy, &wn, T, C);
        X->ops->add_bias(X, d2, &wh, T, D);
        X->ops->add_bias(X, d3, &wh2, T, D);
        X->ops->add_bias(X, d3, &wh2, T, D);
        X->ops->add_bias(X, d3, &wh2, T, D); /* all wh2: a bias taken from a neighbour does not cancel out */
        float *y1 = down(dy, n), *y2 = down(d2, nd), *y3 = down(d3, nd);
        float *r2 = malloc(sizeof(float) * (size_t)nd), *r3 = malloc(sizeof(float) * (size_t)nd);
        memcpy(ref, a, sizeof(float) * (size_t)n);
        ref_add_bias(ref, dn, T, C);
        memcpy(r2, b, sizeof(float) * (size_t)nd);
        ref_add_bias(r2, dh, T, D);
        memcpy(r3, a + 5, sizeof(float) * (size_t)nd);
        ref_add_bias(r3, dh2, T, D);
        ref_add_bias(r3, dh2, T, D);
        ref_add_bias(r3, dh2, T, D);
        expect("add_bias", "91 x 7, 30 x 7, another 30 x 7 in a row: the first", y1, ref, n, 0);
        expect("add_bias", "91 x 7, 30 x 7, another 30 x 7 in a row: the second", y2, r2, nd, 0);
        expect("add_bias", "91 x 7, 30 x 7, another 30 x 7 in a row, then twice more: the third", y3, r3, nd, 0);
        free(y1), free(y2), free(y3), free(r2), free(r3), free(dh2);
    }
    /* copy_cols / set_cols / gather_rows */
    X->ops->copy_cols(X, dy, da, T, C, 13, 40);
    y = down(dy, (int64_t)T * 40);
    for (int t = 0; t < T; t++) memcpy(ref + t * 40, a + t * C + 13, sizeof(float) * 40);
    expect("copy_cols", "cols 13..53 of 91", y, ref, (int64_t)T * 40, 0);
    free(y);
    X->ops->copy(X, dy, db, n);
    X->ops->set_cols(X, dy, da, T, C, 50, 41);
    y = down(dy, n);
    memcpy(ref, b, sizeof(float) * (size_t)n);
    for (int t = 0; t < T; t++) memcpy(ref + t * C + 50, a + t * 41, sizeof(float) * 41);
    expect("set_cols", "cols 50..91 of 91", y, ref, n, 0);
    free(y);
    int32_t idx[5] = {6, 0, 3, 3, 1};
    int32_t *didx = up(idx, sizeof idx);
    X->ops->gather_rows(X, dy, da, didx, 5, C);
    y = down(dy, 5 * C);
    for (int i = 0; i < 5; i++) memcpy(ref + i * C, a + idx[i] * C, sizeof(float) * (size_t)C);
    expect("gather_rows", "5 of 7 rows", y, ref, 5 * C, 0);
    free(y);
    /* rope: both pairings, llama3 factors */
    int32_t pos[7] = {0, 5, 6, 7, 100, 2000, 3};
    int32_t *dpos = up(pos, sizeof pos);
    weight wf;
    void *df;
    gguf_tensor gf;
    CHECK(make_weight(r, QT_F32, 12, 1, 1, &wf, &df, &gf));
    for (int i = 0; i < 12; i++) ((float *)df)[i] = 1.0f + fabsf(((float *)df)[i]);
    {   /* bind again: a device that copies weights at weight_init (CUDA) holds the values made above */
        err e = {0};
        CHECK(DEV->ops->weight_init(DEV, &wf, &gf, &e) == 0);
    }
    for (int mode = 0; mode < 2; mode++) {
        rope_params rp = {mode ? ROPE_NEOX : ROPE_NORM, 24, 10000.0f, mode ? 0.5f : 1.0f};
        X->ops->copy(X, dy, da, nh);
        X->ops->rope(X, dy, dpos, T, H, D, &rp, mode ? NULL : &wf);
        y = down(dy, nh);
        memcpy(ref, a, sizeof(float) * (size_t)nh);
        ref_rope(ref, pos, T, H, D, &rp, mode ? NULL : df);
        expect("rope", mode ? "neox, 24 of 30 dims, scale 0.5" : "norm, factors", y, ref, nh, 1e-5);
        free(y);
    }
    /* add_gated_rows */
    X->ops->copy(X, dy, da, n);
    X->ops->add_gated_rows(X, dy, db, da, T, C);
    y = down(dy, n);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++) ref[t * C + i] = (float)(a[t * C + i] + sigm(a[t]) * b[t * C + i]);
    expect("add_gated_rows", "91 x 7", y, ref, n, 1e-5);
    free(y);
    free(a), free(b), free(ref), free(dn), free(dh), free(df);
}

#include "backends/conformance_seq.h"

#include "backends/conformance_gdn.h"

/* the router's reference in double: ids sr (as floats) and weights wr, [T][K] */
static void route_ref(const float *l, int T, int E, int K, int gating, int renorm, float *sr, float *wr) {
    double *p = malloc(sizeof(double) * (size_t)E);
    bool *taken = malloc((size_t)E);
    for (int t = 0; t < T; t++) {
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < E; i++) mx = l[t * E + i] > mx ? l[t * E + i] : mx;
        for (int i = 0; i < E; i++) sum += (p[i] = gating ? sigm(l[t * E + i]) : exp(l[t * E + i] - mx));
        if (!gating)
            for (int i = 0; i < E; i++) p[i] /= sum;
        memset(taken, 0, (size_t)E);
        double tot = 0;
        for (int j = 0; j < K; j++) {
            int best = -1;
            for (int i = 0; i < E; i++)
                if (!taken[i] && (best < 0 || p[i] > p[best])) best = i;
            taken[best] = true;
            sr[t * K + j] = (float)best;
            tot += (wr[t * K + j] = (float)p[best]);
        }
        if (renorm)
            for (int j = 0; j < K; j++) wr[t * K + j] = (float)(wr[t * K + j] / tot);
    }
    free(p), free(taken);
}

/* moe_route over T tokens of E logits (dl on the device, l on the host), top K, every gating: ids exact,
 * weights within 1e-5 */
static void check_route(const float *l, const float *dl, int32_t *dsel, float *dw, int T, int E, int K,
                        const char *shape) {
    float *sr = malloc(sizeof(float) * (size_t)(T * K)), *wr = malloc(sizeof(float) * (size_t)(T * K));
    float *sf = malloc(sizeof(float) * (size_t)(T * K));
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)(T * K));
    for (int gating = 0; gating < 2; gating++)
        for (int renorm = 0; renorm < 2; renorm++) {
            X->ops->moe_route(X, dl, dsel, dw, T, E, K, gating ? MOE_SIGMOID : MOE_SOFTMAX, renorm);
            X->ops->download(X, sel, dsel, sizeof(int32_t) * (size_t)(T * K));
            float *w = down(dw, T * K);
            route_ref(l, T, E, K, gating, renorm, sr, wr);
            for (int i = 0; i < T * K; i++) sf[i] = (float)sel[i];
            char what[80];
            snprintf(what, sizeof what, "%s%s, %s: ids", gating ? "sigmoid" : "softmax", renorm ? " renorm" : "", shape);
            expect("moe_route", what, sf, sr, T * K, 0);
            snprintf(what, sizeof what, "%s%s, %s: weights", gating ? "sigmoid" : "softmax", renorm ? " renorm" : "",
                     shape);
            expect("moe_route", what, w, wr, T * K, 1e-5);
            free(w);
        }
    free(sr), free(wr), free(sf), free(sel);
}

static void check_moe(rng *r) {
    const int T = 9, E = 11, K = 3, C = 17;
    float *l = randn(r, T * E, 2);
    l[0 * E + 4] = l[0 * E + 7] = 9.0f; /* a tie at the top: the lower id first */
    l[1 * E + 2] = l[1 * E + 9] = l[1 * E + 5] = 8.0f;
    float *dl = upf(l, T * E), *dw = upf(NULL, T * K);
    int32_t *dsel = up(NULL, sizeof(int32_t) * T * K);
    check_route(l, dl, dsel, dw, T, E, K, "9 x 11 top 3, ties");
    /* a real router's width (qwen35moe: 256 experts, top 8): several experts per GPU lane */
    {
        const int T2 = 5, E2 = 256, K2 = 8;
        float *l2 = randn(r, T2 * E2, 2);
        l2[3 * E2 + 200] = l2[3 * E2 + 40] = 9.0f; /* a tie at the top, lanes 8 apart */
        float *dl2 = upf(l2, T2 * E2), *dw2 = upf(NULL, T2 * K2);
        int32_t *dsel2 = up(NULL, sizeof(int32_t) * T2 * K2);
        check_route(l2, dl2, dsel2, dw2, T2, E2, K2, "5 x 256 top 8");
        free(l2);
    }
    X->ops->moe_route(X, dl, dsel, dw, T, E, K, MOE_SOFTMAX, 1); /* the routing moe_combine reads below */
    /* moe_combine in ascending expert order */
    int32_t sel[T * K];
    X->ops->download(X, sel, dsel, sizeof sel);
    float *ys = randn(r, T * K * C, 1), *wt = down(dw, T * K), *ref = malloc(sizeof(float) * T * C);
    float *dys = upf(ys, T * K * C), *dy = upf(NULL, T * C);
    X->ops->moe_combine(X, dy, dys, dsel, dw, T, K, C);
    float *y = down(dy, T * C);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++) {
            double s = 0;
            for (int j = 0; j < K; j++) s += (double)wt[t * K + j] * ys[(t * K + j) * C + i];
            ref[t * C + i] = (float)s;
        }
    expect("moe_combine", "9 x 3 rows of 17", y, ref, T * C, 1e-5);
    /* the MoE block's tail in a small pass: combine, the shared expert's gated add into its output, then
     * that output added into a residual (an executor may join the three) */
    {
        const int T4 = 3;
        pass_span ps[3] = {{1, 1}, {1, 1}, {1, 1}};
        float *in = randn(r, T4 * C, 1), *gate = randn(r, T4, 1), *res = randn(r, T4 * C, 1);
        float *din = upf(in, T4 * C), *dgate = upf(gate, T4), *dres = upf(res, T4 * C), *dy4 = upf(NULL, T4 * C);
        X->ops->begin_pass(X, ps, T4);
        X->ops->moe_combine(X, dy4, dys, dsel, dw, T4, K, C);
        X->ops->add_gated_rows(X, dy4, din, dgate, T4, C);
        X->ops->add(X, dres, dy4, T4 * C);
        float *y4 = down(dy4, T4 * C), *r4 = down(dres, T4 * C);
        for (int i = 0; i < T4 * C; i++) {
            ref[i] = (float)((double)ref[i] + sigm(gate[i / C]) * in[i]);
            res[i] = (float)((double)res[i] + ref[i]);
        }
        expect("moe_combine", "3 one-token rows, then add_gated_rows and add: the output", y4, ref, T4 * C, 1e-5);
        expect("moe_combine", "3 one-token rows, then add_gated_rows and add: the residual", r4, res, T4 * C, 1e-5);
        free(in), free(gate), free(res), free(y4), free(r4);
    }
    free(l), free(ys), free(wt), free(ref), free(y);
    /* a model's width (C = 1100: a GPU splits a token's channels over blocks, the last one partial), the
     * same tail in a small pass, over the routing of the first two tokens above */
    {
        const int T5 = 2, C5 = 1100;
        pass_span ps[2] = {{1, 1}, {1, 1}};
        float *ys5 = randn(r, T5 * K * C5, 1), *in = randn(r, T5 * C5, 1), *gate = randn(r, T5, 1);
        float *res = randn(r, T5 * C5, 1), *w5 = down(dw, T5 * K), *ref5 = malloc(sizeof(float) * T5 * C5);
        float *dys5 = upf(ys5, T5 * K * C5), *din = upf(in, T5 * C5), *dgate = upf(gate, T5), *dres = upf(res, T5 * C5);
        float *dy5 = upf(NULL, T5 * C5);
        X->ops->begin_pass(X, ps, T5);
        X->ops->moe_combine(X, dy5, dys5, dsel, dw, T5, K, C5);
        X->ops->add_gated_rows(X, dy5, din, dgate, T5, C5);
        X->ops->add(X, dres, dy5, T5 * C5);
        float *y5 = down(dy5, T5 * C5), *r5 = down(dres, T5 * C5);
        for (int t = 0; t < T5; t++)
            for (int i = 0; i < C5; i++) {
                double acc = 0;
                for (int j = 0; j < K; j++) acc += (double)w5[t * K + j] * ys5[(t * K + j) * C5 + i];
                ref5[t * C5 + i] = (float)(acc + sigm(gate[t]) * in[t * C5 + i]);
                res[t * C5 + i] = (float)((double)res[t * C5 + i] + ref5[t * C5 + i]);
            }
        expect("moe_combine", "2 one-token rows of 1100, then add_gated_rows and add: the output", y5, ref5, T5 * C5, 1e-5);
        expect("moe_combine", "2 one-token rows of 1100, then add_gated_rows and add: the residual", r5, res, T5 * C5, 1e-5);
        free(ys5), free(in), free(gate), free(res), free(w5), free(ref5), free(y5), free(r5);
    }
    /* repeated and negative ids: each id once (its first slot), negative ones never */
    {
        const int T3 = 2, K3 = 5, C3 = 19;
        const int32_t s3[10] = {3, 1, 3, -1, 0, 2, 2, 2, 2, 2};
        float *w3 = randn(r, T3 * K3, 1), *y3s = randn(r, T3 * K3 * C3, 1), ref3[2 * 19];
        int32_t *ds3 = up(s3, sizeof s3);
        float *dw3 = upf(w3, T3 * K3), *dy3s = upf(y3s, T3 * K3 * C3), *dy3 = upf(NULL, T3 * C3);
        X->ops->moe_combine(X, dy3, dy3s, ds3, dw3, T3, K3, C3);
        float *y3 = down(dy3, T3 * C3);
        const int use[2][3] = {{4, 1, 0}, {5, -1, -1}}; /* slots in ascending id order: ids 0, 1, 3; id 2 */
        for (int t = 0; t < T3; t++)
            for (int i = 0; i < C3; i++) {
                double acc = 0;
                for (int q = 0; q < 3; q++)
                    if (use[t][q] >= 0) acc += (double)w3[use[t][q]] * y3s[(size_t)use[t][q] * C3 + i];
                ref3[t * C3 + i] = (float)acc;
            }
        expect("moe_combine", "repeated and negative ids", y3, ref3, T3 * C3, 1e-5);
        free(w3), free(y3s), free(y3);
    }
}

#include "backends/conformance_hc.h"

static void check_device(const char *name) {
    err e = {0};
    snprintf(device_name, sizeof device_name, "%s", name);
    DEV = backend_open(name, 3, false, &e);
    CHECKF(DEV != NULL, "%s: %s", name, e.msg);
    if (!DEV) return;
    /* weights are bound before the plan so the executor sizes for them (as a model's are before its
     * contexts): the widest expert weight of the cases below; the plan holds every case */
    rng r;
    rng_seed(&r, 170);
    weight we;
    void *wed;
    gguf_tensor gte;
    CHECK(make_weight(&r, QT_F32, 768, 37, 3, &we, &wed, &gte));
    free(wed);
    /* the widest row (check_matmul_alone's K = 2088: a GPU sizes its activation scratch by the widest K) */
    CHECK(make_weight(&r, QT_F32, 2088, 6, 1, &we, &wed, &gte));
    free(wed);
    /* and the largest quantized matrix (a GPU sizes its GEMM's dequantized copy by it) */
    CHECK(make_weight(&r, QT_Q4_K, 768, 64, 1, &we, &wed, &gte));
    free(wed);
    exec_plan plan = {.max_tokens = 300, .max_out = 80, .n_ctx = 64, .max_in = 768, .attn_d = 64, .attn_hq = 6,
                      .gdn_dk = 128, .gdn_dv = 128, .gdn_hv = 4, .moe_k = 2, .n_threads = 3,
                      .qsa_keys = 15, .qsa_heads = 6};
    X = DEV->ops->exec_new(DEV, &plan, &e);
    CHECKF(X != NULL, "%s: %s", name, e.msg);
    if (!X) return;
    printf("| device | op | case | error | tolerance |\n|---|---|---|---:|---:|\n");
    /* data movement through upload / download */
    float h[13], back[13];
    for (int i = 0; i < 13; i++) h[i] = (float)i - 6.5f;
    float *d = upf(h, 13);
    X->ops->download(X, back, d, sizeof back);
    expect("upload", "13 floats round trip", back, h, 13, 0);
    expect("download", "13 floats round trip", back, h, 13, 0);
    /* download_start (NULL: download): a copy that the next download completes, here into the device's host
     * memory (CUDA: page-locked, where the copy really runs after the call returns) */
    float *hs = backend_host_alloc(DEV, sizeof(float) * 26);
    CHECKF(hs != NULL, "%s: backend_host_alloc of 104 bytes", name);
    if (hs) {
        float h2[13];
        for (int i = 0; i < 13; i++) h2[i] = 3.0f * (float)i + 0.25f;
        float *d2 = upf(h2, 13);
        (X->ops->download_start ? X->ops->download_start : X->ops->download)(X, hs, d, sizeof h);
        X->ops->download(X, hs + 13, d2, sizeof h2);
        expect("download_start", "13 floats, then a download of 13 more", hs, h, 13, 0);
        expect("download_start", "the download after it", hs + 13, h2, 13, 0);
        backend_host_free(DEV, hs);
    }
    tested("begin_pass"); /* used by every matmul case below */
    tested("destroy");
    check_elementwise(&r);
    check_sequence_ops(&r);
    check_gdn_decode(&r);
    check_moe(&r);
    /* the qwen4exp ops are optional (a model that needs them fails its first pass on a device without) */
    const bool has_hc = X->ops->hc_mix != NULL;
    if (has_hc) {
        check_hc_ops(&r);
        check_ngram_qsa_ops(&r);
    }
    check_matmuls(&r);
    err se = {0};
    CHECKF(exec_status(X, &se) == 0, "%s: the executor recorded a failure: %s", name, se.msg);
    free_bufs();
    exec_free(X);
    backend_free(DEV);
    const int n_ops = (int)(sizeof(exec_ops) / sizeof(void (*)(void))) - (has_hc ? 0 : QWEN4EXP_OPS);
    CHECKF(n_tested_ops == n_ops, "%s: %d of the %d executor ops were tested", name, n_tested_ops, n_ops);
    printf("%s: %d of %d executor ops checked%s\n", name, n_tested_ops, n_ops,
           has_hc ? "" : " (the qwen4exp ops are not offered by this device)");
}

int backend_conformance(const char *device, int *n_checks) {
    n_tested_ops = 0;
    check_passed = check_failed = 0;
    check_device(device);
    if (n_checks) *n_checks = check_passed + check_failed;
    return check_failed;
}
