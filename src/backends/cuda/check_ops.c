/* check_ops: conformance cases of the small decode ops: rms_norm (kernels/norm.cu), the element-wise
 * gates and residual add (kernels/eltwise.cu) and RoPE (kernels/rope.cu), against engine/ops_ref.h.
 *   covers: k_rms_norm k_swiglu k_geglu k_sigmoid_mul k_add k_rope k_spin
 * Error models are stated per case; max_err is the worst |gpu - ref| / bound (tol = 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_decode.h"
#include "base/fp16.h"
#include "backends/cuda/check_util.h"
#include "backends/cuda/kernels.h"

#define U24 0x1p-24

typedef struct norm_bench { const float *x, *w; float *y; int R, C; } norm_bench;
static int norm_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    norm_bench *b = ctx;
    return cuda_rms_norm(b->x, b->w, b->y, b->R, b->C, 1e-6f, s) ? ERR_IO : 0;
}

typedef struct ew_bench { int op; float *g, *u, *y; int64_t n; } ew_bench;
static int ew_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    ew_bench *b = ctx;
    int st = b->op == 0 ? cuda_swiglu(b->g, b->u, b->y, b->n, s)
           : b->op == 1 ? cuda_geglu(b->g, b->u, b->y, b->n, s)
           : b->op == 2 ? cuda_sigmoid_mul(b->y, b->g, b->n, s)
                        : cuda_add(b->y, b->g, b->n, s);
    return st ? ERR_IO : 0;
}

/* rms_norm: both sides sum C squares (GPU in float: relative C 2^-24 on the sum, half of it on the
 * scale; the reference in double) and then 2-3 rounded products: |y - ref| <= (C/2 + 8) 2^-24 |ref|. */
int check_rms_norm(int R, int C, bool weighted, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    size_t n = (size_t)R * C;
    float *x = hmalloc(4 * n, e), *w = hmalloc(4 * (size_t)C, e), *y = hmalloc(4 * n, e), *ref = hmalloc(4 * n, e);
    if (!x || !w || !y || !ref) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)n, 2.0f);
    fill_uniform(&r, w, C, -1.5f, 1.5f);
    float *dx = dpool_up(&dp, x, 4 * n, e), *dw = dpool_up(&dp, w, 4 * (size_t)C, e), *dy = dpool_alloc(&dp, 4 * n, e);
    if (!dx || !dw || !dy || (rc = kcheck(cuda_rms_norm(dx, weighted ? dw : NULL, dy, R, C, 1e-6f, 0), e, "cuda_rms_norm")) ||
        (rc = cu_download(y, dy, 4 * n, e))) {
        rc = rc ? rc : e->code;
        goto done;
    }
    ref_rms_norm(x, weighted ? w : NULL, ref, R, C, 1e-6f);
    tally t;
    tally_init(&t);
    for (size_t i = 0; i < n; i++) tally_note(&t, (int64_t)i, y[i], ref[i], (C / 2.0 + 8) * U24 * fabs(ref[i]) + 1e-30);
    res->max_err = t.worst, res->tol = 1;
    norm_bench nb = {dx, dw, dy, R, C};
    if (bench) rc = bench_fill(res, norm_launch, &nb, 1, 8.0 * n, e);
done:
    dpool_free(&dp);
    free(x), free(w), free(y), free(ref);
    return rc;
}

/* reference element-wise ops in double (the CPU's float references are as rounded as the kernels) */
static double silu_d(double g) { return g / (1 + exp(-g)); }
static double gelu_d(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

/* op: 0 swiglu, 1 geglu, 2 sigmoid_mul, 3 add. Each output is a few float operations on its inputs,
 * with expf/tanhf within 2 ulp: |y - ref| <= 16 2^-24 (|ref| + the magnitude of the parts), the parts being
 * |u| times the gate's largest intermediate (|g|+1 for the gates), or |y| + |x| for the add. */
int check_eltwise(int op, int64_t n, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    float *g = hmalloc(4 * (size_t)n, e), *u = hmalloc(4 * (size_t)n, e), *y = hmalloc(4 * (size_t)n, e);
    if (!g || !u || !y) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, g, n, 3.0f);
    fill_normal(&r, u, n, 1.0f);
    float *dg = dpool_up(&dp, g, 4 * (size_t)n, e), *du = dpool_up(&dp, u, 4 * (size_t)n, e);
    float *dy = dpool_alloc(&dp, 4 * (size_t)n, e);
    if (!dg || !du || !dy) {
        rc = e->code;
        goto done;
    }
    const char *what[] = {"cuda_swiglu", "cuda_geglu", "cuda_sigmoid_mul", "cuda_add"};
    int st = op == 0 ? cuda_swiglu(dg, du, dy, n, 0)
           : op == 1 ? cuda_geglu(dg, du, dy, n, 0)
           : op == 2 ? cuda_sigmoid_mul(du, dg, n, 0) /* u *= sigmoid(g) */
                     : cuda_add(du, dg, n, 0);         /* u += g */
    if ((rc = kcheck(st, e, what[op])) || (rc = cu_download(y, op >= 2 ? du : dy, 4 * (size_t)n, e))) goto done;
    tally t;
    tally_init(&t);
    for (int64_t i = 0; i < n; i++) {
        double gi = g[i], ui = u[i], ref, mag;
        switch (op) {
        case 0: ref = silu_d(gi) * ui, mag = (fabs(gi) + 1) * fabs(ui); break;
        case 1: ref = gelu_d(gi) * ui, mag = (fabs(gi) + 1) * (1 + 0.05 * gi * gi) * fabs(ui); break;
        case 2: ref = ui / (1 + exp(-gi)), mag = fabs(ui); break;
        default: ref = ui + gi, mag = fabs(ui) + fabs(gi); break;
        }
        tally_note(&t, i, y[i], ref, 16 * U24 * (fabs(ref) + mag) + 1e-37);
    }
    res->max_err = t.worst, res->tol = 1;
    ew_bench eb = {op, dg, du, dy, n};
    if (bench) rc = bench_fill(res, ew_launch, &eb, 1, 12.0 * n, e);
done:
    dpool_free(&dp);
    free(g), free(u), free(y);
    return rc;
}

/* The norm and SwiGLU that also write bf16 (the GEMM's input, cuda_rms_norm_bf16 / cuda_swiglu_bf16): their
 * y must be the plain kernel's bit for bit (which check_rms_norm / check_eltwise bound against a double
 * reference), and yb the round-to-nearest-even bf16 of that y, as cuda_f32_to_bf16 makes it: otherwise a
 * GEMM after the fused op would differ from one after the plain op and its conversion. */
int check_bf16_out(int op, int R, int C, uint64_t seed, cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    const size_t n = (size_t)R * C;
    const bool weighted = R > 9;
    float *x = hmalloc(4 * n, e), *u = hmalloc(4 * n, e), *y = hmalloc(4 * n, e), *y0 = hmalloc(4 * n, e);
    uint16_t *yb = hmalloc(2 * n, e);
    if (!x || !u || !y || !y0 || !yb) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)n, 3.0f);
    fill_normal(&r, u, (int64_t)n, 1.0f); /* the up projection; the norm's weight: its first C values */
    float *dx = dpool_up(&dp, x, 4 * n, e), *du = dpool_up(&dp, u, 4 * n, e);
    float *dy = dpool_alloc(&dp, 4 * n, e), *dy0 = dpool_alloc(&dp, 4 * n, e);
    uint16_t *dyb = dpool_alloc(&dp, 2 * n, e);
    if (!dx || !du || !dy || !dy0 || !dyb) {
        rc = e->code;
        goto done;
    }
    if (op == 0) {
        const float *w = weighted ? du : NULL;
        if ((rc = kcheck(cuda_rms_norm_bf16(dx, w, dy, dyb, R, C, 1e-6f, 0), e, "cuda_rms_norm_bf16")) ||
            (rc = kcheck(cuda_rms_norm(dx, w, dy0, R, C, 1e-6f, 0), e, "cuda_rms_norm")))
            goto done;
    } else if ((rc = kcheck(cuda_swiglu_bf16(dx, du, dy, dyb, (int64_t)n, 0), e, "cuda_swiglu_bf16")) ||
               (rc = kcheck(cuda_swiglu(dx, du, dy0, (int64_t)n, 0), e, "cuda_swiglu")))
        goto done;
    if ((rc = cu_download(y, dy, 4 * n, e)) || (rc = cu_download(y0, dy0, 4 * n, e)) ||
        (rc = cu_download(yb, dyb, 2 * n, e)))
        goto done;
    int64_t bad_y = 0, bad_b = 0;
    for (size_t i = 0; i < n; i++) {
        bad_y += memcmp(&y[i], &y0[i], 4) != 0;
        bad_b += yb[i] != bf16_from_f32(y[i]);
    }
    res->max_err = (double)(bad_y + bad_b);
    res->tol = 0;
    snprintf(res->detail, sizeof res->detail, "y: %lld values differ from the plain kernel's; bf16: %lld from bf16(y)",
             (long long)bad_y, (long long)bad_b);
done:
    dpool_free(&dp);
    free(x), free(u), free(y), free(y0), free(yb);
    return rc;
}

/* RoPE against ref_rope. Both form the angle in float: pos * freq_scale * theta^(-2i/n) / factor with a
 * powf, a division and two products (<= 6 ulp of the angle, relative) and sincosf/cosf (<= 2 ulp absolute,
 * after argument reduction), on each side: the rotated pair differs by at most
 *   2 (6 |ang| 2^-24 + 4 2^-24) (|a| + |b|) + 4 2^-24 (|a| + |b|)      per output (passed-through dims: 0) */
int check_rope(int T, int H, int D, int n_rot, enum rope_mode mode, bool factors, int max_pos, uint64_t seed,
               cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    size_t n = (size_t)T * H * D;
    float *x = hmalloc(4 * n, e), *y = hmalloc(4 * n, e), *ref = hmalloc(4 * n, e), *f = hmalloc(4 * (size_t)n_rot, e);
    int32_t *pos = hmalloc(4 * (size_t)T, e);
    if (!x || !y || !ref || !f || !pos) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)n, 1.0f);
    fill_uniform(&r, f, n_rot / 2, 1.0f, 8.0f);
    for (int t = 0; t < T; t++) pos[t] = (int32_t)(rng_u64(&r) % (uint64_t)max_pos);
    rope_params rp = {.mode = mode, .n_rot = n_rot, .theta = 1e6f, .freq_scale = 0.5f};
    float *dx = dpool_up(&dp, x, 4 * n, e), *df = dpool_up(&dp, f, 4 * (size_t)n_rot, e);
    int32_t *dpos = dpool_up(&dp, pos, 4 * (size_t)T, e);
    if (!dx || !df || !dpos) {
        rc = e->code;
        goto done;
    }
    if ((rc = kcheck(cuda_rope(dx, dpos, T, H, D, &rp, factors ? df : NULL, 0), e, "cuda_rope")) ||
        (rc = cu_download(y, dx, 4 * n, e)))
        goto done;
    for (size_t i = 0; i < n; i++) ref[i] = x[i];
    ref_rope(ref, pos, T, H, D, &rp, factors ? f : NULL);
    tally t;
    tally_init(&t);
    int half = n_rot / 2;
    for (int tt = 0; tt < T; tt++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                size_t i = ((size_t)tt * H + h) * D + d;
                double bound = 0;
                if (d < n_rot) {
                    int pi = mode == ROPE_NORM ? d / 2 : d % half; /* the pair and its two inputs */
                    size_t ia = ((size_t)tt * H + h) * D + (mode == ROPE_NORM ? 2 * pi : pi);
                    size_t ib = ia + (mode == ROPE_NORM ? 1 : half);
                    double ang = (double)pos[tt] * 0.5 * pow(1e6, -2.0 * pi / n_rot) / (factors ? f[pi] : 1.0);
                    double ab = fabs(x[ia]) + fabs(x[ib]);
                    bound = 2 * (6 * fabs(ang) * U24 + 4 * U24) * ab + 4 * U24 * ab;
                }
                tally_note(&t, (int64_t)i, y[i], ref[i], bound + 1e-37);
            }
    res->max_err = t.worst, res->tol = 1;
done:
    dpool_free(&dp);
    free(x), free(y), free(ref), free(f), free(pos);
    return rc;
}

/* the op profile's device-side spin (cuda_prof.c): a spin of us microseconds, timed by events around it,
 * lasts at least us and less than us + 20 ms (a launch and two event records). max_err: measured / us
 * outside that range counts as 1e9. */
int check_spin(int us, cuda_check_result *res, err *e) {
    cudaEvent_t a = NULL, b = NULL;
    int rc = 0;
    float ms = 0;
    if (cudaEventCreate(&a) != cudaSuccess || cudaEventCreate(&b) != cudaSuccess) {
        rc = err_set(e, ERR_IO, "cudaEventCreate failed");
        goto done;
    }
    if (cudaEventRecord(a, 0) != cudaSuccess || (rc = kcheck(cuda_spin_us(us, 0), e, "cuda_spin_us")) ||
        cudaEventRecord(b, 0) != cudaSuccess || cudaEventSynchronize(b) != cudaSuccess ||
        cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        rc = rc ? rc : err_set(e, ERR_IO, "timing the spin failed");
        goto done;
    }
    res->max_err = ms * 1000.0 >= us && ms * 1000.0 < us + 20000.0 ? 0 : 1e9;
    res->tol = 0;
    snprintf(res->detail, sizeof res->detail, "spun %.1f us for %d us", ms * 1000.0, us);
done:
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    cudaGetLastError();
    return rc;
}

/* The pair forms (cuda_rope2, cuda_store_rows2, cuda_l2_norm2: one launch for two buffers, the executor's
 * q / k and K / V joins) against one launch per buffer: bit for bit. max_err counts differing values. */
int check_pairs(uint64_t seed, cuda_check_result *res, err *e) {
    enum { T = 3, H1 = 8, H2 = 2, D = 128 };
    const size_t n1 = (size_t)T * H1 * D, n2 = (size_t)T * H2 * D;
    dpool dp = {0};
    int rc = 0;
    int64_t bad = 0;
    float *a = hmalloc(4 * n1, e), *b = hmalloc(4 * n2, e), *ga = hmalloc(4 * n1, e), *gb = hmalloc(4 * n2, e);
    float *wa = hmalloc(4 * n1, e), *wb = hmalloc(4 * n2, e);
    if (!a || !b || !ga || !gb || !wa || !wb) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, a, (int64_t)n1, 2.0f);
    fill_normal(&r, b, (int64_t)n2, 2.0f);
    const int32_t pos[T] = {7, 130, 4095};
    const rope_params rp = {ROPE_NEOX, 64, 1000000.0f, 1.0f};
    int32_t *dpos = dpool_up(&dp, pos, sizeof pos, e);
    float *d1 = dpool_up(&dp, a, 4 * n1, e), *d2 = dpool_up(&dp, b, 4 * n2, e);
    float *s1 = dpool_up(&dp, a, 4 * n1, e), *s2 = dpool_up(&dp, b, 4 * n2, e);
    uint16_t *h1 = dpool_alloc(&dp, 2 * n1, e), *h2 = dpool_alloc(&dp, 2 * n1, e);
    uint16_t *k1 = dpool_alloc(&dp, 2 * n1, e), *k2 = dpool_alloc(&dp, 2 * n1, e);
    if (!dpos || !d1 || !d2 || !s1 || !s2 || !h1 || !h2 || !k1 || !k2) {
        rc = e->code;
        goto done;
    }
    /* rope: pair on (d1, d2), singles on (s1, s2) */
    if ((rc = kcheck(cuda_rope2(d1, H1, d2, H2, dpos, T, D, &rp, NULL, 0), e, "cuda_rope2")) ||
        (rc = kcheck(cuda_rope(s1, dpos, T, H1, D, &rp, NULL, 0), e, "cuda_rope")) ||
        (rc = kcheck(cuda_rope(s2, dpos, T, H2, D, &rp, NULL, 0), e, "cuda_rope")) ||
        (rc = cu_download(ga, d1, 4 * n1, e)) || (rc = cu_download(gb, d2, 4 * n2, e)) ||
        (rc = cu_download(wa, s1, 4 * n1, e)) || (rc = cu_download(wb, s2, 4 * n2, e)))
        goto done;
    for (size_t i = 0; i < n1; i++) bad += memcmp(&ga[i], &wa[i], 4) != 0;
    for (size_t i = 0; i < n2; i++) bad += memcmp(&gb[i], &wb[i], 4) != 0;
    /* l2 norm of the rotated rows, then f16 stores of both as T rows of H1 * D (b's rows padded by a's) */
    if ((rc = kcheck(cuda_l2_norm2(d1, T * H1, d2, T * H2, D, 1e-6f, 0.5f, 0), e, "cuda_l2_norm2")) ||
        (rc = kcheck(cuda_l2_norm(s1, T * H1, D, 1e-6f, 0.5f, 0), e, "cuda_l2_norm")) ||
        (rc = kcheck(cuda_l2_norm(s2, T * H2, D, 1e-6f, 0.5f, 0), e, "cuda_l2_norm")) ||
        (rc = cu_download(ga, d1, 4 * n1, e)) || (rc = cu_download(gb, d2, 4 * n2, e)) ||
        (rc = cu_download(wa, s1, 4 * n1, e)) || (rc = cu_download(wb, s2, 4 * n2, e)))
        goto done;
    for (size_t i = 0; i < n1; i++) bad += memcmp(&ga[i], &wa[i], 4) != 0;
    for (size_t i = 0; i < n2; i++) bad += memcmp(&gb[i], &wb[i], 4) != 0;
    if ((rc = kcheck(cuda_store_rows2(h1, d1, h2, s1, QT_F16, T, (int64_t)H1 * D, 0), e, "cuda_store_rows2")) ||
        (rc = kcheck(cuda_store_rows(k1, QT_F16, d1, T, (int64_t)H1 * D, 0), e, "cuda_store_rows")) ||
        (rc = kcheck(cuda_store_rows(k2, QT_F16, s1, T, (int64_t)H1 * D, 0), e, "cuda_store_rows")))
        goto done;
    uint16_t *hh = hmalloc(2 * n1, e), *kk = hmalloc(2 * n1, e);
    if (!hh || !kk) rc = ERR_NOMEM;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        if ((rc = cu_download(hh, pass ? h2 : h1, 2 * n1, e)) || (rc = cu_download(kk, pass ? k2 : k1, 2 * n1, e))) break;
        for (size_t i = 0; i < n1; i++) bad += hh[i] != kk[i];
    }
    free(hh), free(kk);
    if (rc) goto done;
    /* the MoE's last two ops in one launch: y += sigmoid(gate) * in, then res += y (cuda_add_gated_rows_res),
     * against cuda_add_gated_rows and cuda_add: y and res bit for bit (T rows of H1 * D) */
    float *yA = dpool_up(&dp, a, 4 * n1, e), *yB = dpool_up(&dp, a, 4 * n1, e), *in = dpool_up(&dp, wa, 4 * n1, e);
    float *gate = dpool_up(&dp, b, 4 * T, e), *rA = dpool_up(&dp, ga, 4 * n1, e), *rB = dpool_up(&dp, ga, 4 * n1, e);
    if (!yA || !yB || !in || !gate || !rA || !rB) {
        rc = e->code;
        goto done;
    }
    if ((rc = kcheck(cuda_add_gated_rows_res(yA, in, gate, rA, T, (int64_t)H1 * D, 0), e, "cuda_add_gated_rows_res")) ||
        (rc = kcheck(cuda_add_gated_rows(yB, in, gate, T, (int64_t)H1 * D, 0), e, "cuda_add_gated_rows")) ||
        (rc = kcheck(cuda_add(rB, yB, (int64_t)n1, 0), e, "cuda_add")))
        goto done;
    for (int pass = 0; pass < 2; pass++) {
        if ((rc = cu_download(ga, pass ? rA : yA, 4 * n1, e)) || (rc = cu_download(wa, pass ? rB : yB, 4 * n1, e)))
            goto done;
        for (size_t i = 0; i < n1; i++) bad += memcmp(&ga[i], &wa[i], 4) != 0;
    }
    /* the MoE's combine, gated add and residual add in one launch (cuda_moe_combine_gated) against
     * cuda_moe_combine then cuda_add_gated_rows_res: y and res bit for bit (a repeated expert id included) */
    {
        const int32_t sel[T * 2] = {0, 1, 3, 2, 5, 5};
        float *ysh = hmalloc(8 * n1, e);
        if (!ysh) {
            rc = ERR_NOMEM;
            goto done;
        }
        memcpy(ysh, a, 4 * n1), memcpy(ysh + n1, wa, 4 * n1);
        float *dys = dpool_up(&dp, ysh, 8 * n1, e), *dw = dpool_up(&dp, b + 7, 4 * T * 2, e); /* routing weights */
        int32_t *dsel = dpool_up(&dp, sel, sizeof sel, e);
        float *y1 = dpool_alloc(&dp, 4 * n1, e), *y2 = dpool_alloc(&dp, 4 * n1, e);
        float *r1 = dpool_up(&dp, ga, 4 * n1, e), *r2 = dpool_alloc(&dp, 4 * n1, e);
        free(ysh);
        if (!dys || !dw || !dsel || !y1 || !y2 || !r1 || !r2 ||
            cu_check(cudaMemcpy(r2, r1, 4 * n1, cudaMemcpyDeviceToDevice), e, "cudaMemcpy")) {
            rc = e->code;
            goto done;
        }
        const int C = H1 * D;
        if ((rc = kcheck(cuda_moe_combine_gated(y1, dys, dsel, dw, T, 2, C, in, gate, r1, 0), e,
                         "cuda_moe_combine_gated")) ||
            (rc = kcheck(cuda_moe_combine(y2, dys, dsel, dw, T, 2, C, 0), e, "cuda_moe_combine")) ||
            (rc = kcheck(cuda_add_gated_rows_res(y2, in, gate, r2, T, C, 0), e, "cuda_add_gated_rows_res")))
            goto done;
        for (int pass = 0; pass < 2; pass++) {
            if ((rc = cu_download(ga, pass ? r1 : y1, 4 * n1, e)) || (rc = cu_download(wa, pass ? r2 : y2, 4 * n1, e)))
                goto done;
            for (size_t i = 0; i < n1; i++) bad += memcmp(&ga[i], &wa[i], 4) != 0;
        }
    }
    res->max_err = (double)bad;
    res->tol = 0;
    snprintf(res->detail, sizeof res->detail,
             "rope2, l2_norm2, store_rows2 (f16), add_gated_rows_res, moe_combine_gated vs one launch a buffer: "
             "values off");
done:
    dpool_free(&dp);
    free(a), free(b), free(ga), free(gb), free(wa), free(wb);
    return rc;
}
