/* check_select: conformance cases of the device-side decisions (kernels/select.cu): the MoE router and
 * the greedy argmax.
 *   covers: k_moe_route k_argmax_partial k_argmax_final
 *
 * Router reference: the CPU's routing of qwen35 moe_block (softmax with a double sum, top-k by selection,
 * ties to the lower expert id, renormalised), written here since the CPU's is inside the model file; and
 * sigmoid gating. Ties are planted (equal logits give bit-equal probabilities on both sides), so the
 * selections must match exactly, except where two different probabilities lie within the rounding of the
 * two softmaxes (a near tie: allowed, counted in the detail). Weights: each side's softmax is a float
 * exp over a sum of E terms (relative (E + 8) 2^-24), renormalisation K more:
 *   |w - ref| <= 2 (E + K + 16) 2^-24 |ref|.
 * Argmax: exact id, with planted ties at the maximum (the lower id must win), run twice to check that the
 * launcher leaves its scratch zeroed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/check_decode.h"
#include "backends/cuda/check_util.h"
#include "backends/cuda/kernels.h"
#include "engine/ops_ref.h"

#define U24 0x1p-24

int check_moe_route(int T, int E, int K, enum cuda_moe_gating gating, int renorm, uint64_t seed,
                    cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    float *l = hmalloc(4 * (size_t)T * E, e), *w = hmalloc(4 * (size_t)T * K, e), *p = hmalloc(4 * (size_t)E, e);
    float *rw = hmalloc(4 * (size_t)K, e);
    int32_t *ids = hmalloc(4 * (size_t)T * K, e);
    int32_t *rsel = hmalloc(sizeof(int32_t) * (size_t)K, e);
    if (!l || !w || !p || !rw || !ids || !rsel) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, l, (int64_t)T * E, 2.0f);
    for (int t = 0; t < T; t++) { /* plant exact ties among the likely winners */
        float *lt = l + (size_t)t * E, mx = -INFINITY;
        int at = 0;
        for (int i = 0; i < E; i++)
            if (lt[i] > mx) mx = lt[i], at = i;
        lt[(at + E / 2) % E] = mx;
        lt[(at + 7) % E] = lt[(at + 3) % E] = mx - 0.5f;
    }
    float *dl = dpool_up(&dp, l, 4 * (size_t)T * E, e), *dw = dpool_alloc(&dp, 4 * (size_t)T * K, e);
    int32_t *dids = dpool_alloc(&dp, 4 * (size_t)T * K, e);
    if (!dl || !dw || !dids) {
        rc = e->code;
        goto done;
    }
    if ((rc = kcheck(cuda_moe_route(dl, dids, dw, T, E, K, gating, renorm, 0), e, "cuda_moe_route")) ||
        (rc = cu_download(w, dw, 4 * (size_t)T * K, e)) || (rc = cu_download(ids, dids, 4 * (size_t)T * K, e)))
        goto done;
    tally tw;
    tally_init(&tw);
    int64_t wrong = 0, near = 0;
    for (int t = 0; t < T; t++) {
        ref_moe_route(l + (size_t)t * E, E, K, gating == CUDA_MOE_SIGMOID, renorm, p, rsel, rw);
        for (int j = 0; j < K; j++) {
            int gi = ids[(size_t)t * K + j];
            if (gi != rsel[j]) {
                bool ok = gi >= 0 && gi < E && fabs(p[gi] - p[rsel[j]]) <= 2 * (E + 16) * U24 * p[rsel[j]];
                ok ? near++ : wrong++;
                continue;
            }
            tally_note(&tw, (int64_t)t * K + j, w[(size_t)t * K + j], rw[j], 2 * (E + K + 16) * U24 * fabs(rw[j]) + 1e-37);
        }
    }
    res->max_err = wrong ? INFINITY : tw.worst;
    res->tol = 1;
    snprintf(res->detail, sizeof res->detail, "/bound: weights %.2g; selections wrong %lld, near ties %lld", tw.worst,
             (long long)wrong, (long long)near);
done:
    dpool_free(&dp);
    free(l), free(w), free(p), free(rw), free(ids), free(rsel);
    return rc;
}

typedef struct argmax_bench { const float *x; int32_t *ids; unsigned long long *scratch; int T, V; } argmax_bench;
static int argmax_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    argmax_bench *b = ctx;
    return cuda_argmax(b->x, b->ids, b->scratch, b->T, b->V, s) ? ERR_IO : 0;
}

int check_argmax(int T, int V, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    float *x = hmalloc(4 * (size_t)T * V, e);
    int32_t *ids = hmalloc(4 * (size_t)T, e), *ids2 = hmalloc(4 * (size_t)T, e);
    if (!x || !ids || !ids2) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, x, (int64_t)T * V, 3.0f);
    for (int t = 0; t < T; t++) { /* ties at the maximum: t = 0 none, t = 1 two, t >= 2 three, and a -inf */
        float *xt = x + (size_t)t * V;
        xt[(t * 7919) % V] = -INFINITY;
        if (t == 0) continue;
        int a = (int)(rng_u64(&r) % (uint64_t)V), b = (int)(rng_u64(&r) % (uint64_t)V);
        xt[a] = xt[b] = 100.0f;
        if (t >= 2) xt[V - 1] = 100.0f;
    }
    float *dx = dpool_up(&dp, x, 4 * (size_t)T * V, e);
    int32_t *dids = dpool_alloc(&dp, 4 * (size_t)T, e);
    unsigned long long *dsc = dpool_alloc(&dp, 8 * (size_t)T, e);
    if (!dx || !dids || !dsc || (rc = cu_check(cudaMemset(dsc, 0, 8 * (size_t)T), e, "cudaMemset"))) {
        rc = rc ? rc : e->code;
        goto done;
    }
    if ((rc = kcheck(cuda_argmax(dx, dids, dsc, T, V, 0), e, "cuda_argmax")) || (rc = cu_download(ids, dids, 4 * (size_t)T, e)) ||
        (rc = kcheck(cuda_argmax(dx, dids, dsc, T, V, 0), e, "cuda_argmax")) || (rc = cu_download(ids2, dids, 4 * (size_t)T, e)))
        goto done;
    int64_t wrong = 0;
    for (int t = 0; t < T; t++) {
        const float *xt = x + (size_t)t * V;
        int best = 0;
        for (int i = 1; i < V; i++)
            if (xt[i] > xt[best]) best = i;
        wrong += (ids[t] != best) + (ids2[t] != best);
    }
    res->max_err = (double)wrong, res->tol = 0;
    snprintf(res->detail, sizeof res->detail, "ids differing from the first maximum (two runs)");
    if (bench) {
        argmax_bench b = {dx, dids, dsc, T, V};
        double us;
        if ((rc = cu_time(argmax_launch, &b, 1, &us, e))) goto done;
        res->us = us;
        res->gbps = 4.0 * T * V / us * 1e-3;
    }
done:
    dpool_free(&dp);
    free(x), free(ids), free(ids2);
    return rc;
}
