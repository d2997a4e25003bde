/* check_prefill_mmq: the grouped expert product on int8 tensor cores (kernels/mmq.cu: cuda_mmq_experts over
 * cuda_moe_group's tiles of 32 or 64 slots), MoE prefill's grouped product for the types it takes.
 *   covers: mmq_experts_kernel
 *
 * Inputs as check_prefill_moe.c's: E experts of N x K weights from quant_random_blocks (RMS 0.02), repacked on
 * the host into the GEMV layout (cuda_repack, as the executor uploads them); activations N(0, 1), one row per
 * token (xdiv = topk: gate and up) or per slot (xdiv = 1: down), quantized to q8_1 on the device
 * (cuda_quantize_q8_1, downloaded for the host side). Small cases route by construction: expert 0 gets no
 * slot, expert 1 one, expert 2 seventy (three tiles of 32, two of 64), the others topk - 1 random distinct
 * experts of each token, and the last slot is planted with expert id E. Bench cases route every token to
 * topk distinct uniform experts (the 35B-A3B's shapes, ~16 slots an expert at 512 tokens).
 *
 * Checked, per output (every one in a small case, 512 sampled in a bench case):
 *  - the bits of the host model (mmq_ref_dot over the downloaded q8_1 rows: the kernel's unit arithmetic,
 *    kernels/mmq_unit.h), so a mismatch is a kernel bug, not rounding;
 *  - the error bound of mmq_unit.h against sum_k to_float(w)_k x_k in double over the UNquantized x:
 *        (1/2 + 2^-15) sum |w'| d  +  (2U + 3) 2^-24 sum m d |x8|  +  2^-24 sum |w' x|
 *    (q8_1 rounding, the float work, to_float's rounding; U = K / 32). max_err is |y - ref| in units of it
 *    (tol 1); the detail also gives the worst |y - ref_q| over the float part alone, ref_q the exact sum of
 *    the same integers and scales (also <= 1);
 * and per case: the group table (pf_moe_table_fault with the tile size used), the planted slot's Y row keeps
 * its sentinel bits, the first half of the tokens alone give the bits they had among all (chunked prefill =
 * one pass), and (small cases) tiles of 32 and of 64 slots give the same bits. Any of these failing sets
 * max_err to 1e9. --bench times cuda_moe_group + cuda_mmq_experts, as gemm_experts times the grouping and its
 * product (the q8_1 quantization, like gemm_experts' bf16 conversion, not included).
 *
 * Dense cases (cuda_mmq_dense: one matrix, a row a slot, no table; the executor's batched decode rows): the
 * same checks but the table's and the planted slot's, plus the bits of the grouped form with every slot on
 * expert 0. --bench times cuda_mmq_dense alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_prefill.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/mmq_ref.h"
#include "backends/cuda/repack.h"
#include "quant/quant.h"

enum { MMQ_SAMPLES = 512, MMQ_BIG_EXPERT = 70 };

typedef struct mmq_ctx {
    cuda_qmat W; /* device planes of all E * N rows; W.N = N */
    int E, slots, xdiv, bm;
    bool dense; /* cuda_mmq_dense (E = 1, slots in order, no table) */
    const int32_t *sel;
    const int8_t *xq;
    const float *ds;
    int32_t *g;
    float *Y;
} mmq_ctx;

static int mmq_run(const mmq_ctx *c, cudaStream_t s, err *e) {
    if (c->dense) return pf_kerr(cuda_mmq_dense(&c->W, c->xq, c->ds, c->Y, c->slots, c->bm, s), "cuda_mmq_dense", e);
    int rc = pf_kerr(cuda_moe_group(c->sel, c->slots, c->E, c->bm, c->g, s), "cuda_moe_group", e);
    if (!rc) rc = pf_kerr(cuda_mmq_experts(&c->W, c->E, c->xq, c->ds, c->xdiv, c->g, c->bm, c->Y, c->slots, s),
                          "cuda_mmq_experts", e);
    return rc;
}

static int mmq_launch(void *vctx, int i, cudaStream_t s) {
    (void)i;
    err e = {0};
    return mmq_run(vctx, s, &e) ? ERR_IO : 0;
}

/* topk distinct experts a token; structured (small cases): as the header says, expert ids 3.. random */
static void mmq_route(rng *r, int32_t *sel, int tokens, int topk, int E, bool structured) {
    pf_moe_route(r, sel, tokens, topk, structured ? 3 : 0, E);
    if (!structured) return;
    for (int t = 0; t < MMQ_BIG_EXPERT && t < tokens; t++) sel[t * topk] = 2;
    if (tokens > MMQ_BIG_EXPERT) sel[MMQ_BIG_EXPERT * topk] = 1;
    sel[tokens * topk - 1] = E; /* routed nowhere */
}

typedef struct mmq_host {
    enum qtype type;
    int N, K, xdiv;
    const uint8_t *Wh, *qs, *hi, *meta; /* GGUF rows and their GEMV layout, E * N rows */
    const float *X, *Wf;                /* unquantized activations; Wf: every row's to_float (small cases) */
    const int8_t *xq;
    const float *ds;
    const int32_t *sel;
    float *wrow; /* K floats of scratch */
} mmq_host;

/* one output against the host model and the bound: 1 if its bits differ from the model's; worst ratios kept */
static int mmq_score(const mmq_host *h, int s, int n, float y, double *worst, double *worst_q, double *worst_abs) {
    const size_t row_bytes = qtype_row_bytes(h->type, h->K);
    const int64_t r = (int64_t)h->sel[s] * h->N + n, xr = s / h->xdiv;
    const float *wf = h->Wf ? h->Wf + r * h->K : h->wrow;
    if (!h->Wf) quant_ops_get(h->type, QUANT_ISA_SCALAR)->to_float(h->Wh + (size_t)r * row_bytes, h->wrow, h->K);
    mmq_ref_cmp cmp;
    const float ym = mmq_ref_dot(h->type, h->qs, h->hi, h->meta, r, h->K, h->xq + xr * h->K,
                                 h->ds + xr * (h->K / 32) * 2, h->X + xr * h->K, wf, &cmp);
    const double q = fabs(y - cmp.ref) / cmp.bound, qq = fabs(y - cmp.ref_q) / cmp.bound_q;
    if (!(q <= *worst)) *worst = q, *worst_abs = fabs(y - cmp.ref);
    if (!(qq <= *worst_q)) *worst_q = qq;
    return memcmp(&y, &ym, sizeof y) != 0;
}

int pf_mmq_case(int type, int E, int N, int K, int tokens, int topk, bool per_slot, bool big, bool dense, uint64_t seed,
                bool bench, cuda_check_result *res, err *e) {
    const enum qtype t = (enum qtype)type;
    const quant_ops *ops = quant_ops_get(t, QUANT_ISA_SCALAR);
    const qtype_info *qi = qtype_get((uint32_t)type);
    if (!ops || !ops->to_float || !qi) return err_set(e, ERR_UNSUPPORTED, "no CPU dequantizer for this type");
    if (dense && (E != 1 || topk != 1 || !per_slot))
        return err_set(e, ERR_ARG, "a dense case is one matrix, a row a slot");
    if (!cuda_mmq_experts_supports(type, K))
        return err_set(e, ERR_UNSUPPORTED, "cuda_mmq_experts refuses %s K %d", qi->name, K);
    const int slots = tokens * topk, n_in = per_slot ? slots : tokens, xdiv = per_slot ? 1 : topk, U = K / 32;
    const int64_t rows = (int64_t)E * N;
    const size_t row_bytes = qtype_row_bytes(t, K), w_bytes = row_bytes * (size_t)rows;
    const int64_t g_n = cuda_moe_group_ints(slots, E, CUDA_MMQ_TILE_MIN);
    size_t nq = 0, nh = 0, nm = 0;
    int rc = cuda_repack_sizes(t, rows, K, &nq, &nh, &nm, e);
    if (rc) return rc;
    rng r;
    rng_seed(&r, seed);
    uint8_t *Wh = malloc(w_bytes), *qs = malloc(nq), *hi = malloc(nh ? nh : 1), *meta = malloc(nm);
    float *X = malloc(sizeof(float) * (size_t)n_in * K), *ds = malloc(sizeof(float) * (size_t)n_in * U * 2);
    float *Y = malloc(sizeof(float) * (size_t)slots * N), *Yh = malloc(sizeof(float) * (size_t)slots * N);
    float *Wf = big ? NULL : malloc(sizeof(float) * (size_t)rows * K), *wrow = malloc(sizeof(float) * (size_t)K);
    int8_t *xq = malloc((size_t)n_in * K);
    int32_t *sel = malloc(sizeof(int32_t) * (size_t)slots), *g = malloc(sizeof(int32_t) * (size_t)g_n);
    float *Xd = NULL;
    mmq_ctx c = {.E = E, .slots = slots, .xdiv = xdiv, .dense = dense};
    void *dq = NULL, *dh = NULL, *dm = NULL;
    int32_t *seld = NULL;
    if (!Wh || !qs || !hi || !meta || !X || !ds || !Y || !Yh || (!big && !Wf) || !wrow || !xq || !sel || !g) {
        rc = err_set(e, ERR_NOMEM, "host buffers");
        goto done;
    }
    pf_normal(&r, X, (int64_t)n_in * K, 1.0f);
    if (dense)
        memset(sel, 0, sizeof(int32_t) * (size_t)slots); /* the host model's rows; the kernel reads no table */
    else
        mmq_route(&r, sel, tokens, topk, E, !big);
    if (!quant_random_blocks(t, Wh, rows * (K / qi->blck), 0.02f, &r)) {
        rc = err_set(e, ERR_UNSUPPORTED, "no random generator for this type");
        goto done;
    }
    if ((rc = cuda_repack(t, Wh, rows, K, qs, hi, meta, e))) goto done;
    if (Wf)
        for (int64_t i = 0; i < rows; i++) ops->to_float(Wh + (size_t)i * row_bytes, Wf + i * K, K);
    rc = cu_upload(&dq, qs, nq, e);
    if (!rc && nh) rc = cu_upload(&dh, hi, nh, e);
    if (!rc) rc = cu_upload(&dm, meta, nm, e);
    if (!rc) rc = cu_upload((void **)&Xd, X, sizeof(float) * (size_t)n_in * K, e);
    if (!rc) rc = cu_upload((void **)&seld, sel, sizeof(int32_t) * (size_t)slots, e);
    if (!rc) rc = cu_alloc((void **)&c.xq, (size_t)n_in * K, e);
    if (!rc) rc = cu_alloc((void **)&c.ds, sizeof(float) * (size_t)n_in * U * 2, e);
    if (!rc) rc = cu_alloc((void **)&c.g, sizeof(int32_t) * (size_t)g_n, e);
    if (!rc) rc = cu_alloc((void **)&c.Y, sizeof(float) * (size_t)slots * N, e);
    if (!rc) rc = cu_check(cudaMemset(c.Y, 0xff, sizeof(float) * (size_t)slots * N), e, "cudaMemset");
    if (rc) goto done;
    c.W = (cuda_qmat){.type = t, .N = N, .K = K, .qs = dq, .hi = dh, .meta = dm};
    c.sel = seld;
    c.bm = cuda_mmq_tile(slots, E);
    rc = pf_kerr(cuda_quantize_q8_1(Xd, (int8_t *)c.xq, (float *)c.ds, n_in, K, 0), "cuda_quantize_q8_1", e);
    if (!rc) rc = mmq_run(&c, 0, e);
    if (!rc) rc = cu_download(Y, c.Y, sizeof(float) * (size_t)slots * N, e);
    if (!rc && !dense) rc = cu_download(g, c.g, sizeof(int32_t) * (size_t)g_n, e);
    if (!rc) rc = cu_download(xq, c.xq, (size_t)n_in * K, e);
    if (!rc) rc = cu_download(ds, c.ds, sizeof(float) * (size_t)n_in * U * 2, e);
    if (rc) goto done;

    const char *fault = dense ? NULL : pf_moe_table_fault(g, sel, slots, E, c.bm);
    const int planted = big || dense ? -1 : slots - 1;
    const mmq_host h = {.type = t, .N = N, .K = K, .xdiv = xdiv, .Wh = Wh, .qs = qs, .hi = hi, .meta = meta, .X = X,
                        .Wf = Wf, .xq = xq, .ds = ds, .sel = sel, .wrow = wrow};
    double worst = 0, worst_q = 0, worst_abs = 0;
    int64_t bad_bits = 0;
    const int checks = big ? MMQ_SAMPLES : slots * N;
    for (int i = 0; i < checks; i++) {
        const int s = big ? (int)(rng_u64(&r) % (uint64_t)slots) : i / N;
        const int n = big ? (int)(rng_u64(&r) % (uint64_t)N) : i % N;
        if (s != planted) bad_bits += mmq_score(&h, s, n, Y[(size_t)s * N + n], &worst, &worst_q, &worst_abs);
    }
    int64_t bad_planted = 0;
    if (planted >= 0) {
        const uint32_t ones = 0xffffffffu;
        for (int n = 0; n < N; n++) bad_planted += memcmp(&Y[(size_t)planted * N + n], &ones, 4) != 0;
    }
    /* the first half of the tokens alone (its own tile size), then (small cases) the other tile size */
    c.slots = (tokens / 2) * topk;
    c.bm = cuda_mmq_tile(c.slots, E);
    rc = mmq_run(&c, 0, e);
    if (!rc) rc = cu_download(Yh, c.Y, sizeof(float) * (size_t)c.slots * N, e);
    if (rc) goto done;
    int64_t bad_half = pf_bits_differ(Y, Yh, (int64_t)c.slots * N), bad_tile = 0;
    c.slots = slots;
    if (!big) {
        c.bm = cuda_mmq_tile(slots, E) == 32 ? 64 : 32;
        rc = mmq_run(&c, 0, e);
        if (!rc) rc = cu_download(Yh, c.Y, sizeof(float) * (size_t)slots * N, e);
        if (rc) goto done;
        bad_tile = pf_bits_differ(Y, Yh, (int64_t)slots * N);
    }
    c.bm = cuda_mmq_tile(slots, E);
    int64_t bad_table = 0; /* dense: the grouped form with every slot on expert 0 gives the same bits */
    if (dense) {
        c.dense = false;
        rc = mmq_run(&c, 0, e);
        if (!rc) rc = cu_download(Yh, c.Y, sizeof(float) * (size_t)slots * N, e);
        c.dense = true;
        if (rc) goto done;
        bad_table = pf_bits_differ(Y, Yh, (int64_t)slots * N);
    }
    if (fault || bad_planted || bad_half || bad_tile || bad_table || bad_bits || !(worst_q <= 1)) worst = 1e9;
    snprintf(res->detail, sizeof res->detail,
             "%d outputs; model bits %lld differ; abs err %.2g; f32 part %.2f; table %s; half %lld, tiles %lld%s "
             "differ%s",
             checks, (long long)bad_bits, worst_abs, worst_q, fault ? fault : "ok", (long long)bad_half,
             (long long)bad_tile, dense ? (bad_table ? ", grouped form some" : ", grouped form 0") : "",
             bad_planted ? "; unrouted row written" : "");
    res->max_err = worst;
    res->tol = 1.0;
    if (bench && big) {
        rc = cu_time(mmq_launch, &c, 1, &res->us, e);
        if (!rc) res->tflops = 2.0 * slots * (double)N * K / (res->us * 1e6);
    }
done:
    cu_free(dq), cu_free(dh), cu_free(dm), cu_free(Xd), cu_free(seld), cu_free((void *)c.xq), cu_free((void *)c.ds);
    cu_free(c.g), cu_free(c.Y);
    free(Wh), free(qs), free(hi), free(meta), free(X), free(ds), free(Y), free(Yh), free(Wf), free(wrow), free(xq);
    free(sel), free(g);
    return rc;
}
