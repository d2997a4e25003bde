/* The int8 matrix products of prefill (quant/gemm.h), on fresh random blocks of every type with a u8 form:
 *  1. to_u8 is exact: S * (u - off) - M, in float, reproduces to_float bit for bit (every ISA's to_u8);
 *  2. every SIMD kernel this CPU runs (AVX-512 VNNI, AVX2: gemm_run_isa) gives the reference kernel's bits,
 *     for partial panels (nrows < 32), token counts that are not a multiple of the register tile, a
 *     token range that starts past 0 and output rows in a shuffled order; and at the extremes of the u8
 *     and activation ranges (every u = 0 or umax, every q = 127 or the most negative the kernel admits),
 *     where a sum that saturates or wraps in int16 shows (the AVX2 kernel's int16 sums);
 *  3. the result is the exact product of the dequantized weights and activations (in double) up to float
 *     rounding: |gemm - exact| <= 5e-7 * sum_k |w_k x_k| (a few ulps of the terms; a wrong scale, offset
 *     or min gives errors of the order of the terms themselves). vec_dot's error is printed beside it
 *     (Q4_1/Q5_1's vec_dot uses Q8_1's fp16-rounded sum, so it is the less exact of the two there);
 *  4. a token's result does not depend on the other tokens of the batch (same bits alone and in a batch). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "check.h"
#include "quant/gemm.h"


static void check_to_u8(enum qtype t, rng *r) {
    const qtype_info *in = qtype_get((uint32_t)t);
    const quant_ops *s = quant_ops_get(t, QUANT_ISA_SCALAR);
    const int64_t n = 1024; /* a multiple of every block size */
    void *w = malloc(qtype_row_bytes(t, n));
    float *ref = malloc(sizeof(float) * (size_t)n);
    uint8_t *u = malloc((size_t)n);
    float *S = malloc(sizeof(float) * (size_t)n), *M = malloc(sizeof(float) * (size_t)n);
    CHECK(quant_random_blocks(t, w, n / in->blck, 0.05f, r));
    s->to_float(w, ref, n);
    for (int isa = 0; isa < QUANT_ISA_COUNT; isa++) {
        const quant_ops *o = quant_ops_get(t, (enum quant_isa)isa);
        if (!o || !o->u8.to_u8) continue;
        for (int64_t i = 0; i < n / s->u8.sb; i++) M[i] = 0.0f;
        o->u8.to_u8(w, u, S, M, n);
        int bad = 0, over = 0;
        for (int64_t k = 0; k < n; k++) over += u[k] > s->u8.umax;
        CHECKF(over == 0, "%s %s: %d values of u above umax %d", in->name, quant_isa_name((enum quant_isa)isa), over,
               s->u8.umax);
        for (int64_t k = 0; k < n; k++) {
            const int64_t j = k / s->u8.sb;
            const float prod = S[j] * (float)((int)u[k] - s->u8.off);
            const float v = prod - M[j];
            if (memcmp(&v, &ref[k], sizeof v) != 0 && bad++ < 3)
                fprintf(stderr, "%s %s to_u8 value %lld: %a vs to_float %a\n", in->name,
                        quant_isa_name((enum quant_isa)isa), (long long)k, v, ref[k]);
        }
        CHECKF(bad == 0, "%s %s: %d values differ from to_float", in->name, quant_isa_name((enum quant_isa)isa), bad);
    }
    free(w), free(ref), free(u), free(S), free(M);
}

/* The ISAs with a SIMD kernel of gemm.h. */
static const enum quant_isa kernel_isas[] = {QUANT_ISA_AVX2, QUANT_ISA_AVX512};
#define N_KERNEL_ISAS (int)(sizeof kernel_isas / sizeof kernel_isas[0])

/* Every SIMD kernel this CPU runs for type t against the reference result yref ([T][ldy], output row
 * rows[i] for token i): tokens [0, t0) and [t0, T) in two calls; nothing stored past nrows. Returns how
 * many kernels ran. */
static int compare_kernels(enum qtype t, const gemm_panel *p, const gemm_acts *a, int T, int t0,
                           const int32_t *rows, const float *yref, int64_t ldy, const char *what) {
    const char *name = qtype_get((uint32_t)t)->name;
    float *y = malloc(sizeof(float) * (size_t)ldy * (size_t)T);
    int ran = 0;
    for (int k = 0; k < N_KERNEL_ISAS; k++) {
        const gemm_run_fn run = gemm_run_isa(kernel_isas[k], t);
        if (!run) continue;
        ran++;
        for (int64_t i = 0; i < ldy * T; i++) y[i] = NAN;
        run(p, a, 0, t0, rows, y, ldy);
        run(p, a, t0, T, rows, y, ldy);
        int bad = 0, spill = 0;
        for (int i = 0; i < T; i++)
            for (int c = 0; c < ldy; c++) {
                const float g = y[i * ldy + c], e = yref[i * ldy + c];
                if (c >= p->nrows) spill += !isnan(g);
                else if (memcmp(&g, &e, sizeof g) != 0 && bad++ < 3)
                    fprintf(stderr, "%s %s %s K=%lld row %d output row %d: simd %a ref %a\n", name,
                            quant_isa_name(kernel_isas[k]), what, (long long)p->K, c, i, g, e);
            }
        CHECKF(bad == 0 && spill == 0, "%s %s %s K=%lld nrows=%d T=%d t0=%d: %d differ from the reference, %d stores "
               "past nrows", name, quant_isa_name(kernel_isas[k]), what, (long long)p->K, p->nrows, T, t0, bad, spill);
    }
    free(y);
    return ran;
}

/* The extremes of the integer sums for type t: a panel with every u = ub and tokens with every q = qa,
 * S, M and the activation scales random. The kernels' int16 pair sums are largest here. */
static void check_extremes(enum qtype t, rng *r) {
    const quant_ops ops = quant_ops_best(t);
    const int64_t K = 512;
    const int sb = ops.u8.sb, ag = gemm_act_group(ops.vec_dot_type, sb), T = 3;
    const int64_t nsb = K / sb, ldy = GEMM_PANEL;
    void *pbuf = aligned_alloc(64, gemm_panel_bytes(K, sb));
    void *abuf = aligned_alloc(64, gemm_acts_bytes(K, sb, ag, T));
    float *yref = malloc(sizeof(float) * (size_t)(ldy * T));
    const int32_t rows[3] = {2, 0, 1};
    gemm_panel p;
    gemm_panel_init(&p, pbuf, K, sb, ops.u8.has_min);
    p.nrows = GEMM_PANEL;
    p.off = ops.u8.off;
    p.umax = ops.u8.umax;
    gemm_acts a;
    gemm_acts_layout(&a, abuf, ops.vec_dot_type, K, sb, T);
    /* the sign trick (off 128) needs q != -128, which the activation quantizers never write */
    const int qmin = ops.u8.umax > 127 ? -127 : -128;
    const int ubs[] = {0, ops.u8.umax}, qas[] = {127, qmin};
    for (int ui = 0; ui < 2; ui++)
        for (int qi = 0; qi < 2; qi++) {
            memset(p.u, ubs[ui], (size_t)K * GEMM_PANEL);
            for (int64_t i = 0; i < nsb * GEMM_PANEL; i++) {
                p.S[i] = rng_uniform(r, 0.5f, 1.5f);
                p.M[i] = ops.u8.has_min ? rng_uniform(r, 0.5f, 1.5f) : 0.0f;
            }
            for (int i = 0; i < T; i++) {
                /* token 1 takes the other sign, so a tile mixes both */
                const int qv = i == 1 ? qas[1 - qi] : qas[qi];
                memset((int8_t *)a.q + (size_t)i * K, qv, (size_t)K);
                for (int64_t j = 0; j < nsb; j++) {
                    ((float *)a.a)[i * (nsb / ag) + j / ag] = rng_uniform(r, 0.5f, 1.5f);
                    ((int32_t *)a.xo)[i * nsb + j] = -ops.u8.off * qv * sb;
                }
                for (int64_t j = 0; j < nsb; j++)
                    ((float *)a.xm)[i * nsb + j] = (float)(qv * sb) * a.a[i * (nsb / ag) + j / ag];
            }
            gemm_run_ref(&p, &a, 0, T, rows, yref, ldy);
            char what[48];
            snprintf(what, sizeof what, "u=%d q=%d", ubs[ui], qas[qi]);
            compare_kernels(t, &p, &a, T, 1, rows, yref, ldy, what);
        }
    free(pbuf), free(abuf), free(yref);
}

/* One weight type: nrows random rows of K values, T tokens. */
static void check_gemm(enum qtype t, int64_t K, int nrows, int T, rng *r) {
    const qtype_info *in = qtype_get((uint32_t)t);
    const quant_ops ops = quant_ops_best(t);
    const quant_ops *act = quant_ops_get(ops.vec_dot_type, QUANT_ISA_SCALAR);
    const size_t wrow = qtype_row_bytes(t, K), xrow = qtype_row_bytes(ops.vec_dot_type, K);
    char *w = malloc(wrow * (size_t)nrows), *xq = malloc(xrow * (size_t)T);
    float *f = malloc(sizeof(float) * (size_t)K), *wf = malloc(sizeof(float) * (size_t)K * nrows);
    float *xf = malloc(sizeof(float) * (size_t)K * T);
    CHECK(quant_random_blocks(t, w, (int64_t)nrows * K / in->blck, 0.05f, r));
    for (int i = 0; i < nrows; i++) ops.to_float(w + (size_t)i * wrow, wf + (size_t)i * K, K);
    for (int i = 0; i < T; i++) {
        for (int64_t k = 0; k < K; k++) f[k] = rng_normal(r);
        act->from_float(f, xq + (size_t)i * xrow, K);
        act->to_float(xq + (size_t)i * xrow, xf + (size_t)i * K, K);
    }
    const int sb = ops.u8.sb, ag = gemm_act_group(ops.vec_dot_type, sb);
    void *pbuf = aligned_alloc(64, gemm_panel_bytes(K, sb));
    void *tmp = malloc(gemm_pack_scratch_bytes(K, sb));
    void *abuf = aligned_alloc(64, gemm_acts_bytes(K, sb, ag, T));
    int32_t *rows = malloc(sizeof(int32_t) * (size_t)T), *perm = malloc(sizeof(int32_t) * (size_t)T);
    for (int i = 0; i < T; i++) rows[i] = i;
    gemm_panel p;
    gemm_panel_init(&p, pbuf, K, sb, ops.u8.has_min);
    gemm_pack(&ops, w, wrow, nrows, &p, tmp);
    gemm_acts a;
    gemm_acts_layout(&a, abuf, ops.vec_dot_type, K, sb, T);
    gemm_acts_fill_rows(&a, ops.vec_dot_type, xq, xrow, rows, 0, T, ops.u8.off);
    const int64_t ldy = GEMM_PANEL + 3;
    float *yref = malloc(sizeof(float) * (size_t)ldy * T);
    for (int64_t i = 0; i < ldy * T; i++) yref[i] = NAN;
    gemm_run_ref(&p, &a, 0, T, rows, yref, ldy);
    int ran = compare_kernels(t, &p, &a, T, T > 1 ? 1 : 0, rows, yref, ldy, "in order");
    /* the same tokens gathered in a shuffled order (entry i is token perm[i], stored at output row perm[i],
     * as the CPU backend gathers bulk rows), in a range starting at an odd token */
    for (int i = 0; i < T; i++) perm[i] = i;
    for (int i = T - 1; i > 0; i--) {
        const int k = (int)(rng_u64(r) % (uint64_t)(i + 1)), v = perm[i];
        perm[i] = perm[k], perm[k] = v;
    }
    gemm_acts ap;
    void *abuf_p = aligned_alloc(64, gemm_acts_bytes(K, sb, ag, T));
    gemm_acts_layout(&ap, abuf_p, ops.vec_dot_type, K, sb, T);
    gemm_acts_fill_rows(&ap, ops.vec_dot_type, xq, xrow, perm, 0, T, ops.u8.off);
    compare_kernels(t, &p, &ap, T, T > 3 ? 3 : T / 2, perm, yref, ldy, "shuffled");
    free(abuf_p);
    /* token 1 alone (a batch of one, at another output row) gives the same bits */
    for (int k = 0; k < N_KERNEL_ISAS && T > 1; k++) {
        const gemm_run_fn run = gemm_run_isa(kernel_isas[k], t);
        if (!run) continue;
        float y1[GEMM_PANEL];
        int32_t row0 = 0, src = 1;
        gemm_acts a1;
        void *abuf1 = aligned_alloc(64, gemm_acts_bytes(K, sb, ag, 1));
        gemm_acts_layout(&a1, abuf1, ops.vec_dot_type, K, sb, 1);
        gemm_acts_fill_rows(&a1, ops.vec_dot_type, xq, xrow, &src, 0, 1, ops.u8.off);
        run(&p, &a1, 0, 1, &row0, y1, GEMM_PANEL);
        CHECKF(memcmp(y1, yref + ldy, sizeof(float) * (size_t)nrows) == 0, "%s %s: token alone differs", in->name,
               quant_isa_name(kernel_isas[k]));
        free(abuf1);
    }
    double worst = 0, worst_vd = 0;
    for (int i = 0; i < T; i++)
        for (int c = 0; c < nrows; c++) {
            float v;
            ops.vec_dot(K, &v, w + (size_t)c * wrow, xq + (size_t)i * xrow);
            double exact = 0, mag = 1e-30;
            for (int64_t k = 0; k < K; k++) {
                const double pr = (double)wf[(size_t)c * K + k] * xf[(size_t)i * K + k];
                exact += pr;
                mag += fabs(pr);
            }
            const double e = fabs((double)yref[i * ldy + c] - exact) / mag, ev = fabs((double)v - exact) / mag;
            if (e > worst) worst = e;
            if (ev > worst_vd) worst_vd = ev;
        }
    CHECKF(worst <= 5e-7, "%s K=%lld: gemm vs exact %.3g of sum|w x| (bound 5e-7)", in->name, (long long)K, worst);
    printf("%-7s K=%-5lld rows=%2d T=%2d: %d simd kernel(s) == ref; error vs exact %.2e of sum|w x| (vec_dot %.2e)\n",
           in->name, (long long)K, nrows, T, ran, worst, worst_vd);
    free(w), free(xq), free(f), free(wf), free(xf), free(pbuf), free(tmp), free(abuf), free(rows), free(perm),
        free(yref);
}

/* A short K for a block size: k256 for the 256-value types, k32 (a multiple of 32 but not of 64 or 128,
 * where possible) for the 32-value ones, k32 rounded up to whole blocks otherwise (Q1_0: 128). */
static int64_t short_k(int64_t blk, int64_t k256, int64_t k32) {
    if (blk == 256) return k256;
    return (k32 + blk - 1) / blk * blk;
}

int main(void) {
    rng r;
    rng_seed(&r, 2024);
    int types = 0;
    for (int t = 0; t < QT_COUNT; t++) {
        const quant_ops *s = quant_ops_get((enum qtype)t, QUANT_ISA_SCALAR);
        if (!s || !s->u8.to_u8) continue;
        types++;
        check_to_u8((enum qtype)t, &r);
        const int64_t blk = qtype_get((uint32_t)t)->blck;
        check_gemm((enum qtype)t, 4 * 256, GEMM_PANEL, 9, &r);
        check_gemm((enum qtype)t, short_k(blk, 256, 96), 13, 5, &r);
        check_gemm((enum qtype)t, 512, 17, 1, &r);
        check_gemm((enum qtype)t, short_k(blk, 256, 64), 8, 2, &r);
        check_gemm((enum qtype)t, short_k(blk, 512, 160), 31, 4, &r);
        check_extremes((enum qtype)t, &r);
        /* where the CPU has the ISA, its kernel takes every type with a u8 form */
        for (int k = 0; k < N_KERNEL_ISAS; k++)
            CHECKF(!quant_isa_available(kernel_isas[k]) || gemm_run_isa(kernel_isas[k], (enum qtype)t),
                   "%s: no %s kernel", qtype_get((uint32_t)t)->name, quant_isa_name(kernel_isas[k]));
    }
    CHECKF(types == 20, "expected 20 types with a u8 form, found %d", types);
    printf("gemm: %d types; kernels:", types);
    for (int k = 0; k < N_KERNEL_ISAS; k++)
        if (gemm_run_isa(kernel_isas[k], QT_Q4_K)) printf(" %s", quant_isa_name(kernel_isas[k]));
    printf("\n");
    return check_report("test_gemm");
}
