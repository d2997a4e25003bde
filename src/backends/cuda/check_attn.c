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
#include <string.h>

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

/* ------------------------------------------------------------------------------------------------------------
 * The fused decode attention (k_attn_decode_fused) against the launches it replaces: cuda_rope2 of q and k,
 * cuda_attn_decode_seqs (store, split, merge), cuda_quantize_q8_1 of out. Every value either writes (out, the
 * roped q and k, each sequence's K and V cache, xq, ds) must be the same bits (tolerance 0: the fused kernel
 * runs the same device code in the same order). The fused launch runs twice over fresh copies of its
 * inputs (its counters must be left at zero for the second one), and the counters are read back.
 *   covers: k_attn_decode_fused */
typedef struct fused_bench {
    const cuda_attn_seq *seqs;
    int n, Hq, Hkv, D, window;
    float scale, *q, *k, *out, *scr;
    const float *v;
    const int32_t *kpos;
    int64_t scr_n;
    const cuda_attn_fuse *F;
    const rope_params *rp;
    int8_t *xq;
    float *ds;
} fused_bench;

static int fused_launch(void *ctx, int i, cudaStream_t s) {
    (void)i;
    fused_bench *b = ctx;
    return cuda_attn_decode_fused(b->seqs, b->n, b->q, b->k, b->v, b->out, b->kpos, b->Hq, b->Hkv, b->D, b->scale,
                                  b->window, b->scr, b->scr_n, b->F, s)
               ? ERR_IO
               : 0;
}

static int unfused_launch(void *ctx, int i, cudaStream_t s) { /* the sequence the fused kernel replaces */
    (void)i;
    fused_bench *b = ctx;
    const cuda_attn_fuse *F = b->F;
    if (F->rpos && cuda_rope2(b->q, b->Hq, b->k, b->Hkv, F->rpos, b->n, b->D, b->rp, F->factors, s)) return ERR_IO;
    if (cuda_attn_decode_seqs(b->seqs, b->n, b->q, b->k, b->v, b->out, b->kpos, b->Hq, b->Hkv, b->D, b->scale,
                              b->window, b->scr, b->scr_n, s))
        return ERR_IO;
    return F->xq && cuda_quantize_q8_1(b->out, b->xq, b->ds, b->n, b->Hq * b->D, s) ? ERR_IO : 0;
}

int check_attn_fused(int n, const int *pos, int Hq, int Hkv, int D, int n_rot, int mode, bool factors, bool rope,
                     int window, uint64_t seed, bool bench, cuda_check_result *res, err *e) {
    enum { NMAX = 4 };
    dpool dp = {0};
    int rc = 0;
    int64_t bad = 0;
    if (n < 1 || n > NMAX) return kcheck(CUDA_KERR_ARGS, e, "check_attn_fused");
    int S_max = 1;
    for (int i = 0; i < n; i++) S_max = pos[i] + 1 > S_max ? pos[i] + 1 : S_max;
    const int K = Hq * D;
    const size_t nq = (size_t)n * K, nk = (size_t)n * Hkv * D, nc = (size_t)S_max * Hkv * D;
    float *q = hmalloc(4 * nq, e), *k = hmalloc(4 * nk, e), *v = hmalloc(4 * nk, e), *fac = hmalloc(4 * (size_t)D, e);
    float *ga = hmalloc(4 * nq, e), *gb = hmalloc(4 * nq, e);
    uint16_t *cache = hmalloc(2 * nc, e), *ca = hmalloc(2 * nc, e), *cb = hmalloc(2 * nc, e);
    int32_t *kpos = hmalloc(4 * (size_t)S_max, e);
    unsigned int *cnt = hmalloc(sizeof(unsigned) * CUDA_ATTN_SEQS_MAX * Hkv, e);
    if (!q || !k || !v || !fac || !ga || !gb || !cache || !ca || !cb || !kpos || !cnt) {
        rc = ERR_NOMEM;
        goto done;
    }
    rng r;
    rng_seed(&r, seed);
    fill_normal(&r, q, (int64_t)nq, 1.0f);
    fill_normal(&r, k, (int64_t)nk, 1.0f);
    fill_normal(&r, v, (int64_t)nk, 1.0f);
    fill_uniform(&r, fac, D, 1.0f, 4.0f);
    for (size_t i = 0; i < nc; i++) cache[i] = fp16_from_f32(rng_normal(&r));
    for (int s = 0; s < S_max; s++) kpos[s] = s;
    const rope_params rp = {mode, n_rot, 10000.0f, 1.0f};
    const float scale = 1.0f / sqrtf((float)D);
    const int64_t scr_n = n * cuda_attn_decode_scratch(S_max, Hq, D);
    int32_t *dpos = dpool_up(&dp, pos, 4 * (size_t)n, e), *dkpos = dpool_up(&dp, kpos, 4 * (size_t)S_max, e);
    float *dfac = factors ? dpool_up(&dp, fac, 4 * (size_t)D, e) : NULL, *dv = dpool_up(&dp, v, 4 * nk, e);
    unsigned int *dcnt = dpool_alloc(&dp, sizeof(unsigned) * CUDA_ATTN_SEQS_MAX * Hkv, e);
    /* [0]: the unfused launches, [1]: the fused one */
    float *dq[2], *dk[2], *dout[2], *dscr[2], *dds[2];
    int8_t *dxq[2];
    uint16_t *dkc[2][NMAX], *dvc[2][NMAX];
    cuda_attn_seq seqs[2][NMAX];
    for (int w = 0; w < 2; w++) {
        dq[w] = dpool_up(&dp, q, 4 * nq, e), dk[w] = dpool_up(&dp, k, 4 * nk, e), dout[w] = dpool_alloc(&dp, 4 * nq, e);
        dscr[w] = dpool_alloc(&dp, 4 * (size_t)scr_n, e), dxq[w] = dpool_alloc(&dp, nq, e);
        dds[w] = dpool_alloc(&dp, 4 * nq / 16, e);
        if (!dq[w] || !dk[w] || !dout[w] || !dscr[w] || !dxq[w] || !dds[w]) {
            rc = e->code ? e->code : ERR_NOMEM;
            goto done;
        }
        for (int i = 0; i < n; i++) { /* each sequence's caches: slots [0, pos] (slot pos is overwritten) */
            dkc[w][i] = dpool_up(&dp, cache, 2 * (size_t)(pos[i] + 1) * Hkv * D, e);
            dvc[w][i] =
                dpool_up(&dp, cache + (nc - (size_t)(pos[i] + 1) * Hkv * D), 2 * (size_t)(pos[i] + 1) * Hkv * D, e);
            if (!dkc[w][i] || !dvc[w][i]) {
                rc = e->code;
                goto done;
            }
            seqs[w][i] = (cuda_attn_seq){dkc[w][i], dvc[w][i], pos[i], i};
        }
    }
    if (!dpos || !dkpos || (factors && !dfac) || !dv || !dcnt ||
        cu_check(cudaMemset(dcnt, 0, sizeof(unsigned) * CUDA_ATTN_SEQS_MAX * Hkv), e, "cudaMemset")) {
        rc = e->code;
        goto done;
    }
    cuda_attn_fuse F = {rope ? dpos : NULL, dfac, mode, n_rot, 10000.0f, 1.0f, dcnt, rope ? dxq[1] : NULL, dds[1]};
    fused_bench fb[2];
    for (int w = 0; w < 2; w++)
        fb[w] = (fused_bench){seqs[w], n, Hq, Hkv, D, window, scale, dq[w], dk[w], dout[w], dscr[w], dv, dkpos, scr_n,
                              &F, &rp, dxq[w], dds[w]};
    if ((rc = kcheck(unfused_launch(&fb[0], 0, 0) ? CUDA_KERR_ARGS : 0, e, "rope2 + attn_decode_seqs + quantize")))
        goto done;
    for (int run = 0; run < 2; run++) {
        if (run) { /* fresh inputs for the second launch: q, k and the caches as at the start */
            if ((rc = cu_check(cudaMemcpy(dq[1], q, 4 * nq, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                (rc = cu_check(cudaMemcpy(dk[1], k, 4 * nk, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                (rc = cu_check(cudaMemset(dout[1], 0xff, 4 * nq), e, "cudaMemset")))
                goto done;
            for (int i = 0; i < n; i++) {
                const size_t b = 2 * (size_t)(pos[i] + 1) * Hkv * D;
                if ((rc = cu_check(cudaMemcpy(dkc[1][i], cache, b, cudaMemcpyHostToDevice), e, "cudaMemcpy")) ||
                    (rc = cu_check(cudaMemcpy(dvc[1][i], cache + (nc - b / 2), b, cudaMemcpyHostToDevice), e,
                                   "cudaMemcpy")))
                    goto done;
            }
        }
        if ((rc = kcheck(fused_launch(&fb[1], 0, 0) ? CUDA_KERR_ARGS : 0, e, "cuda_attn_decode_fused"))) goto done;
        /* out, q, k as floats, bit for bit */
        const float *pa[3] = {dout[0], dq[0], dk[0]}, *pb[3] = {dout[1], dq[1], dk[1]};
        const size_t cnts[3] = {nq, nq, nk};
        for (int j = 0; j < 3; j++) {
            if ((rc = cu_download(ga, pa[j], 4 * cnts[j], e)) || (rc = cu_download(gb, pb[j], 4 * cnts[j], e)))
                goto done;
            for (size_t i = 0; i < cnts[j]; i++) bad += memcmp(&ga[i], &gb[i], 4) != 0;
        }
        for (int i = 0; i < n; i++)
            for (int kv = 0; kv < 2; kv++) {
                const size_t b = 2 * (size_t)(pos[i] + 1) * Hkv * D;
                if ((rc = cu_download(ca, kv ? dvc[0][i] : dkc[0][i], b, e)) ||
                    (rc = cu_download(cb, kv ? dvc[1][i] : dkc[1][i], b, e)))
                    goto done;
                for (size_t j = 0; j < b / 2; j++) bad += ca[j] != cb[j];
            }
        if (rope) { /* the q8_1 rows: n K bytes and n K / 16 floats */
            if ((rc = cu_download(ga, dxq[0], nq, e)) || (rc = cu_download(gb, dxq[1], nq, e))) goto done;
            bad += memcmp(ga, gb, nq) != 0;
            if ((rc = cu_download(ga, dds[0], 4 * nq / 16, e)) || (rc = cu_download(gb, dds[1], 4 * nq / 16, e)))
                goto done;
            for (size_t i = 0; i < nq / 16; i++) bad += memcmp(&ga[i], &gb[i], 4) != 0;
        }
        if ((rc = cu_download(cnt, dcnt, sizeof(unsigned) * CUDA_ATTN_SEQS_MAX * Hkv, e))) goto done;
        for (int i = 0; i < CUDA_ATTN_SEQS_MAX * Hkv; i++) bad += cnt[i] != 0;
    }
    res->max_err = (double)bad;
    res->tol = 0;
    if (bench) {
        double us0;
        if ((rc = cu_time(unfused_launch, &fb[0], 1, &us0, e)) || (rc = cu_time(fused_launch, &fb[1], 1, &res->us, e)))
            goto done;
        snprintf(res->detail, sizeof res->detail, "values off the unfused launches (%.2f us): out, q, k, caches%s", us0,
                 rope ? ", q8_1" : "");
    } else
        snprintf(res->detail, sizeof res->detail, "values off the unfused launches: out, q, k, caches%s, counters",
                 rope ? ", q8_1" : "");
done:
    dpool_free(&dp);
    free(q), free(k), free(v), free(fac), free(ga), free(gb), free(cache), free(ca), free(cb), free(kpos), free(cnt);
    return rc;
}
