/* cpu_backend: the reference backend's device (weights point into the GGUF mapping, memory is host
 * memory) and executor (a thread pool and the scratch its ops need, sized once from the plan).
 * Matmuls run on the executor's pool with activations quantized to the weight type's vec_dot_type (as
 * llama.cpp pairs them), in two kernel families chosen per row from the pass's structure (BULK_MIN_ROWS,
 * cpu_impl.h): bulk rows through the int8 matrix products of quant/gemm.h (weight panels unpacked once,
 * then every bulk token), the others through the quant module's row-by-row dot products (vec_dot8p /
 * vec_dot8 / vec_dotn / vec_dot4 / vec_dot, bit-identical to each other); or, in `exact` mode, on f32
 * (weight rows dequantized, activations kept in f32, double accumulation) for reference runs. The other
 * ops are in cpu_exec_ops.c. */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_impl.h"
#include "backends/cpu/cpu_ops.h"
#include "quant/gemm.h"
#include "quant/quant.h"

typedef struct mm_job {
    const weight *w;
    const char *wbase;     /* the expert's first row */
    size_t wrow;           /* bytes per weight row */
    const float *x;        /* [T][ne0] */
    const char *xq;        /* [T][xrow] quantized activations */
    size_t xrow;
    float *y;              /* [T][ne1] */
    int T;
    quant_ops ops;
    float *rowbuf;         /* exact mode */
    int64_t rowbuf_stride;
    const int32_t *rows;   /* the rows the row-by-row kernels compute (ascending), n_rows of them */
    int n_rows;
    const int32_t *gstart; /* NULL, or per index of rows: the packed group of 8 starting there, or -1 */
    const int32_t *gfirst; /* [n_groups]: the index in rows each group starts at */
    char *packs;           /* [n_groups][pack_bytes] */
    size_t pack_bytes;
    quant_pack8_fn pack8;
    /* bulk rows: the int8 matrix products */
    const int32_t *brows;  /* [n_bulk] ascending */
    int n_bulk;
    gemm_acts acts;
    gemm_run_fn run;
    char *panels;
    size_t panel_stride;
} mm_job;

/* quantize activation rows [t0, t1) */
static void mm_quantize(void *ctx, int64_t t0, int64_t t1, int thread) {
    (void)thread;
    mm_job *j = ctx;
    const quant_ops *a = quant_ops_get(j->ops.vec_dot_type, quant_isa_best());
    quant_from_float_fn from = a && a->from_float ? a->from_float : quant_ops_get(j->ops.vec_dot_type, QUANT_ISA_SCALAR)->from_float;
    for (int64_t t = t0; t < t1; t++)
        from(j->x + t * j->w->ne[0], (void *)(j->xq + t * j->xrow), j->w->ne[0]);
}

/* Output rows [r0, r1) for the job's row list. Tokens go in tiles, rows inside a tile: the tile's
 * quantized activations stay in L2 while the thread's weight rows stream past once per tile. Rows outer
 * (every row re-reading all T activation rows) and small tiles (weights re-streamed from L3 per 16
 * tokens) both measured ~55 GMAC/s for a 1024 x 3584 Q4_K matrix at T = 512 on one Zen 4 core; tiles of
 * ~256 KB of activations measured 80. A run of consecutive rows (one sequence's span, or sequences
 * decoded side by side) shares each weight-row pass: eight packed rows (vec_dot8p) or eight (vec_dot8),
 * else the whole run up to QUANT_DOTN_MAX (vec_dotn: a speculative verification of 2-9 tokens), else
 * four (vec_dot4), else one. */
#define MM_TILE_BYTES (256 << 10)
static void mm_rowwise(void *ctx, int64_t r0, int64_t r1, int thread) {
    (void)thread;
    mm_job *j = ctx;
    int64_t n = j->w->ne[0], ne1 = j->w->ne[1];
    int tile = (int)(MM_TILE_BYTES / j->xrow) & ~7; /* whole groups of eight in a tile */
    tile = tile < 16 ? 16 : tile > 256 ? 256 : tile;
    const int32_t *L = j->rows;
    for (int i0 = 0; i0 < j->n_rows; i0 += tile) {
        int i1 = i0 + tile < j->n_rows ? i0 + tile : j->n_rows;
        for (int64_t r = r0; r < r1; r++) {
            const void *wr = j->wbase + r * j->wrow;
            int i = i0;
            while (i < i1) {
                const int t = L[i];
                if (j->gstart && j->gstart[i] >= 0 && i + 8 <= i1) { /* a packed group: same bits again */
                    float s8[8];
                    j->ops.vec_dot8p(n, s8, wr, j->packs + (size_t)j->gstart[i] * j->pack_bytes);
                    for (int q = 0; q < 8; q++) j->y[(t + q) * ne1 + r] = s8[q];
                    i += 8;
                    continue;
                }
                int run = 1; /* consecutive rows from t, as many as one call takes */
                while (run < QUANT_DOTN_MAX && i + run < i1 && L[i + run] == t + run) run++;
                if (j->ops.vec_dot8 && run >= 8) { /* same bits as one at a time */
                    float s8[8];
                    j->ops.vec_dot8(n, s8, wr, j->xq + t * j->xrow, j->xrow);
                    for (int q = 0; q < 8; q++) j->y[(t + q) * ne1 + r] = s8[q];
                    i += 8;
                } else if (j->ops.vec_dotn && run >= 2) { /* the whole run in one pass over the weight row */
                    float sn[QUANT_DOTN_MAX];
                    j->ops.vec_dotn(n, sn, wr, j->xq + t * j->xrow, j->xrow, run);
                    for (int q = 0; q < run; q++) j->y[(t + q) * ne1 + r] = sn[q];
                    i += run;
                } else if (j->ops.vec_dot4 && run >= 4) {
                    float s4[4];
                    j->ops.vec_dot4(n, s4, wr, j->xq + t * j->xrow, j->xrow);
                    for (int q = 0; q < 4; q++) j->y[(t + q) * ne1 + r] = s4[q];
                    i += 4;
                } else {
                    j->ops.vec_dot(n, &j->y[t * ne1 + r], wr, j->xq + t * j->xrow);
                    i++;
                }
            }
        }
    }
}

/* packed groups [g0, g1) of eight consecutive rows (vec_dot8p) */
static void mm_pack8(void *ctx, int64_t g0, int64_t g1, int thread) {
    (void)thread;
    mm_job *j = ctx;
    for (int64_t g = g0; g < g1; g++)
        j->pack8(j->w->ne[0], j->xq + (size_t)j->rows[j->gfirst[g]] * j->xrow, j->xrow, j->packs + (size_t)g * j->pack_bytes);
}

/* bulk rows: gather their activations into the int8 products' layout, tokens [i0, i1) of the list */
static void mm_acts(void *ctx, int64_t i0, int64_t i1, int thread) {
    (void)thread;
    mm_job *j = ctx;
    gemm_acts_fill_rows(&j->acts, j->ops.vec_dot_type, j->xq, j->xrow, j->brows, (int)i0, (int)i1, j->ops.u8.off);
}

/* bulk rows: panels [p0, p1) of GEMM_PANEL weight rows, each unpacked once and run against every bulk
 * token */
static void mm_panels(void *ctx, int64_t p0, int64_t p1, int thread) {
    mm_job *j = ctx;
    const int64_t K = j->w->ne[0], ne1 = j->w->ne[1];
    char *buf = j->panels + (size_t)thread * j->panel_stride;
    gemm_panel p;
    gemm_panel_init(&p, buf, K, j->ops.u8.sb, j->ops.u8.has_min);
    void *tmp = buf + gemm_panel_bytes(K, j->ops.u8.sb);
    for (int64_t pi = p0; pi < p1; pi++) {
        const int64_t r0 = pi * GEMM_PANEL;
        const int nr = (int)(ne1 - r0 < GEMM_PANEL ? ne1 - r0 : GEMM_PANEL);
        gemm_pack(&j->ops, j->wbase + r0 * j->wrow, j->wrow, nr, &p, tmp);
        j->run(&p, &j->acts, 0, j->n_bulk, j->brows, j->y + r0, ne1);
    }
}

static void mm_rows_exact(void *ctx, int64_t r0, int64_t r1, int thread) {
    mm_job *j = ctx;
    int64_t n = j->w->ne[0], ne1 = j->w->ne[1];
    float *row = j->rowbuf + thread * j->rowbuf_stride;
    for (int64_t r = r0; r < r1; r++) {
        j->ops.to_float(j->wbase + r * j->wrow, row, n);
        for (int t = 0; t < j->T; t++) {
            const float *xt = j->x + t * n;
            double acc = 0;
            for (int64_t i = 0; i < n; i++) acc += (double)row[i] * xt[i];
            j->y[t * ne1 + r] = (float)acc;
        }
    }
}

void cpu_mm(exec *ex, const weight *w, int expert, const float *x, float *y, int T, const uint8_t *bulk) {
    cpu_exec *c = cpu_of(ex);
    mm_job j = {.w = w, .x = x, .y = y, .T = T, .ops = quant_ops_best(w->type)};
    j.wrow = qtype_row_bytes(w->type, w->ne[0]);
    j.wbase = (const char *)w->data + (size_t)expert * j.wrow * (size_t)w->ne[1];
    int nt = pool_n_threads(c->pool);
    if (ex->status || T <= 0) return;
    if (c->d->exact || !j.ops.vec_dot) {
        if (!(j.rowbuf = cbuf_get(ex, &c->rowbuf, sizeof(float) * (size_t)w->ne[0] * (size_t)nt, "matmul row buffer")))
            return;
        j.rowbuf_stride = w->ne[0];
        pool_run(c->pool, w->ne[1], 8, mm_rows_exact, &j);
        return;
    }
    /* split the rows: bulk ones to the int8 matrix products where this type and CPU have them */
    int32_t *rows = cbuf_get(ex, &c->rows, sizeof(int32_t) * (size_t)T, "matmul row list");
    if (!rows) return;
    int nb = 0;
    j.run = bulk ? gemm_run_best(w->type) : NULL;
    if (j.run)
        for (int t = 0; t < T; t++)
            if (bulk[t]) rows[nb++] = t;
    j.brows = rows;
    j.n_bulk = nb;
    j.rows = rows + nb;
    for (int t = 0; t < T; t++)
        if (!(nb && bulk[t])) rows[nb + j.n_rows++] = t;
    if (j.ops.vec_dot_type == QT_F32) {
        j.xq = (const char *)x;
        j.xrow = sizeof(float) * (size_t)w->ne[0];
    } else {
        j.xrow = qtype_row_bytes(j.ops.vec_dot_type, w->ne[0]);
        if (!(j.xq = cbuf_get(ex, &c->xq, j.xrow * (size_t)T, "quantized activations"))) return;
        pool_run(c->pool, T, 1, mm_quantize, &j);
    }
    if (nb) {
        const int64_t K = w->ne[0];
        const int sb = j.ops.u8.sb, ag = gemm_act_group(j.ops.vec_dot_type, sb);
        j.panel_stride = gemm_panel_bytes(K, sb) + gemm_pack_scratch_bytes(K, sb);
        char *acts = cbuf_get(ex, &c->acts, gemm_acts_bytes(K, sb, ag, nb) + 64, "int8 activations");
        char *panels = cbuf_get(ex, &c->panels, j.panel_stride * (size_t)nt + 64, "weight panels");
        if (!acts || !panels) return;
        gemm_acts_layout(&j.acts, acts + (-(uintptr_t)acts & 63), j.ops.vec_dot_type, K, sb, nb);
        j.panels = panels + (-(uintptr_t)panels & 63);
        pool_run(c->pool, nb, 1, mm_acts, &j);
        /* a panel's results do not depend on the thread that computes it: balance dynamically */
        pool_run_dynamic(c->pool, (w->ne[1] + GEMM_PANEL - 1) / GEMM_PANEL, 1, mm_panels, &j);
    }
    if (j.ops.vec_dot8p && j.n_rows >= 8) {
        /* groups of eight consecutive rows (batched decode, short prompts) packed once for vec_dot8p */
        j.pack8 = quant_ops_best(j.ops.vec_dot_type).pack8;
        if (j.pack8) {
            int32_t *gs = cbuf_get(ex, &c->gstart, sizeof(int32_t) * (size_t)j.n_rows * 2, "row groups");
            if (!gs) return;
            int32_t *gf = gs + j.n_rows;
            int ng = 0;
            for (int i = 0; i < j.n_rows;) {
                if (i + 8 <= j.n_rows && j.rows[i + 7] == j.rows[i] + 7) {
                    for (int q = 0; q < 8; q++) gs[i + q] = -1;
                    gs[i] = ng;
                    gf[ng++] = i;
                    i += 8;
                } else {
                    gs[i++] = -1;
                }
            }
            j.pack_bytes = quant_pack8_bytes(w->ne[0]);
            if (ng) {
                if (!(j.packs = cbuf_get(ex, &c->packs, j.pack_bytes * (size_t)ng, "packed row groups"))) return;
                j.gstart = gs;
                j.gfirst = gf;
                pool_run(c->pool, ng, 1, mm_pack8, &j);
            }
        }
    }
    if (j.n_rows) pool_run(c->pool, w->ne[1], 16, mm_rowwise, &j);
}

void *cbuf_get(exec *x, cbuf *b, size_t need, const char *what) {
    if (need <= b->cap) return b->p;
    exec_fail(x, ERR_NOMEM, "%s: %zu bytes needed, %zu planned (a pass larger than the context's plan)", what, need,
              b->cap);
    return NULL;
}

/* ---------------------------------------------------------------- the pass and the matmul ops */

void cpu_begin_pass(exec *x, const pass_span *spans, int n_spans) {
    x->stats.n_ops++;
    pass_rows_begin(x, &cpu_of(x)->pr, spans, n_spans);
}

void cpu_matmul(exec *x, const weight *w, int expert, const float *in, float *y, int T, mm_rows rows) {
    x->stats.n_ops++;
    const uint8_t *bulk;
    if (!pass_rows_family(x, &cpu_of(x)->pr, w->name, T, rows, &bulk)) return;
    cpu_mm(x, w, expert, in, y, T, bulk);
}

/* One call per expert set: each expert's routed rows are gathered, run as one matmul, scattered back. An
 * expert's rows are bulk where their sequence sends it enough rows (a few rows of a long prompt would pay
 * a panel unpacking each); the count depends on the sequence alone, not on the batch. */
void cpu_matmul_experts(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                               float *y, int T) {
    cpu_exec *c = cpu_of(x);
    x->stats.n_ops++;
    if (x->status) return;
    if (T != c->pr.T) {
        exec_fail(x, ERR_ARG, "matmul_experts '%s' over %d rows; the pass has %d", w->name, T, c->pr.T);
        return;
    }
    const int64_t n_in = w->ne[0], n_outc = w->ne[1];
    const int E = (int)w->ne[2];
    int32_t *rows = cbuf_get(x, &c->erows, sizeof(int32_t) * (size_t)T, "expert rows");
    uint8_t *eb = cbuf_get(x, &c->ebulk, (size_t)T, "expert bulk flags");
    float *xe = cbuf_get(x, &c->xe, sizeof(float) * (size_t)T * (size_t)n_in, "expert inputs");
    float *ye = cbuf_get(x, &c->ye, sizeof(float) * (size_t)T * (size_t)n_outc, "expert outputs");
    if (!rows || !eb || !xe || !ye) return;
    for (int ex = 0; ex < E; ex++) {
        int n = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++)
                if (sel[t * K + j] == ex) rows[n++] = t * K + j; /* an expert appears once per token */
        if (!n) continue;
        memset(c->count, 0, sizeof(int32_t) * (size_t)c->pr.n_spans);
        for (int r = 0; r < n; r++) c->count[c->pr.span_of[rows[r] / K]]++;
        for (int r = 0; r < n; r++) {
            const int64_t src = in_per_slot ? rows[r] : rows[r] / K;
            memcpy(xe + (int64_t)r * n_in, in + src * n_in, sizeof(float) * (size_t)n_in);
            eb[r] = c->count[c->pr.span_of[rows[r] / K]] >= BULK_MIN_ROWS;
        }
        cpu_mm(x, w, ex, xe, ye, n, eb);
        for (int r = 0; r < n; r++)
            memcpy(y + (int64_t)rows[r] * n_outc, ye + (int64_t)r * n_outc, sizeof(float) * (size_t)n_outc);
    }
}

/* ---------------------------------------------------------------- device */

static void *cpu_alloc(backend *b, size_t bytes) {
    (void)b;
    return bytes ? calloc(1, bytes) : NULL;
}
static void cpu_free(backend *b, void *p) {
    (void)b;
    free(p);
}

static int cpu_weight_init(backend *b, weight *w, const gguf_tensor *t, err *e) {
    cpu_dev *d = b->impl;
    const quant_ops *q = quant_ops_get((enum qtype)t->type, QUANT_ISA_SCALAR);
    if (!q || !q->to_float)
        return err_set(e, ERR_UNSUPPORTED, "tensor '%s': type %u is not supported by the cpu backend",
                       t->name, t->type);
    w->name = t->name;
    w->type = (enum qtype)t->type;
    w->n_dims = (int)t->n_dims;
    for (int i = 0; i < 4; i++) w->ne[i] = t->ne[i];
    w->nbytes = t->nbytes;
    w->data = t->data;
    if (t->ne[0] > d->max_in) d->max_in = t->ne[0];
    if (t->n_dims >= 3 && t->ne[2] > 1 && t->ne[1] > d->max_expert_out) d->max_expert_out = t->ne[1];
    return 0;
}

void cpu_exec_destroy(exec *x) {
    if (!x) return;
    cpu_exec *c = x->impl;
    if (c) {
        pool_free(c->pool);
        cbuf *bufs[] = {&c->xq, &c->rows, &c->acts, &c->panels, &c->gstart, &c->packs, &c->rowbuf,
                        &c->xe, &c->ye, &c->erows, &c->ebulk, &c->scratch, &c->qsa};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]->p);
        pass_rows_free(&c->pr);
        free(c->count);
        free(c);
    }
    free(x);
}

/* Sizes every scratch buffer for the plan's worst call: R rows of the widest input (K); the int8
 * products' activations and panels at the smallest sub-block (16), which needs the most bytes. */
static exec *cpu_exec_new(backend *b, const exec_plan *plan, err *e) {
    cpu_dev *d = b->impl;
    exec *x = calloc(1, sizeof *x);
    cpu_exec *c = calloc(1, sizeof *c);
    size_t total = 0;
    if (!x || !c) goto oom;
    x->dev = b, x->ops = &cpu_exec_ops, x->impl = c;
    c->d = d;
    c->plan = *plan;
    const int nt = plan->n_threads > 0 ? plan->n_threads : d->n_threads;
    const int64_t K = plan->max_in > d->max_in ? plan->max_in : d->max_in > 0 ? d->max_in : 1;
    const int maxT = plan->max_tokens > 0 ? plan->max_tokens : 1;
    c->plan.max_tokens = maxT;
    if (pass_rows_init(&c->pr, &c->plan, BULK_MIN_ROWS)) goto oom;
    const size_t R = (size_t)c->pr.R, sb = 16;
    if (!(c->pool = pool_new(nt))) goto oom;
    c->count = malloc(sizeof(int32_t) * (size_t)maxT);
    if (!c->count) goto oom;
    const size_t xrow = 2 * (size_t)K + 64; /* quantized row bytes: at most 2 per value (f16 / bf16) */
    const size_t ng = R / 8 + 1;
    const int64_t ex_out = d->max_expert_out;
    struct { cbuf *b; size_t n; } want[] = {
        {&c->xq, xrow * R},
        {&c->rows, sizeof(int32_t) * R},
        {&c->acts, gemm_acts_bytes(K, (int)sb, 1, (int)R) + 64},
        {&c->panels, (gemm_panel_bytes(K, (int)sb) + gemm_pack_scratch_bytes(K, (int)sb)) * (size_t)nt + 64},
        {&c->gstart, sizeof(int32_t) * 2 * R},
        {&c->packs, quant_pack8_bytes(K) * ng},
        {&c->rowbuf, sizeof(float) * (size_t)K * (size_t)nt},
        {&c->xe, plan->moe_k ? sizeof(float) * (size_t)maxT * (size_t)K : 0},
        {&c->ye, plan->moe_k ? sizeof(float) * (size_t)maxT * (size_t)ex_out : 0},
        {&c->erows, plan->moe_k ? sizeof(int32_t) * (size_t)maxT : 0},
        {&c->ebulk, plan->moe_k ? (size_t)maxT : 0},
        {&c->qsa, sizeof(float) * (size_t)cpu_qsa_scratch(plan, nt)},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        total += want[i].n;
        if (want[i].n && !(want[i].b->p = malloc(want[i].n))) goto oom;
        want[i].b->cap = want[i].n;
    }
    int64_t sc = 0;
    if (plan->attn_d) sc = cpu_attention_scratch(nt, plan->attn_d);
    if (plan->gdn_dk) {
        int64_t g = cpu_gdn_scratch(nt, GDN_CHUNK, plan->gdn_dk, plan->gdn_dv);
        sc = g > sc ? g : sc;
    }
    total += sizeof(float) * (size_t)sc;
    if (sc && !(c->scratch.p = malloc(sizeof(float) * (size_t)sc))) goto oom;
    c->scratch.cap = sizeof(float) * (size_t)sc;
    return x;
oom:
    cpu_exec_destroy(x);
    if (!x) free(c);
    err_set(e, ERR_NOMEM, "cannot create a cpu executor: %.1f MiB of scratch for %d-token passes (%d threads)",
            (double)total / (1 << 20), plan->max_tokens, plan->n_threads);
    return NULL;
}

static void cpu_destroy(backend *b) {
    free(b->impl);
    free(b);
}

static const backend_ops cpu_backend_ops = {
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .weight_init = cpu_weight_init,
    .exec_new = cpu_exec_new,
};


backend *cpu_backend_new(int n_threads, bool exact, err *e) {
    backend *b = calloc(1, sizeof *b);
    cpu_dev *d = calloc(1, sizeof *d);
    if (!b || !d || n_threads < 1) {
        free(b);
        free(d);
        err_set(e, n_threads < 1 ? ERR_ARG : ERR_NOMEM, "cannot create the cpu backend with %d threads", n_threads);
        return NULL;
    }
    d->n_threads = n_threads;
    d->exact = exact;
    b->name = "cpu";
    b->ops = &cpu_backend_ops;
    b->impl = d;
    return b;
}
