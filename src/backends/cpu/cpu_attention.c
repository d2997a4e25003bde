/* cpu_attention: the CPU backend's attention over a sequence's cache — the math of ref_attention
 * (ops_ref.c), as blocked matrix products with an online softmax (the flash-attention arrangement).
 *
 * One work item is a query head and a block of ATT_BQ query tokens. Its visible keys go in blocks of
 * ATT_BK: scores = Q K^T (K transposed into scratch so the product is cpu_blas.h's gemm_nn; for the few
 * rows of a decode step, dot products and gemv_t instead, which need no transpose), masked by
 * causality and the sliding window, then the running row maxima m, sums l and outputs O are rescaled and
 * O += P V. Scratch per thread is independent of the context length: K^T, the score block, O, m and l.
 *
 * A prompt's query blocks see more keys the later they are (causal), so items pair block b with block
 * nb-1-b: every item then costs about the same, and the pool's equal contiguous ranges are balanced
 * (split by (token, head) rows, the later half of a prompt had 3x the work of the first).
 *
 * Against ref_attention the sums run in another order and exp is cpu_vexp.h's: tests/engine/
 * test_cpu_ops.c holds the two within 1e-5. Keys must be in ascending position order. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_blas.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/cpu_vexp.h"
#include "quant/quant.h"

#define ATT_BQ 32  /* query rows per item: gemm_nn's 4-row blocks, O (32 x D) stays in L1/L2 */
#define ATT_BK 128 /* keys per block: multiples of gemm_nn's 32 columns */
/* Query rows from which both products are gemm_nn (else dot products, gemv_t). Below it every row's result
 * is the bits of that row alone (masked keys add exact zeros), so a span of a few tokens (a speculative
 * verification) gives what decoding them one at a time gives; as BULK_MIN_ROWS for the matmuls. */
#define ATT_GEMM_ROWS 16

int64_t cpu_attention_scratch(int n_threads, int D) {
    /* K^T, scores, O, m, l, and a block of K and V converted from the cache type */
    return (int64_t)n_threads *
           ((int64_t)D * ATT_BK + (int64_t)ATT_BQ * ATT_BK + (int64_t)ATT_BQ * D + 2 * ATT_BQ + 2LL * ATT_BK * D);
}

typedef struct att_job {
    const float *q;
    const void *k, *v;
    enum qtype tk, tv;     /* cache types: F32 is read in place, others converted per key block */
    quant_to_float_fn k_to_float, v_to_float;
    float *out;
    const int32_t *qpos, *kpos;
    int T, S, Hq, Hkv, D;
    float scale;
    int window;
    int nb;          /* query blocks */
    float *scratch;
    int64_t per;     /* scratch floats per thread */
} att_job;

/* Query rows [t0, t1) of head h. */
HOT static void att_block(const att_job *J, int h, int t0, int t1, float *scratch) {
    const int D = J->D, nq = t1 - t0, kvh = h / (J->Hq / J->Hkv);
    const int64_t qstride = (int64_t)J->Hq * D, kstride = (int64_t)J->Hkv * D;
    float *Kt = scratch, *Sb = Kt + (int64_t)D * ATT_BK, *O = Sb + (int64_t)ATT_BQ * ATT_BK;
    float *m = O + (int64_t)ATT_BQ * D, *l = m + ATT_BQ, *Kc = l + ATT_BQ, *Vc = Kc + (int64_t)ATT_BK * D;
    const size_t krow = qtype_row_bytes(J->tk, kstride), khead = qtype_row_bytes(J->tk, D);
    const size_t vrow = qtype_row_bytes(J->tv, kstride), vhead = qtype_row_bytes(J->tv, D);
    /* keys any row of the block sees: [lo, hi) */
    int hi = 0, lo = 0;
    while (hi < J->S && J->kpos[hi] <= J->qpos[t1 - 1]) hi++;
    if (J->window > 0)
        while (lo < hi && J->qpos[t0] - J->kpos[lo] >= J->window) lo++;
    memset(O, 0, sizeof(float) * (size_t)nq * D);
    for (int i = 0; i < nq; i++) m[i] = -INFINITY, l[i] = 0.0f;
    const float *Q = J->q + (int64_t)t0 * qstride + (int64_t)h * D;
    for (int s0 = lo; s0 < hi; s0 += ATT_BK) {
        const int nk = hi - s0 < ATT_BK ? hi - s0 : ATT_BK;
        const float *K;
        int64_t ks = kstride;
        if (J->tk == QT_F32) {
            K = (const float *)J->k + (int64_t)s0 * kstride + (int64_t)kvh * D;
        } else { /* this block's keys of head kvh, converted */
            for (int j = 0; j < nk; j++)
                J->k_to_float((const char *)J->k + (size_t)(s0 + j) * krow + (size_t)kvh * khead, Kc + (int64_t)j * D, D);
            K = Kc, ks = D;
        }
        if (nq >= ATT_GEMM_ROWS) { /* the transpose pays for itself over the block's rows */
            transpose(K, ks, nk, D, Kt);
            memset(Sb, 0, sizeof(float) * (size_t)nq * nk);
            gemm_nn(nq, nk, D, J->scale, Q, qstride, Kt, nk, Sb, nk);
        } else { /* decode: a few query rows, one dot product per key */
            for (int i = 0; i < nq; i++) dots(nk, D, J->scale, Q + (int64_t)i * qstride, K, ks, Sb + (int64_t)i * nk);
        }
        for (int i = 0; i < nq; i++) {
            const int32_t qp = J->qpos[t0 + i];
            float *srow = Sb + (int64_t)i * nk, mx = m[i];
            int vis0 = nk, vis1 = 0; /* the row's visible keys are [vis0, vis1) of the block */
            for (int j = 0; j < nk; j++) {
                const int32_t kp = J->kpos[s0 + j];
                if (kp > qp || (J->window > 0 && qp - kp >= J->window)) continue;
                if (j < vis0) vis0 = j;
                vis1 = j + 1;
                mx = srow[j] > mx ? srow[j] : mx;
            }
            if (vis0 >= vis1) { /* nothing visible in this block */
                memset(srow, 0, sizeof(float) * (size_t)nk);
                continue;
            }
            const float corr = m[i] == -INFINITY ? 0.0f : expf(m[i] - mx);
            m[i] = mx;
            memset(srow, 0, sizeof(float) * (size_t)vis0);
            memset(srow + vis1, 0, sizeof(float) * (size_t)(nk - vis1));
            const float sum = vexp_shift_sum(srow + vis0, vis1 - vis0, mx);
            l[i] = l[i] * corr + sum;
            if (corr != 1.0f) scal(O + (int64_t)i * D, corr, D);
        }
        const float *V;
        int64_t vs = kstride;
        if (J->tv == QT_F32) {
            V = (const float *)J->v + (int64_t)s0 * kstride + (int64_t)kvh * D;
        } else {
            for (int j = 0; j < nk; j++)
                J->v_to_float((const char *)J->v + (size_t)(s0 + j) * vrow + (size_t)kvh * vhead, Vc + (int64_t)j * D, D);
            V = Vc, vs = D;
        }
        if (nq >= ATT_GEMM_ROWS) gemm_nn(nq, D, nk, 1.0f, Sb, nk, V, vs, O, D);
        else
            for (int i = 0; i < nq; i++) gemv_t(D, nk, Sb + (int64_t)i * nk, V, vs, O + (int64_t)i * D);
    }
    for (int i = 0; i < nq; i++) {
        float *dst = J->out + (int64_t)(t0 + i) * qstride + (int64_t)h * D;
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f; /* no visible key: output 0, as the reference */
        for (int d = 0; d < D; d++) dst[d] = O[(int64_t)i * D + d] * inv;
    }
}

/* items: head-major, each a pair of query blocks (b, nb-1-b) */
static void att_items(void *ctx, int64_t r0, int64_t r1, int thread) {
    const att_job *J = ctx;
    float *scratch = J->scratch + thread * J->per;
    const int pairs = (J->nb + 1) / 2;
    for (int64_t r = r0; r < r1; r++) {
        const int h = (int)(r / pairs), b = (int)(r % pairs), b2 = J->nb - 1 - b;
        att_block(J, h, b * ATT_BQ, b * ATT_BQ + ATT_BQ < J->T ? b * ATT_BQ + ATT_BQ : J->T, scratch);
        if (b2 != b) att_block(J, h, b2 * ATT_BQ, b2 * ATT_BQ + ATT_BQ < J->T ? b2 * ATT_BQ + ATT_BQ : J->T, scratch);
    }
}

void cpu_attention(threadpool *pool, float *scratch, const float *q, const void *k, const void *v, enum qtype tk,
                   enum qtype tv, float *out, const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv,
                   int D, float scale, int window) {
    att_job J = {q, k, v, tk, tv, quant_ops_best(tk).to_float, quant_ops_best(tv).to_float, out, qpos, kpos, T, S, Hq,
                 Hkv, D, scale, window, (T + ATT_BQ - 1) / ATT_BQ, scratch, cpu_attention_scratch(1, D)};
    pool_run_dynamic(pool, (int64_t)Hq * ((J.nb + 1) / 2), 1, att_items, &J); /* scratch is rewritten per block */
}
