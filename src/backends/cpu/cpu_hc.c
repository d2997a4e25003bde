/* cpu_hc: the CPU executor's qwen4exp ops (backend.h: hyper-connections, PLE, QSA). The per-token ops run
 * their references (ops_ref_hc.c) on token ranges split over the pool; the n-gram hash, the dilated conv
 * and the block keys run the references as they are (a few rows per token). QSA's selection keeps a
 * bounded heap per query (O(nb log n_sel), not the reference's O(nb^2)); its sparse attention is one item a
 * (token, head), so a decode step's heads run on all threads: the head's slice of each selected cache row
 * (any cache type the dense attention takes, converted per head), vector dot products, a two-pass softmax
 * over at most budget + c - 1 keys with cpu_vexp.h's exp, P.V. Both are exact against the references up
 * to summation order (the heap and the reference break ties the same way: the lower block wins). */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_blas.h"
#include "backends/cpu/cpu_impl.h"
#include "backends/cpu/cpu_vexp.h"
#include "quant/quant.h"

#define OP(x) ((x)->stats.n_ops++)

typedef struct tok_job {
    const float *a, *b, *c;
    float *y;
    const float *w;
    int S, D;
    float eps;
} tok_job;

static void norm_groups_range(void *ctx, int64_t t0, int64_t t1, int th) {
    (void)th;
    const tok_job *J = ctx;
    const int64_t o = t0 * J->S * J->D;
    ref_rms_norm_groups(J->a + o, J->w, J->y + o, (int)(t1 - t0), J->S, J->D, J->eps);
}

void cpu_rms_norm_groups(exec *x, const float *in, const weight *w, float *y, int T, int G, int D, float eps) {
    OP(x);
    tok_job J = {.a = in, .y = y, .w = w ? (const float *)w->data : NULL, .S = G, .D = D, .eps = eps};
    pool_run(cpu_of(x)->pool, T, 4, norm_groups_range, &J);
}

void cpu_silu_scaled(exec *x, const float *in, float *y, float s, int64_t n) {
    OP(x);
    ref_silu_scaled(in, y, s, n);
}

static void mix_range(void *ctx, int64_t t0, int64_t t1, int th) {
    (void)th;
    const tok_job *J = ctx;
    const int64_t o = t0 * J->S * J->D;
    ref_hc_mix(J->a + o, J->b + o, J->y + t0 * J->D, (int)(t1 - t0), J->S, J->D);
}

void cpu_hc_mix(exec *x, const float *xn, const float *gate, float *m, int T, int S, int D) {
    OP(x);
    tok_job J = {.a = xn, .b = gate, .y = m, .S = S, .D = D};
    pool_run(cpu_of(x)->pool, T, 4, mix_range, &J);
}

static void add_range(void *ctx, int64_t t0, int64_t t1, int th) {
    (void)th;
    const tok_job *J = ctx;
    ref_hc_add(J->y + t0 * J->S * J->D, J->a + t0 * J->D, J->b + t0 * J->S, (int)(t1 - t0), J->S, J->D);
}

void cpu_hc_add(exec *x, float *X, const float *y, const float *inj, int T, int S, int D) {
    OP(x);
    tok_job J = {.a = y, .b = inj, .y = X, .S = S, .D = D};
    pool_run(cpu_of(x)->pool, T, 4, add_range, &J);
}

static void gate_range(void *ctx, int64_t t0, int64_t t1, int th) {
    (void)th;
    const tok_job *J = ctx;
    const int64_t o = t0 * J->S * J->D;
    ref_ple_gate(J->a + o, J->b + o, J->c + t0 * J->D, J->y + o, (int)(t1 - t0), J->S, J->D);
}

void cpu_ple_gate(exec *x, const float *key, const float *query, const float *v, float *out, int T, int S, int D) {
    OP(x);
    tok_job J = {.a = key, .b = query, .c = v, .y = out, .S = S, .D = D};
    pool_run(cpu_of(x)->pool, T, 4, gate_range, &J);
}

void cpu_conv1d_dilated_silu(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch, int K,
                             int dil) {
    OP(x);
    ref_conv1d_dilated_silu(in, state, (const float *)w->data, y, T, Ch, K, dil);
}

void cpu_ngram_rows(exec *x, const int32_t *ids, float *hist, int32_t *rows, int T, const ngram_hash *h) {
    OP(x);
    ref_ngram_rows(ids, hist, rows, T, h);
}

void cpu_qsa_block_keys(exec *x, const float *raw, float *blk, int b0, int b1, int c, int D, const weight *w,
                        float eps, const rope_params *rp) {
    OP(x);
    ref_qsa_block_keys(raw, blk, b0, b1, c, D, (const float *)w->data, eps, rp);
}

/* ---------------------------------------------------------------- QSA selection */

/* a block that ranks below another: a lower score, or an equal score and a higher index */
static bool worse(float sa, int a, float sb, int b) { return sa < sb || (sa == sb && a > b); }

typedef struct sel_job {
    const float *q, *blk;
    const int32_t *qpos;
    int32_t *sel;
    int Hi, D, c, n_sel;
    float *scratch; /* per thread (or per block range): n_sel scores + n_sel ids (as floats' bits) */
    int64_t per_thread;
    int64_t t;      /* split form: the token whose blocks are split */
    int n_parts;    /* split form: block ranges */
    int *part_n;    /* split form: entries in each range's heap */
} sel_job;

/* block kb's score for the query rows q[Hi][D]: the sum over heads of relu(q_h . kb), each dot product a
 * chain in d order (ref_qsa_select's arithmetic, so the same bits). Four heads' chains run side by side in
 * registers, which hides the add latency that one chain at a time waits on; the relus are summed in head
 * order afterwards. */
static float block_score(const float *q, const float *kb, int Hi, int D) {
    float s = 0;
    int h = 0;
    for (; h + 4 <= Hi; h += 4) {
        const float *q0 = q + (int64_t)h * D, *q1 = q0 + D, *q2 = q1 + D, *q3 = q2 + D;
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int d = 0; d < D; d++) {
            const float k = kb[d];
            a0 += q0[d] * k, a1 += q1[d] * k, a2 += q2[d] * k, a3 += q3[d] * k;
        }
        s += a0 > 0 ? a0 : 0;
        s += a1 > 0 ? a1 : 0;
        s += a2 > 0 ? a2 : 0;
        s += a3 > 0 ? a3 : 0;
    }
    for (; h < Hi; h++) {
        const float *qh = q + (int64_t)h * D;
        float dot = 0;
        for (int d = 0; d < D; d++) dot += qh[d] * kb[d];
        s += dot > 0 ? dot : 0;
    }
    return s;
}

/* offers (s, b) to the min-heap hs / hi of at most k entries (n of them), the worst at the root */
static void heap_offer(float *hs, int32_t *hi, int *n, int k, float s, int32_t b) {
    int i;
    if (*n < k) {
        i = (*n)++;
        for (; i > 0 && worse(s, b, hs[(i - 1) / 2], hi[(i - 1) / 2]); i = (i - 1) / 2)
            hs[i] = hs[(i - 1) / 2], hi[i] = hi[(i - 1) / 2];
    } else {
        if (!worse(hs[0], hi[0], s, b)) return;
        for (i = 0;;) { /* sift the new entry down from the root */
            int l = 2 * i + 1, m = l;
            if (l >= k) break;
            if (l + 1 < k && worse(hs[l + 1], hi[l + 1], hs[l], hi[l])) m = l + 1;
            if (!worse(hs[m], hi[m], s, b)) break;
            hs[i] = hs[m], hi[i] = hi[m], i = m;
        }
    }
    hs[i] = s, hi[i] = b;
}

/* st[0..k) = the k ids of the heap in ascending block order (an insertion sort: k is small next to nb) */
static void heap_ids_sorted(const int32_t *hi, int32_t *st, int k) {
    for (int i = 0; i < k; i++) st[i] = hi[i];
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && st[j - 1] > st[j]; j--) {
            int32_t tmp = st[j];
            st[j] = st[j - 1], st[j - 1] = tmp;
        }
}

/* token t's blocks [b0, b1) scored into the heap hs / hi of at most J->n_sel entries; returns its size */
static int score_blocks(const sel_job *J, int64_t t, int b0, int b1, float *hs, int32_t *hi) {
    int n = 0;
    for (int b = b0; b < b1; b++)
        heap_offer(hs, hi, &n, J->n_sel, block_score(J->q + t * J->Hi * J->D, J->blk + (int64_t)b * J->D, J->Hi, J->D),
                   b);
    return n;
}

/* one token a range item: its blocks scored and its best n_sel kept, on one thread */
static void sel_range(void *ctx, int64_t t0, int64_t t1, int th) {
    const sel_job *J = ctx;
    float *hs = J->scratch + th * J->per_thread;
    int32_t *hi = (void *)(hs + J->n_sel); /* the scratch's int half */
    for (int64_t t = t0; t < t1; t++) {
        int32_t *st = J->sel + t * J->n_sel;
        const int nb = (J->qpos[t] + 1) / J->c, k = J->n_sel;
        for (int i = 0; i < k; i++) st[i] = i < nb ? i : -1;
        if (nb <= k) continue;
        score_blocks(J, t, 0, nb, hs, hi);
        heap_ids_sorted(hi, st, k);
    }
}

/* the split form (fewer tokens than threads: a decode step): part p of J->n_parts scores its share of
 * token J->t's blocks into its own heap (region p of the scratch) */
static void sel_part(void *ctx, int64_t p0, int64_t p1, int th) {
    (void)th;
    const sel_job *J = ctx;
    const int nb = (J->qpos[J->t] + 1) / J->c;
    for (int64_t p = p0; p < p1; p++) {
        float *hs = J->scratch + p * J->per_thread;
        int32_t *hi = (void *)(hs + J->n_sel);
        J->part_n[p] = score_blocks(J, J->t, (int)(nb * p / J->n_parts), (int)(nb * (p + 1) / J->n_parts), hs, hi);
    }
}

void cpu_qsa_select(exec *x, const float *q, const float *blk, const int32_t *qpos, int32_t *sel, int T, int Hi,
                    int D, int c, int n_sel) {
    OP(x);
    cpu_exec *ce = cpu_of(x);
    const int nt = pool_n_threads(ce->pool);
    const int64_t per = 2LL * n_sel + 16;
    /* nt regions (a thread's heap, or a block range's), and one more for the split form's merge */
    float *sc = cbuf_get(x, &ce->qsa, sizeof(float) * (size_t)(per * (nt + 1)), "QSA selection scratch");
    if (!sc) return;
    sel_job J = {q, blk, qpos, sel, Hi, D, c, n_sel, sc, per, 0, nt, NULL};
    if (T >= nt || nt == 1) {
        pool_run(ce->pool, T, 1, sel_range, &J);
        return;
    }
    /* fewer tokens than threads: each token's blocks split over the threads, each range keeping its best
     * n_sel; the union of the ranges' bests holds the token's best n_sel, picked by the same total order
     * (score, then lower index), so the selection does not depend on the split */
    int part_n[64] = {0}; /* each written by its part (sel_part) */
    J.n_parts = nt < 64 ? nt : 64, J.part_n = part_n;
    float *ms = sc + (int64_t)nt * per;
    int32_t *mi = (void *)(ms + n_sel);
    for (int t = 0; t < T; t++) {
        int32_t *st = sel + (int64_t)t * n_sel;
        const int nb = (qpos[t] + 1) / c;
        for (int i = 0; i < n_sel; i++) st[i] = i < nb ? i : -1;
        if (nb <= n_sel) continue;
        J.t = t;
        pool_run(ce->pool, J.n_parts, 1, sel_part, &J);
        int n = 0;
        for (int p = 0; p < J.n_parts; p++) {
            const float *hs = sc + p * per;
            const int32_t *hi = (const void *)(hs + n_sel);
            for (int i = 0; i < part_n[p]; i++) heap_offer(ms, mi, &n, n_sel, hs[i], hi[i]);
        }
        heap_ids_sorted(mi, st, n_sel);
    }
}

/* ---------------------------------------------------------------- sparse attention */

typedef struct sp_job {
    const float *q;
    const char *k, *v;
    enum qtype tk, tv;
    quant_to_float_fn k_to_float, v_to_float;
    size_t krow, vrow, khead, vhead; /* bytes of a cache row, of one head (0: a head is not whole blocks) */
    float *out;
    const int32_t *qpos, *sel;
    int Hq, Hkv, D, c, n_sel, n_keys;
    float scale;
    float *scratch;
    int64_t per_thread;
} sp_job;

/* head kvh of cache row r as floats: F32 in place; else the head's D values converted (hb, its bytes), or
 * the whole row of W values when a head is not a whole number of the type's blocks (hb == 0) */
static inline const float *cache_head(const char *base, enum qtype t, quant_to_float_fn f, size_t rb, size_t hb, int r,
                                      int kvh, int D, int W, float *buf) {
    const char *p = base + (size_t)r * rb;
    if (t == QT_F32) return (const float *)(const void *)p + (size_t)kvh * D;
    if (hb) {
        f(p + (size_t)kvh * hb, buf, D);
        return buf;
    }
    f(p, buf, W);
    return buf + (size_t)kvh * D;
}

/* items [i0, i1) of T x Hq, item i = (token i / Hq, head i % Hq): its keys (the selected blocks, then the
 * query's own block up to it), scores, a two-pass softmax, P.V. An item reads only its own query, selection
 * and the cache, so a token's result does not depend on the batch or on how items fall to threads. */
HOT static void sp_range(void *ctx, int64_t i0, int64_t i1, int th) {
    const sp_job *J = ctx;
    const int D = J->D, W = J->Hkv * D, g = J->Hq / J->Hkv, nk = J->n_keys;
    float *sc = J->scratch + th * J->per_thread; /* [n_keys] one head's scores */
    float *buf = sc + nk;                        /* one converted cache row (or head) */
    int32_t *rows = (void *)(buf + W);           /* [n_keys] the key rows */
    int64_t t_rows = -1;
    int n = 0;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t t = i / J->Hq;
        const int h = (int)(i % J->Hq), kvh = h / g;
        if (t != t_rows) { /* the token's key rows, once per run of its heads */
            const int p = J->qpos[t], nb = (p + 1) / J->c;
            const int32_t *st = J->sel + t * J->n_sel;
            n = 0;
            for (int s = 0; s < J->n_sel; s++)
                if (st[s] >= 0)
                    for (int r = st[s] * J->c; r < (st[s] + 1) * J->c; r++) rows[n++] = r;
            for (int r = nb * J->c; r <= p; r++) rows[n++] = r;
            t_rows = t;
        }
        const float *qh = J->q + (t * J->Hq + h) * D;
        float mx = -INFINITY;
        for (int j = 0; j < n; j++) {
            const float *kh = cache_head(J->k, J->tk, J->k_to_float, J->krow, J->khead, rows[j], kvh, D, W, buf);
            v16sf acc = {0};
            int d = 0;
            for (; d + 16 <= D; d += 16) acc += v16_load(qh + d) * v16_load(kh + d);
            float dot = v16_hsum(acc);
            for (; d < D; d++) dot += qh[d] * kh[d];
            sc[j] = dot * J->scale;
            mx = sc[j] > mx ? sc[j] : mx;
        }
        const float inv = 1.0f / vexp_shift_sum(sc, n, mx);
        float *oh = J->out + (t * J->Hq + h) * D;
        memset(oh, 0, sizeof(float) * (size_t)D);
        for (int j = 0; j < n; j++) {
            const float *vh = cache_head(J->v, J->tv, J->v_to_float, J->vrow, J->vhead, rows[j], kvh, D, W, buf);
            const float pw = sc[j] * inv;
            for (int d = 0; d < D; d++) oh[d] += pw * vh[d];
        }
    }
}

void cpu_attention_sparse(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv,
                          float *out, const int32_t *qpos, const int32_t *sel, int T, int Hq, int Hkv, int D,
                          float scale, int c, int n_sel) {
    OP(x);
    cpu_exec *ce = cpu_of(x);
    const int nt = pool_n_threads(ce->pool), nk = n_sel * c + c;
    const int64_t W = (int64_t)Hkv * D, per = 2LL * nk + W + 16;
    float *sc = cbuf_get(x, &ce->qsa, sizeof(float) * (size_t)(per * nt), "sparse attention scratch");
    if (!sc) return;
    const size_t kh = D % qtype_get(tk)->blck ? 0 : qtype_row_bytes(tk, D);
    const size_t vh = D % qtype_get(tv)->blck ? 0 : qtype_row_bytes(tv, D);
    sp_job J = {.q = q, .k = k, .v = v, .tk = tk, .tv = tv, .k_to_float = quant_ops_best(tk).to_float,
                .v_to_float = quant_ops_best(tv).to_float, .krow = qtype_row_bytes(tk, W),
                .vrow = qtype_row_bytes(tv, W), .khead = kh, .vhead = vh, .out = out, .qpos = qpos, .sel = sel,
                .Hq = Hq, .Hkv = Hkv, .D = D, .c = c, .n_sel = n_sel, .n_keys = nk, .scale = scale, .scratch = sc,
                .per_thread = per};
    /* one item a (token, head): a decode step's heads spread over the threads */
    pool_run(ce->pool, (int64_t)T * Hq, 1, sp_range, &J);
}

/* The scratch the ops above need for a plan (floats). */
int64_t cpu_qsa_scratch(const exec_plan *p, int n_threads) {
    if (!p->qsa_keys) return 0;
    const int64_t nk = p->qsa_keys + 1;
    /* sparse attention: a head's scores and key rows (2 nk) and one converted cache row (<= heads x d) a
     * thread; the selection's 2 n_sel + 16 a thread and one more such region (its merge) fit in that */
    return (int64_t)n_threads * (2 * nk + (int64_t)p->qsa_heads * p->attn_d + 32) + 2 * nk + 32;
}
