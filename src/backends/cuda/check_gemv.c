/* check_gemv: conformance cases of the q8_1 quantizer (kernels/quantize.cu) and the quantized GEMV
 * (kernels/gemv.cu).
 *   covers: k_quantize_q8_1 k_gemv_q k_gemv_mma k_gemv_stream k_gemv_lean k_gemv_pipe (and the routed-experts forms)
 *
 * GEMV error model. The GPU computes, per output, a float sum over the K/32 units of
 *     term_u = a_u * (dx_u * isum_u) + b_u * sx_u
 * where isum is an exact int32 dot of the weight and activation quants. The "exact" reference evaluates
 * the same terms in double from the same integers (the layout decoded on the host by the kernel's own
 * gemv_unpack.h, the activations the GPU quantized, downloaded). Each term has at most 4 float roundings
 * and a sum of m terms in any order at most (m - 1) more, each of at most 2^-24 of the running |sum|, so
 *     |y - exact| <= (2m + 8) 2^-24 sum_u (|a dx isum| + |b sx|),   m = K/32 + 8 (lanes, warps)  [bound 1]
 * Against the f32 product of the dequantized weights with the unquantized x (double accumulation), the
 * activation rounding adds sum_k |w_k| |xhat_k - x_k| (xhat = dx * q, computed exactly), the f16 -> f32
 * weight forms 2^-24 sum |w xhat|, and sx's own rounding 2^-24 sum_u |b sx|:                  [bound 2]
 * Against the CPU's quantized dot product (quant_ops_best vec_dot, activations in the CPU's own
 * vec_dot_type), the CPU's own activation rounding sum |w| |xhat_cpu - x| and its float accumulation
 * (2m + 8) 2^-24 sum |w xhat_cpu| add to bound 2.                                               [bound 3]
 * max_err is the largest |error| / bound over all outputs and all three comparisons (tol = 1); the detail
 * gives each comparison's worst ratio and the quantizer's (which fails the case above 1). The quantizer is checked on the way: every |xhat - x| <= dx/2 (1 +
 * 2^-20), and the plain quantizer reproduces the host reference (same float operations) bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_decode.h"
#include "backends/cuda/check_util.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/kernels/gemv_unpack.h"
#include "backends/cuda/repack.h"
#include "quant/quant.h"

#define U24 0x1p-24

/* every |dx * q - x| <= dx / 2 (1 + 2^-20) (round to nearest of x / dx, and x * (1/d)'s two roundings) */
/* |d q - x| over the half step d / 2 of each value's block (1.00 at most, up to rounding). The kernel's q is
 * round(fl(x * id)) with id = fl(1 / d): |x * id - x / d| <= |x / d| * 2 * 2^-24 <= 127 * 2^-23, so
 * |d q - x| <= d / 2 * (1 + 254 * 2^-23) < d / 2 * (1 + 2^-14). (1 + 2^-20 was too tight: 40 x 4096 values
 * went over it on the H200; 128M normal values on the host reach 1 + 1.7e-5.) */
static double q8_1_worst(const float *x, const int8_t *q, const float *ds, int64_t n) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double dx = ds[2 * (i / 32)], d = fabs(dx * q[i] - x[i]), b = dx / 2 * (1 + 0x1p-14) + 1e-30;
        worst = fmax(worst, d / b);
    }
    return worst;
}

typedef struct gemv_bench {
    cuda_qmat W[16];
    const int8_t *xq;
    const float *ds;
    float *y;
    int T, form;
} gemv_bench;

static int gemv_launch(void *ctx, int i, cudaStream_t s) {
    gemv_bench *b = ctx;
    return cuda_gemv_q(&b->W[i], b->xq, b->ds, b->y, b->T, s) ? ERR_IO : 0;
}

static int gemv_launch_form(void *ctx, int i, cudaStream_t s) {
    gemv_bench *b = ctx;
    return cuda_gemv_q1_form(&b->W[i], 1, b->xq, b->ds, &b->y, NULL, b->form, s) ? ERR_IO : 0;
}

/* the T = 1 forms of cuda_gemv_q1_form, each compared bit for bit (and, with --bench, timed) */
static const int gemv_forms[] = {0, 2, 4, 8, 11, 12, 14, 122, 142};

/* the three references for output (n, t); see the header comment */
typedef struct gemv_refs { double exact, b1, f32, b2, cpu, b3; } gemv_refs;

int check_gemv(enum qtype type, int N, int K, int T, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    const qtype_info *ti = qtype_get(type);
    const quant_ops *ops = quant_ops_get(type, QUANT_ISA_SCALAR);
    quant_ops best = quant_ops_best(type);
    const quant_ops *aops = quant_ops_get(best.vec_dot_type, QUANT_ISA_SCALAR);
    const qtype_info *ati = qtype_get(best.vec_dot_type);
    size_t row_bytes = (size_t)(K / ti->blck) * ti->type_size, arow = (size_t)(K / ati->blck) * ati->type_size;
    size_t nq, nh, nm;
    int rc = cuda_repack_sizes(type, N, K, &nq, &nh, &nm, e);
    if (rc) return rc;
    int U = K / 32, G = gemv_meta_group(type) / 32;
    dpool dp = {0};
    uint8_t *src = hmalloc(row_bytes * (size_t)N, e), *qs = hmalloc(nq, e), *hi = hmalloc(nh, e), *meta = hmalloc(nm, e);
    float *x = hmalloc(sizeof(float) * (size_t)T * K, e), *y = hmalloc(sizeof(float) * (size_t)T * N, e);
    float *w = hmalloc(sizeof(float) * (size_t)K, e), *ds = hmalloc(sizeof(float) * (size_t)T * U * 2, e);
    float *xc = hmalloc(sizeof(float) * (size_t)T * K, e);
    int8_t *xq = hmalloc((size_t)T * K, e);
    uint8_t *xcq = hmalloc(arow * (size_t)T, e);
    int32_t *lanes = hmalloc(sizeof(int32_t) * (size_t)K, e);
    gemv_scale *scl = hmalloc(sizeof(gemv_scale) * (size_t)U, e);
    if (!src || !qs || !hi || !meta || !x || !y || !w || !ds || !xc || !xq || !xcq || !lanes || !scl) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    quant_random_blocks(type, src, (int64_t)N * (K / ti->blck), 0.02f, &r);
    fill_normal(&r, x, (int64_t)T * K, 1.0f);
    if ((rc = cuda_repack(type, src, N, K, qs, hi, meta, e))) goto done;
    gemv_bench b = {.T = T};
    int copies = bench ? bench_copies(nq + nh + nm) : 1;
    for (int c = 0; c < copies; c++) {
        b.W[c] = (cuda_qmat){.type = type, .N = N, .K = K};
        if (!(b.W[c].qs = dpool_up(&dp, qs, nq, e)) || (nh && !(b.W[c].hi = dpool_up(&dp, hi, nh, e))) ||
            !(b.W[c].meta = dpool_up(&dp, meta, nm, e))) {
            rc = e->code;
            goto done;
        }
    }
    float *dx = dpool_up(&dp, x, sizeof(float) * (size_t)T * K, e), *dds = dpool_alloc(&dp, sizeof(float) * (size_t)T * U * 2, e);
    int8_t *dxq = dpool_alloc(&dp, (size_t)T * K, e);
    float *dy = dpool_alloc(&dp, sizeof(float) * (size_t)T * N, e);
    if (!dx || !dds || !dxq || !dy) {
        rc = e->code;
        goto done;
    }
    b.xq = dxq, b.ds = dds, b.y = dy;
    if ((rc = kcheck(cuda_quantize_q8_1(dx, dxq, dds, T, K, 0), e, "cuda_quantize_q8_1")) ||
        (rc = kcheck(cuda_gemv_q(&b.W[0], dxq, dds, dy, T, 0), e, "cuda_gemv_q")) ||
        (rc = cu_download(y, dy, sizeof(float) * (size_t)T * N, e)) ||
        (rc = cu_download(xq, dxq, (size_t)T * K, e)) || (rc = cu_download(ds, dds, sizeof(float) * (size_t)T * U * 2, e)))
        goto done;
    double qworst = q8_1_worst(x, xq, ds, (int64_t)T * K);
    /* the residual form (cuda_gemv_q_res): the same y bit for bit, and res + y rounded once in every res;
     * then the grouped form and the one-row launches (below); res_bad counts every value off */
    int64_t res_bad = 0;
    {
        const size_t ny = (size_t)T * N;
        float *r0 = hmalloc(sizeof(float) * ny, e), *r1 = hmalloc(sizeof(float) * ny, e), *y2 = hmalloc(sizeof(float) * ny, e);
        float *dr = r0 ? (fill_normal(&r, r0, (int64_t)ny, 4.0f), dpool_up(&dp, r0, sizeof(float) * ny, e)) : NULL;
        float *dy2 = dpool_alloc(&dp, sizeof(float) * ny, e);
        const int Tg = T <= 8 ? T : 8; /* the grouped form takes 8 rows at most: the first 8 of a batch */
        if (!r0 || !r1 || !y2 || !dr || !dy2 || (rc = kcheck(cuda_gemv_q_res(&b.W[0], dxq, dds, dy2, dr, T, 0), e,
                                                              "cuda_gemv_q_res")) ||
            (rc = cu_download(r1, dr, sizeof(float) * ny, e)) || (rc = cu_download(y2, dy2, sizeof(float) * ny, e))) {
            free(r0), free(r1), free(y2);
            rc = rc ? rc : ERR_NOMEM;
            goto done;
        }
        for (size_t i = 0; i < ny; i++) {
            const float want = r0[i] + y[i];
            res_bad += memcmp(&y2[i], &y[i], 4) != 0 || memcmp(&r1[i], &want, 4) != 0;
        }
        /* the grouped form (cuda_gemv_q_group): members W, W's first N / 2 + 1 rows and W again, each output
         * bit-identical to the plain launch's rows */
        const int64_t n1 = N / 2 + 1;
        cuda_qmat gw[3] = {b.W[0], b.W[0], b.W[0]};
        gw[1].N = n1;
        float *gy[3] = {dy2, dpool_alloc(&dp, sizeof(float) * ny, e), dpool_alloc(&dp, sizeof(float) * ny, e)};
        for (int m = 0; m < 3 && !rc; m++) {
            if (!gy[m] || (m == 0 && (rc = kcheck(cuda_gemv_q_group(gw, 3, dxq, dds, gy, Tg, 0), e, "cuda_gemv_q_group"))) ||
                (rc = cu_download(y2, gy[m], sizeof(float) * (size_t)Tg * gw[m].N, e))) {
                rc = rc ? rc : e->code;
                break;
            }
            for (int t = 0; t < Tg; t++)
                for (int64_t i = 0; i < gw[m].N; i++)
                    res_bad += memcmp(&y2[(size_t)t * gw[m].N + i], &y[(size_t)t * N + i], 4) != 0;
        }
        /* output biases (cuda_qmat.bias, the executor's q / k / v biases): the group with members 0 and 2
         * biased and member 1 not, then member 0 alone with its bias and a residual: each output bit for bit
         * the plain launch's value + its bias rounded once (cuda_add_bias after it), res + that */
        float *hb = hmalloc(sizeof(float) * 2 * (size_t)N, e);
        float *db = hb ? (fill_normal(&r, hb, 2 * N, 1.0f), dpool_up(&dp, hb, sizeof(float) * 2 * (size_t)N, e)) : NULL;
        cuda_qmat bw[3] = {gw[0], gw[1], gw[2]};
        bw[0].bias = db, bw[2].bias = db ? db + N : NULL;
        if (!hb || !db || (rc = kcheck(cuda_gemv_q_group(bw, 3, dxq, dds, gy, Tg, 0), e, "cuda_gemv_q_group (biases)"))) {
            free(r0), free(r1), free(y2), free(hb);
            rc = rc ? rc : ERR_NOMEM;
            goto done;
        }
        for (int m = 0; m < 3 && !rc; m++) {
            if ((rc = cu_download(y2, gy[m], sizeof(float) * (size_t)Tg * gw[m].N, e))) break;
            for (int t = 0; t < Tg; t++)
                for (int64_t i = 0; i < gw[m].N; i++) {
                    const float p = y[(size_t)t * N + i], want = m == 0 ? p + hb[i] : m == 2 ? p + hb[N + i] : p;
                    res_bad += memcmp(&y2[(size_t)t * gw[m].N + i], &want, 4) != 0;
                }
        }
        if (!rc && !((rc = cu_check(cudaMemcpy(dr, r0, sizeof(float) * ny, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                     (rc = kcheck(cuda_gemv_q_res(&bw[0], dxq, dds, dy2, dr, Tg, 0), e, "cuda_gemv_q_res (bias)")) ||
                     (rc = cu_download(r1, dr, sizeof(float) * ny, e)) || (rc = cu_download(y2, dy2, sizeof(float) * ny, e))))
            for (size_t i = 0; i < (size_t)Tg * N; i++) {
                const float v = y[i] + hb[i % N], want = r0[i] + v;
                res_bad += memcmp(&y2[i], &v, 4) != 0 || memcmp(&r1[i], &want, 4) != 0;
            }
        /* the batch invariant: row t of the T-row launch is bit for bit the one-row launch over row t's
         * activations alone (kernels/gemv.cu: which lane sums which units depends on K only) */
        for (int t = 0; t < T && T > 1 && !rc; t++) {
            if ((rc = kcheck(cuda_gemv_q(&b.W[0], dxq + (size_t)t * K, dds + (size_t)t * U * 2, dy2, 1, 0), e,
                             "cuda_gemv_q (one row)")) ||
                (rc = cu_download(y2, dy2, sizeof(float) * (size_t)N, e)))
                break;
            for (int64_t i = 0; i < N; i++) res_bad += memcmp(&y2[i], &y[(size_t)t * N + i], 4) != 0;
        }
        /* the T = 1 kernels (cuda_gemv_q1_form: k_gemv_q, k_gemv_stream with 2, 4 and 8 rows a group,
         * k_gemv_lean with 1, 2 and 4) over row 0's activations, plain and grouped with member 0's residual:
         * each output bit for bit row 0 of the launch above, and res + y rounded once */
        for (int f = 0; f < (int)(sizeof gemv_forms / sizeof *gemv_forms) && !rc; f++) {
            float *one = dy2;
            if ((rc = kcheck(cuda_gemv_q1_form(&b.W[0], 1, dxq, dds, &one, NULL, gemv_forms[f], 0), e, "cuda_gemv_q1_form")) ||
                (rc = cu_download(y2, dy2, sizeof(float) * (size_t)N, e)))
                break;
            for (int64_t i = 0; i < N; i++) res_bad += memcmp(&y2[i], &y[i], 4) != 0;
            if ((rc = cu_check(cudaMemcpy(dr, r0, sizeof(float) * (size_t)N, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                (rc = kcheck(cuda_gemv_q1_form(gw, 3, dxq, dds, gy, dr, gemv_forms[f], 0), e, "cuda_gemv_q1_form (group)")) ||
                (rc = cu_download(r1, dr, sizeof(float) * (size_t)N, e)))
                break;
            for (int64_t i = 0; i < N; i++) {
                const float want = r0[i] + y[i];
                res_bad += memcmp(&r1[i], &want, 4) != 0;
            }
            for (int m = 0; m < 3 && !rc; m++) {
                if ((rc = cu_download(y2, gy[m], sizeof(float) * (size_t)gw[m].N, e))) break;
                for (int64_t i = 0; i < gw[m].N; i++) res_bad += memcmp(&y2[i], &y[i], 4) != 0;
            }
            /* the same with members 0 and 2 biased: y + bias in their outputs, res + (y + bias) */
            if (rc || (rc = cu_check(cudaMemcpy(dr, r0, sizeof(float) * (size_t)N, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                (rc = kcheck(cuda_gemv_q1_form(bw, 3, dxq, dds, gy, dr, gemv_forms[f], 0), e, "cuda_gemv_q1_form (biases)")) ||
                (rc = cu_download(r1, dr, sizeof(float) * (size_t)N, e)))
                break;
            for (int64_t i = 0; i < N; i++) {
                const float v = y[i] + hb[i], want = r0[i] + v;
                res_bad += memcmp(&r1[i], &want, 4) != 0;
            }
            for (int m = 0; m < 3 && !rc; m++) {
                if ((rc = cu_download(y2, gy[m], sizeof(float) * (size_t)gw[m].N, e))) break;
                for (int64_t i = 0; i < gw[m].N; i++) {
                    const float want = m == 0 ? y[i] + hb[i] : m == 2 ? y[i] + hb[N + i] : y[i];
                    res_bad += memcmp(&y2[i], &want, 4) != 0;
                }
            }
        }
        free(r0), free(r1), free(y2), free(hb);
        if (rc) goto done;
    }
    /* the CPU's activations in its own vec_dot type, and their dequantized values */
    for (int t = 0; t < T; t++) {
        aops->from_float(x + (size_t)t * K, xcq + (size_t)t * arow, K);
        aops->to_float(xcq + (size_t)t * arow, xc + (size_t)t * K, K);
    }
    tally t1, t2, t3;
    tally_init(&t1), tally_init(&t2), tally_init(&t3);
    for (int n = 0; n < N; n++) {
        const uint8_t *row = src + (size_t)n * row_bytes;
        ops->to_float(row, w, K);
        for (int u = 0; u < U; u++) { /* the row's lanes and scales through the kernel's decoder */
            uint32_t q[8], h[2] = {0, 0}, v[8];
            memcpy(q, qs + ((size_t)n * U + u) * gemv_qs_bytes(type), (size_t)gemv_qs_bytes(type));
            if (nh) memcpy(h, hi + ((size_t)n * U + u) * gemv_hi_bytes(type), (size_t)gemv_hi_bytes(type));
            gemv_unpack_unit(type, q, h, v);
            for (int i = 0; i < 32; i++) lanes[u * 32 + i] = (int8_t)(v[i / 4] >> (8 * (i % 4)));
            scl[u] = gemv_unit_scale(type, meta + ((size_t)n * (U / G) + u / G) * gemv_meta_bytes(type), u % G);
        }
        for (int t = 0; t < T; t++) {
            const int8_t *xqt = xq + (size_t)t * K;
            const float *dst = ds + (size_t)t * U * 2, *xt = x + (size_t)t * K, *xct = xc + (size_t)t * K;
            double ex = 0, ab = 0, bab = 0, f32 = 0, qerr = 0, wx = 0, cerr = 0, cwx = 0;
            for (int u = 0; u < U; u++) {
                int64_t lo = 0, hi_ = 0;
                for (int i = 0; i < 16; i++) lo += (int64_t)lanes[u * 32 + i] * xqt[u * 32 + i];
                for (int i = 16; i < 32; i++) hi_ += (int64_t)lanes[u * 32 + i] * xqt[u * 32 + i];
                double isum = (double)(scl[u].sc0 * lo + scl[u].sc1 * hi_);
                double p1 = (double)scl[u].a * ((double)dst[2 * u] * isum), p2 = (double)scl[u].b * dst[2 * u + 1];
                ex += p1 + p2;
                ab += fabs(p1) + fabs(p2);
                bab += fabs(p2);
            }
            for (int k = 0; k < K; k++) {
                double xh = (double)ds[(size_t)t * U * 2 + 2 * (k / 32)] * xqt[k];
                f32 += (double)w[k] * xt[k];
                qerr += fabs((double)w[k]) * fabs(xh - xt[k]);
                wx += fabs((double)w[k] * xh);
                cerr += fabs((double)w[k]) * fabs((double)xct[k] - xt[k]);
                cwx += fabs((double)w[k] * xct[k]);
            }
            float cpu;
            best.vec_dot(K, &cpu, row, xcq + (size_t)t * arow);
            double m = U + 8;
            double b1 = (2 * m + 8) * U24 * ab + 1e-30;
            double b2 = b1 + qerr + U24 * wx + U24 * bab;
            double b3 = b2 + cerr + (2 * m + 8) * U24 * cwx;
            double got = y[(size_t)t * N + n];
            int64_t at = (int64_t)t * N + n;
            tally_note(&t1, at, got, ex, b1);
            tally_note(&t2, at, got, f32, b2);
            tally_note(&t3, at, got, cpu, b3);
        }
    }
    res->tol = 1.0;
    /* the quantizer's rounding reaches its half-step bound by design (ratio ~1.00): it passes or fails the
     * case but is shown in the detail only, so the column shows the GEMV's own margin */
    res->max_err = fmax(fmax(t1.worst, t2.worst), fmax(t3.worst, qworst > 1 || res_bad ? INFINITY : 0));
    snprintf(res->detail, sizeof res->detail, "/bound: exact-int %.2g, f32 %.2g, cpu-%s %.2g; xhat %.2f; res+group+bias+1-row+forms %lld off%s",
             t1.worst, t2.worst, ati->name, t3.worst, qworst, (long long)res_bad,
             t1.worst > 1 ? " (exact-int worst at t*N+n shown first)" : "");
    if (t1.worst > 1)
        fprintf(stderr, "gemv %s: output %lld = %.9g, exact %.9g\n", ti->name, (long long)t1.at, t1.got, t1.want);
    if (bench) {
        double us;
        if ((rc = cu_time(gemv_launch, &b, copies, &us, e))) goto done;
        double bytes = (double)(nq + nh + nm) + (double)T * K * 1.25 + (double)T * N * 4;
        res->us = us;
        res->gbps = bytes / us * 1e-3;
        /* each T = 1 form's time on its own line */
        for (int f = 0; T == 1 && f < (int)(sizeof gemv_forms / sizeof *gemv_forms); f++) {
            b.form = gemv_forms[f];
            if ((rc = cu_time(gemv_launch_form, &b, copies, &us, e))) goto done;
            printf("    gemv form %3d %-5s K%d N%d: %8.2f us %7.1f GB/s\n", b.form, ti->name, K, N, us, bytes / us * 1e-3);
        }
    }
done:
    dpool_free(&dp);
    free(src), free(qs), free(hi), free(meta), free(x), free(y), free(w), free(ds), free(xc), free(xq), free(xcq);
    free(lanes), free(scl);
    return rc;
}

typedef struct q8_bench { const float *x, *w; int8_t *xq; float *ds; float *y; int T, K, mode; } q8_bench;

static int q8_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    q8_bench *b = ctx;
    int st = b->mode == Q8_NORM     ? cuda_rms_norm_q8_1(b->x, b->w, 1e-6f, b->xq, b->ds, NULL, b->T, b->K, s)
             : b->mode == Q8_SWIGLU ? cuda_swiglu_q8_1(b->x, b->w, b->xq, b->ds, b->y, b->T, b->K, s)
                                    : cuda_quantize_q8_1(b->x, b->xq, b->ds, b->T, b->K, s);
    return st ? ERR_IO : 0;
}

/* The quantizer alone. Plain: bit-identical to check_ref_q8_1 (max_err counts differing values + scales).
 * Fused with rms_norm: the normalised row h differs from ref_rms_norm by float rounding only (sum of
 * squares in float over K terms: relative K 2^-24 on the scale, plus two products: 3 2^-24), so every
 * |dx q - h_ref| <= dx / 2 (1 + 2^-20) + (K + 3) 2^-24 |h_ref|, and y (the f32 h) is within
 * (K + 3) 2^-24 |h_ref|. max_err in units of those bounds. Fused with SwiGLU (x the gate, w[T][K] the up
 * projection): y bit-identical to cuda_swiglu's (checked against a double reference by check_eltwise),
 * and its q8_1 bit-identical to check_ref_q8_1 of that y (max_err counts differing values). */
int check_q8_1(int T, int K, int mode, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0, U = K / 32;
    const size_t nw = mode == Q8_SWIGLU ? (size_t)T * K : (size_t)K;
    float *x = hmalloc(sizeof(float) * (size_t)T * K, e), *w = hmalloc(sizeof(float) * nw, e);
    float *h = hmalloc(sizeof(float) * (size_t)T * K, e), *y = hmalloc(sizeof(float) * (size_t)T * K, e);
    float *ds = hmalloc(sizeof(float) * (size_t)T * U * 2, e), *rds = hmalloc(sizeof(float) * (size_t)T * U * 2, e);
    int8_t *q = hmalloc((size_t)T * K, e), *rq = hmalloc((size_t)T * K, e);
    if (!x || !w || !h || !y || !ds || !rds || !q || !rq) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)T * K, 3.0f);
    if (mode == Q8_SWIGLU) fill_normal(&r, w, (int64_t)nw, 1.0f);
    else fill_uniform(&r, w, K, 0.5f, 1.5f);
    for (int i = 0; i < K; i += 97) x[i] *= 40.0f; /* outliers: units with a large amax */
    float *dx = dpool_up(&dp, x, sizeof(float) * (size_t)T * K, e), *dw = dpool_up(&dp, w, sizeof(float) * nw, e);
    float *dds = dpool_alloc(&dp, sizeof(float) * (size_t)T * U * 2, e), *dy = dpool_alloc(&dp, sizeof(float) * (size_t)T * K, e);
    float *dh = dpool_alloc(&dp, sizeof(float) * (size_t)T * K, e);
    int8_t *dq = dpool_alloc(&dp, (size_t)T * K, e);
    if (!dx || !dw || !dds || !dy || !dh || !dq) {
        rc = e->code;
        goto done;
    }
    if (mode == Q8_NORM) rc = kcheck(cuda_rms_norm_q8_1(dx, dw, 1e-6f, dq, dds, dy, T, K, 0), e, "cuda_rms_norm_q8_1");
    else if (mode == Q8_SWIGLU) {
        rc = kcheck(cuda_swiglu_q8_1(dx, dw, dq, dds, dy, T, K, 0), e, "cuda_swiglu_q8_1");
        if (!rc) rc = kcheck(cuda_swiglu(dx, dw, dh, (int64_t)T * K, 0), e, "cuda_swiglu");
    }
    else rc = kcheck(cuda_quantize_q8_1(dx, dq, dds, T, K, 0), e, "cuda_quantize_q8_1");
    if (rc || (rc = cu_download(q, dq, (size_t)T * K, e)) ||
        (rc = cu_download(ds, dds, sizeof(float) * (size_t)T * U * 2, e)) ||
        (mode != Q8_PLAIN && (rc = cu_download(y, dy, sizeof(float) * (size_t)T * K, e))) ||
        (mode == Q8_SWIGLU && (rc = cu_download(h, dh, sizeof(float) * (size_t)T * K, e))))
        goto done;
    if (mode != Q8_NORM) {
        const float *src = mode == Q8_SWIGLU ? y : x;
        int64_t bad = 0;
        for (int t = 0; t < T; t++) check_ref_q8_1(src + (size_t)t * K, rq + (size_t)t * K, rds + (size_t)t * U * 2, K);
        for (int64_t i = 0; i < (int64_t)T * K; i++) bad += q[i] != rq[i];
        for (int64_t i = 0; i < (int64_t)T * U * 2; i++) bad += memcmp(&ds[i], &rds[i], 4) != 0;
        if (mode == Q8_SWIGLU)
            for (int64_t i = 0; i < (int64_t)T * K; i++) bad += memcmp(&y[i], &h[i], 4) != 0;
        res->max_err = (double)bad;
        res->tol = 0;
        snprintf(res->detail, sizeof res->detail, mode == Q8_SWIGLU
                     ? "y differing from cuda_swiglu's + values and scales differing from the host quantizer of y"
                     : "values and scales differing from the host quantizer");
    } else {
        ref_rms_norm(x, w, h, T, K, 1e-6f);
        tally tq, ty;
        tally_init(&tq), tally_init(&ty);
        for (int64_t i = 0; i < (int64_t)T * K; i++) {
            double dxu = ds[2 * (i / 32)], rel = (K + 3) * U24 * fabs(h[i]) + 1e-30;
            tally_note(&tq, i, dxu * q[i], h[i], dxu / 2 * (1 + 0x1p-20) + rel);
            tally_note(&ty, i, y[i], h[i], rel);
        }
        res->max_err = fmax(tq.worst, ty.worst);
        res->tol = 1.0;
        snprintf(res->detail, sizeof res->detail, "/bound: xhat %.2g, y %.2g", tq.worst, ty.worst);
    }
    if (bench) {
        q8_bench b = {dx, dw, dq, dds, dy, T, K, mode};
        double us;
        if ((rc = cu_time(q8_launch, &b, 1, &us, e))) goto done;
        res->us = us;
        res->gbps = (double)T * K * (4 + 1 + 0.25 + (mode == Q8_NORM ? 4 : mode == Q8_SWIGLU ? 8 : 0)) / us * 1e-3;
    }
done:
    dpool_free(&dp);
    free(x), free(w), free(h), free(y), free(ds), free(rds), free(q), free(rq);
    return rc;
}

/* ---------------------------------------------------------------- the routed experts' GEMV */

#define GX_SETS 16 /* expert selections a bench rotates through (distinct experts: past the L2) */

typedef struct gemvx_bench {
    cuda_qmat W[2];
    const int32_t *sel[GX_SETS];
    const int8_t *xq;
    const float *ds;
    float *y[2];
    int nm, E, n_slots, xdiv;
} gemvx_bench;

static int gemvx_launch(void *ctx, int i, cudaStream_t s) {
    gemvx_bench *b = ctx;
    return cuda_gemv_q_experts_group(b->W, b->nm, b->E, b->sel[i], b->n_slots, b->xdiv, b->xq, b->ds, b->y, s) ? ERR_IO
                                                                                                                : 0;
}

/* cuda_gemv_q_experts_group over nm (1 or 2) expert sets of E experts x N rows x K, n_slots routed slots
 * (xdiv = n_slots: every slot reads activation row 0, the gate / up of one token; xdiv = 1: a row each, the
 * down projection). Each slot's output must be bit for bit the plain T = 1 GEMV over its expert's rows alone
 * (checked against the CPU by the gemv cases), and the last slot, given an id past E, must leave its row
 * untouched. max_err: the number of values off (tol 0). With --bench, the launch timed over GX_SETS
 * selections of distinct experts (set 0 has one slot fewer); bytes = the selected experts' weights. */
int check_gemv_experts(enum qtype type, int E, int N, int K, int n_slots, int xdiv, int nm, uint64_t seed, bool bench,
                       cuda_check_result *res, err *e) {
    const qtype_info *ti = qtype_get(type);
    const size_t row_bytes = (size_t)(K / ti->blck) * ti->type_size;
    const int64_t rows = (int64_t)E * N, U = K / 32;
    const int n_x = n_slots / xdiv;
    size_t nq, nh, nm_;
    int rc = cuda_repack_sizes(type, rows, K, &nq, &nh, &nm_, e);
    if (rc) return rc;
    if (nm < 1 || nm > 2 || n_slots < 2 || n_slots * GX_SETS > E || n_slots % xdiv) return ERR_ARG;
    dpool dp = {0};
    uint8_t *src = hmalloc(row_bytes * (size_t)rows, e), *qs = hmalloc(nq, e), *hi = hmalloc(nh ? nh : 1, e);
    uint8_t *meta = hmalloc(nm_, e);
    float *x = hmalloc(sizeof(float) * (size_t)n_x * K, e), *y = hmalloc(sizeof(float) * (size_t)n_slots * N, e);
    float *y1 = hmalloc(sizeof(float) * (size_t)N, e);
    int32_t *sel = hmalloc(sizeof(int32_t) * (size_t)n_slots * GX_SETS, e);
    if (!src || !qs || !hi || !meta || !x || !y || !y1 || !sel) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)n_x * K, 1.0f);
    gemvx_bench b = {.nm = nm, .E = E, .n_slots = n_slots, .xdiv = xdiv};
    for (int m = 0; m < nm; m++) { /* member m: its own random experts */
        quant_random_blocks(type, src, rows * (K / ti->blck), 0.02f, &r);
        if ((rc = cuda_repack(type, src, rows, K, qs, hi, meta, e))) goto done;
        b.W[m] = (cuda_qmat){.type = type, .N = N, .K = K};
        if (!(b.W[m].qs = dpool_up(&dp, qs, nq, e)) || (nh && !(b.W[m].hi = dpool_up(&dp, hi, nh, e))) ||
            !(b.W[m].meta = dpool_up(&dp, meta, nm_, e)) ||
            !(b.y[m] = dpool_alloc(&dp, sizeof(float) * (size_t)n_slots * N, e))) {
            rc = e->code;
            goto done;
        }
    }
    /* GX_SETS selections: set i takes experts (i * n_slots + j) * E / (n_slots * GX_SETS) (all distinct); in
     * set 0 the last slot's id is E (past the last expert) */
    for (int i = 0; i < GX_SETS; i++)
        for (int j = 0; j < n_slots; j++) sel[i * n_slots + j] = (int32_t)(((int64_t)i * n_slots + j) * E / (n_slots * GX_SETS));
    sel[n_slots - 1] = E;
    float *dx = dpool_up(&dp, x, sizeof(float) * (size_t)n_x * K, e), *dds = dpool_alloc(&dp, sizeof(float) * (size_t)n_x * U * 2, e);
    int8_t *dxq = dpool_alloc(&dp, (size_t)n_x * K, e);
    float *dy1 = dpool_alloc(&dp, sizeof(float) * (size_t)N, e);
    int32_t *dsel = dpool_up(&dp, sel, sizeof(int32_t) * (size_t)n_slots * GX_SETS, e);
    if (!dx || !dds || !dxq || !dy1 || !dsel) {
        rc = e->code;
        goto done;
    }
    for (int i = 0; i < GX_SETS; i++) b.sel[i] = dsel + (size_t)i * n_slots;
    b.xq = dxq, b.ds = dds;
    for (int m = 0; m < nm; m++) /* a sentinel in every output, so an untouched row is seen */
        if ((rc = cu_check(cudaMemset(b.y[m], 0x7f, sizeof(float) * (size_t)n_slots * N), e, "cudaMemset"))) goto done;
    if ((rc = kcheck(cuda_quantize_q8_1(dx, dxq, dds, n_x, K, 0), e, "cuda_quantize_q8_1")) ||
        (rc = kcheck(gemvx_launch(&b, 0, 0) ? CUDA_KERR_ARGS : 0, e, "cuda_gemv_q_experts_group")))
        goto done;
    int64_t off = 0;
    for (int m = 0; m < nm && !rc; m++) {
        if ((rc = cu_download(y, b.y[m], sizeof(float) * (size_t)n_slots * N, e))) break;
        for (int s = 0; s < n_slots && !rc; s++) {
            float *ys = y + (size_t)s * N;
            if (s == n_slots - 1) { /* id E: untouched */
                for (int64_t i = 0; i < N; i++) {
                    uint32_t u;
                    memcpy(&u, &ys[i], 4);
                    off += u != 0x7f7f7f7fu;
                }
                continue;
            }
            cuda_qmat one = b.W[m]; /* expert sel[s]'s rows alone, the plain T = 1 launch */
            const size_t r0 = (size_t)sel[s] * (size_t)N;
            one.qs = (const char *)one.qs + r0 * (size_t)U * gemv_qs_bytes(type);
            one.hi = one.hi ? (const char *)one.hi + r0 * (size_t)U * gemv_hi_bytes(type) : NULL;
            one.meta = (const char *)one.meta + r0 * (size_t)(U / (gemv_meta_group(type) / 32)) * gemv_meta_bytes(type);
            const int xr = s / xdiv;
            if ((rc = kcheck(cuda_gemv_q(&one, dxq + (size_t)xr * K, dds + (size_t)xr * U * 2, dy1, 1, 0), e, "cuda_gemv_q")) ||
                (rc = cu_download(y1, dy1, sizeof(float) * (size_t)N, e)))
                break;
            for (int64_t i = 0; i < N; i++) off += memcmp(&ys[i], &y1[i], 4) != 0;
        }
    }
    if (rc) goto done;
    res->tol = 0;
    res->max_err = (double)off;
    snprintf(res->detail, sizeof res->detail, "%d slots of %d experts, %d set%s: %lld values off the plain GEMV (id %d: untouched)",
             n_slots, E, nm, nm > 1 ? "s" : "", (long long)off, E);
    if (bench) {
        const double bytes = (double)nm * n_slots * ((double)(nq + nh + nm_) / E) + (double)n_slots * N * 4 * nm;
        if ((rc = bench_fill(res, gemvx_launch, &b, GX_SETS, bytes, e))) goto done;
    }
done:
    dpool_free(&dp);
    free(src), free(qs), free(hi), free(meta), free(x), free(y), free(y1), free(sel);
    return rc;
}
