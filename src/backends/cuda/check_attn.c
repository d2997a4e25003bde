/* check_attn: conformance cases of split-K decode attention (kernels/attn_decode.cu) against
 * ref_attention over the same f16-rounded cache.
 *   covers: k_attn_decode_split k_attn_decode_merge
 *
 * The cache's positions are a ring buffer (kpos rotated, so the newest key is not last) with n_kv < S_max
 * slots filled, exercising the device-side n_kv and the visibility rule (kpos <= qpos, sliding window).
 * Error model: each score is a float dot of D products, error <= (D + 2) 2^-24 scale sum_d |q_d k_d| (each
 * side; +2 for the products and the scaling of q); an error de in the scores moves softmax weights by at most a relative 2 de, and the output,
 * a convex combination of V rows, by 2 de max|v|; exp, the online rescaling and the merge add a few
 * ulps per step over log-depth sums (<= 64 2^-24 max|v|). Both the kernel and the reference are float:
 *   |out - ref| <= 2 (2 de_max + 64 2^-24) max_s |v_s,d|     per output dim d of each head. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/cuda/check_decode.h"
#include "backends/cuda/check_util.h"
#include "backends/cuda/kernels.h"
#include "base/fp16.h"

#define U24 0x1p-24

typedef struct attn_bench {
    const float *q;
    const uint16_t *k, *v;
    float *out, *scratch;
    const int32_t *qpos, *kpos, *nkv;
    int S, Hq, Hkv, D, window;
    float scale;
} attn_bench;

static int attn_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    attn_bench *b = ctx;
    return cuda_attn_decode(b->q, b->k, b->v, b->out, b->qpos, b->kpos, b->nkv, b->S, b->Hq, b->Hkv, b->D, b->scale,
                            b->window, b->scratch, s)
               ? ERR_IO
               : 0;
}

int check_attn(int S_max, int n_kv, int Hq, int Hkv, int D, int window, uint64_t seed, bool bench,
               cuda_check_result *res, err *e) {
    dpool dp = {0};
    int rc = 0;
    size_t nkv = (size_t)S_max * Hkv * D, nq = (size_t)Hq * D;
    float *q = hmalloc(4 * nq, e), *kf = hmalloc(4 * nkv, e), *vf = hmalloc(4 * nkv, e), *out = hmalloc(4 * nq, e);
    float *ref = hmalloc(4 * nq, e), *scores = hmalloc(4 * (size_t)S_max, e);
    uint16_t *kh = hmalloc(2 * nkv, e), *vh = hmalloc(2 * nkv, e);
    int32_t *kpos = hmalloc(4 * (size_t)S_max, e);
    if (!q || !kf || !vf || !out || !ref || !scores || !kh || !vh || !kpos) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, q, (int64_t)nq, 1.0f);
    for (size_t i = 0; i < nkv; i++) {
        kh[i] = fp16_from_f32(rng_normal(&r)), kf[i] = fp16_to_f32(kh[i]);
        vh[i] = fp16_from_f32(rng_normal(&r)), vf[i] = fp16_to_f32(vh[i]);
    }
    /* slot s holds position (s + rot) % n_kv: a ring buffer that wrapped; slots >= n_kv are stale */
    int rot = n_kv / 3;
    for (int s = 0; s < S_max; s++) kpos[s] = s < n_kv ? (s + rot) % n_kv : 1 << 30;
    int32_t qpos = n_kv - 1;
    float scale = 1.0f / sqrtf((float)D);
    float *dq = dpool_up(&dp, q, 4 * nq, e), *dout = dpool_alloc(&dp, 4 * nq, e);
    float *dsc = dpool_alloc(&dp, 4 * (size_t)cuda_attn_decode_scratch(S_max, Hq, D), e);
    uint16_t *dk = dpool_up(&dp, kh, 2 * nkv, e), *dv = dpool_up(&dp, vh, 2 * nkv, e);
    int32_t *dkpos = dpool_up(&dp, kpos, 4 * (size_t)S_max, e), *dqpos = dpool_up(&dp, &qpos, 4, e);
    int32_t *dn = dpool_up(&dp, &n_kv, 4, e);
    if (!dq || !dout || !dsc || !dk || !dv || !dkpos || !dqpos || !dn) {
        rc = e->code;
        goto done;
    }
    attn_bench b = {dq, dk, dv, dout, dsc, dqpos, dkpos, dn, S_max, Hq, Hkv, D, window, scale};
    if ((rc = kcheck(attn_launch(&b, 0, 0) ? CUDA_KERR_ARGS : 0, e, "cuda_attn_decode")) ||
        (rc = cu_download(out, dout, 4 * nq, e)))
        goto done;
    ref_attention(q, kf, vf, ref, &qpos, kpos, 1, n_kv, Hq, Hkv, D, scale, window, scores);
    tally t;
    tally_init(&t);
    int G = Hq / Hkv;
    for (int h = 0; h < Hq; h++) {
        int kvh = h / G;
        double de = 0;
        for (int s = 0; s < n_kv; s++) {
            double a = 0;
            for (int d = 0; d < D; d++) a += fabs((double)q[h * D + d] * kf[((size_t)s * Hkv + kvh) * D + d]);
            de = fmax(de, (D + 2) * U24 * scale * a);
        }
        for (int d = 0; d < D; d++) {
            double vmax = 0;
            for (int s = 0; s < n_kv; s++) vmax = fmax(vmax, fabs(vf[((size_t)s * Hkv + kvh) * D + d]));
            tally_note(&t, h * D + d, out[h * D + d], ref[h * D + d], 2 * (2 * de + 64 * U24) * vmax + 1e-30);
        }
    }
    res->max_err = t.worst, res->tol = 1;
    if (bench) {
        double us;
        if ((rc = cu_time(attn_launch, &b, 1, &us, e))) goto done;
        res->us = us;
        int vis = window > 0 && window < n_kv ? window : n_kv;
        res->gbps = (double)vis * Hkv * D * 2 * 2 / us * 1e-3; /* K and V rows actually read */
    }
done:
    dpool_free(&dp);
    free(q), free(kf), free(vf), free(out), free(ref), free(scores), free(kh), free(vh), free(kpos);
    return rc;
}
