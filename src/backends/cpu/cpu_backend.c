/* cpu_backend: the reference backend. Matmuls run on the thread pool with activations quantized to the
 * weight type's vec_dot_type (as llama.cpp pairs them), in two kernel families chosen per row by the
 * model's bulk flags (backend.h): bulk rows through the int8 matrix products of quant/gemm.h (weight
 * panels unpacked once, then every bulk token), the others through the quant module's row-by-row dot
 * products (vec_dot8p / vec_dot8 / vec_dot4 / vec_dot, bit-identical to each other); or, in `exact` mode,
 * on f32 (weight rows dequantized, activations kept in f32, double accumulation) for reference runs. The
 * other ops go to the fast kernels of cpu_elementwise.c, cpu_gdn.c and cpu_attention.c (tested against
 * the references of ops_ref.c) or to the references themselves where they are a small share of the time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/threadpool.h"
#include "quant/gemm.h"
#include "quant/quant.h"

typedef struct cpu {
    threadpool *pool;
    bool exact;
    void *xq;            /* activations quantized for the current matmul */
    size_t xq_cap;
    float *rowbuf;       /* exact mode: one dequantized row per thread */
    int64_t rowbuf_cap;  /* floats per thread */
    float *scratch;      /* attention scores / GDN chunk scratch */
    int64_t scratch_cap;
    /* bulk rows (quant/gemm.h): row lists, activations, and per thread a panel and its unpacking scratch */
    int32_t *rows;       /* [T]: bulk rows, then the other rows */
    size_t rows_cap;
    void *acts;
    size_t acts_cap;
    void *panels;        /* [n_threads][mm_job.panel_stride] */
    size_t panels_cap;
    /* row-by-row rows in groups of eight consecutive ones, packed for vec_dot8p */
    int32_t *gstart;     /* [T]: per row-list index, the group it starts, or -1 */
    size_t gstart_cap;
    void *packs;
    size_t packs_cap;
} cpu;

static cpu *impl(backend *b) { return b->impl; }

static float *cpu_alloc(backend *b, int64_t n) {
    (void)b;
    return n > 0 ? calloc((size_t)n, sizeof(float)) : NULL;
}
static void cpu_free(backend *b, float *p) {
    (void)b;
    free(p);
}
static void cpu_copy(backend *b, float *dst, const float *src, int64_t n) {
    (void)b;
    memmove(dst, src, (size_t)n * sizeof(float));
}
static void cpu_zero(backend *b, float *dst, int64_t n) {
    (void)b;
    memset(dst, 0, (size_t)n * sizeof(float));
}

static int cpu_weight_init(backend *b, weight *w, const gguf_tensor *t, err *e) {
    (void)b;
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
    return 0;
}

/* Grows a buffer to at least `need` bytes (outside any parallel region). */
static bool grow(void **buf, size_t *cap, size_t need) {
    if (*cap >= need) return true;
    void *p = realloc(*buf, need);
    if (!p) return false;
    *buf = p;
    *cap = need;
    return true;
}

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
 * ~256 KB of activations measured 80. Eight (four) tokens share a weight-row pass where eight (four)
 * consecutive rows are listed. */
#define MM_TILE_BYTES (256 << 10)
static void mm_rows(void *ctx, int64_t r0, int64_t r1, int thread) {
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
                } else if (j->ops.vec_dot8 && i + 8 <= i1 && L[i + 7] == t + 7) { /* same bits as one at a time */
                    float s8[8];
                    j->ops.vec_dot8(n, s8, wr, j->xq + t * j->xrow, j->xrow);
                    for (int q = 0; q < 8; q++) j->y[(t + q) * ne1 + r] = s8[q];
                    i += 8;
                } else if (j->ops.vec_dot4 && i + 4 <= i1 && L[i + 3] == t + 3) {
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

static void cpu_matmul(backend *b, const weight *w, int expert, const float *x, float *y, int T, const uint8_t *bulk) {
    cpu *c = impl(b);
    mm_job j = {.w = w, .x = x, .y = y, .T = T, .ops = quant_ops_best(w->type)};
    j.wrow = qtype_row_bytes(w->type, w->ne[0]);
    j.wbase = (const char *)w->data + (size_t)expert * j.wrow * (size_t)w->ne[1];
    int nt = pool_n_threads(c->pool);
    if (c->exact || !j.ops.vec_dot) {
        if (c->rowbuf_cap < w->ne[0]) {
            free(c->rowbuf);
            c->rowbuf = malloc(sizeof(float) * (size_t)w->ne[0] * (size_t)nt);
            c->rowbuf_cap = c->rowbuf ? w->ne[0] : 0;
        }
        if (!c->rowbuf) abort(); /* a few KB per thread: an OOM here leaves nothing to recover */
        j.rowbuf = c->rowbuf;
        j.rowbuf_stride = c->rowbuf_cap;
        pool_run(c->pool, w->ne[1], 8, mm_rows_exact, &j);
        return;
    }
    /* split the rows: bulk ones to the int8 matrix products where this type and CPU have them */
    if (!grow((void **)&c->rows, &c->rows_cap, sizeof(int32_t) * (size_t)T)) abort();
    int nb = 0;
    if (bulk && gemm_supported(w->type))
        for (int t = 0; t < T; t++)
            if (bulk[t]) c->rows[nb++] = t;
    j.brows = c->rows;
    j.n_bulk = nb;
    j.rows = c->rows + nb;
    for (int t = 0; t < T; t++)
        if (!(nb && bulk[t])) c->rows[nb + j.n_rows++] = t;
    if (j.ops.vec_dot_type == QT_F32) {
        j.xq = (const char *)x;
        j.xrow = sizeof(float) * (size_t)w->ne[0];
    } else {
        j.xrow = qtype_row_bytes(j.ops.vec_dot_type, w->ne[0]);
        if (!grow(&c->xq, &c->xq_cap, j.xrow * (size_t)T)) abort();
        j.xq = c->xq;
        pool_run(c->pool, T, 1, mm_quantize, &j);
    }
    if (nb) {
        const int64_t K = w->ne[0];
        const int sb = j.ops.u8.sb, ag = gemm_act_group(j.ops.vec_dot_type, sb);
        j.run = gemm_run_best();
        j.panel_stride = gemm_panel_bytes(K, sb) + gemm_pack_scratch_bytes(K, sb);
        if (!grow(&c->acts, &c->acts_cap, gemm_acts_bytes(K, sb, ag, nb) + 64) ||
            !grow(&c->panels, &c->panels_cap, j.panel_stride * (size_t)nt + 64))
            abort(); /* activation-sized scratch, as xq above */
        gemm_acts_layout(&j.acts, (char *)c->acts + (-(uintptr_t)c->acts & 63), j.ops.vec_dot_type, K, sb, nb);
        j.panels = (char *)c->panels + (-(uintptr_t)c->panels & 63);
        pool_run(c->pool, nb, 1, mm_acts, &j);
        /* a panel's results do not depend on the thread that computes it: balance dynamically */
        pool_run_dynamic(c->pool, (w->ne[1] + GEMM_PANEL - 1) / GEMM_PANEL, 1, mm_panels, &j);
    }
    if (j.ops.vec_dot8p && j.n_rows >= 8) {
        /* groups of eight consecutive rows (batched decode, short prompts) packed once for vec_dot8p */
        j.pack8 = quant_ops_best(j.ops.vec_dot_type).pack8;
        if (j.pack8) {
            if (!grow((void **)&c->gstart, &c->gstart_cap, sizeof(int32_t) * (size_t)j.n_rows * 2)) abort();
            int32_t *gs = c->gstart, *gf = c->gstart + j.n_rows;
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
            if (ng && grow(&c->packs, &c->packs_cap, j.pack_bytes * (size_t)ng)) {
                j.packs = c->packs;
                j.gstart = gs;
                j.gfirst = gf;
                pool_run(c->pool, ng, 1, mm_pack8, &j);
            } else if (ng) {
                abort(); /* activation-sized scratch, as xq above */
            }
        }
    }
    if (j.n_rows) pool_run(c->pool, w->ne[1], 16, mm_rows, &j);
}

static void cpu_get_rows(backend *b, const weight *w, const int32_t *ids, float *y, int T) {
    (void)b;
    const quant_ops *q = quant_ops_get(w->type, QUANT_ISA_SCALAR);
    size_t rb = qtype_row_bytes(w->type, w->ne[0]);
    for (int t = 0; t < T; t++) q->to_float((const char *)w->data + (size_t)ids[t] * rb, y + (int64_t)t * w->ne[0], w->ne[0]);
}

static void cpu_rms_norm(backend *b, const float *x, const weight *w, float *y, int T, int C, float eps) {
    cpu_rms_norm_rows(impl(b)->pool, x, w ? (const float *)w->data : NULL, y, T, C, eps);
}

static void cpu_rms_norm_heads(backend *b, float *x, const weight *w, int T, int H, int D, float eps) {
    cpu_rms_norm_rows(impl(b)->pool, x, w ? (const float *)w->data : NULL, x, (int64_t)T * H, D, eps);
}

static void cpu_add(backend *b, float *y, const float *x, int64_t n) {
    (void)b;
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

static void cpu_add_scaled(backend *b, float *y, const float *x, float s, int64_t n) {
    (void)b;
    for (int64_t i = 0; i < n; i++) y[i] += s * x[i];
}

static void cpu_swiglu(backend *b, const float *g, const float *u, float *y, int64_t n) {
    cpu_silu_mul(impl(b)->pool, g, u, y, n);
}

static void cpu_copy_cols(backend *b, float *dst, const float *src, int64_t rows, int64_t src_stride,
                          int64_t offset, int64_t n) {
    (void)b;
    for (int64_t r = 0; r < rows; r++) memcpy(dst + r * n, src + r * src_stride + offset, sizeof(float) * (size_t)n);
}

static void cpu_sigmoid_mul_op(backend *b, float *y, const float *gate, int64_t n) {
    cpu_sigmoid_mul(impl(b)->pool, y, gate, n);
}

/* l2 norm runs the reference on token ranges split over the pool (tokens are independent) */
typedef struct tok_job {
    float *x;
    int H, D;
    float eps, scale;
} tok_job;

static void l2_tokens(void *ctx, int64_t t0, int64_t t1, int thread) {
    (void)thread;
    tok_job *J = ctx;
    ref_l2_norm(J->x + t0 * J->H * J->D, (int)(t1 - t0), J->H, J->D, J->eps, J->scale);
}

static void cpu_rope_op(backend *b, float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                        const weight *factors) {
    cpu_rope(impl(b)->pool, x, pos, T, H, D, rp, factors ? (const float *)factors->data : NULL);
}

static void cpu_add_bias(backend *b, float *y, const weight *bias, int T, int N) {
    (void)b;
    ref_add_bias(y, bias->data, T, N);
}

static void cpu_geglu_op(backend *b, const float *g, const float *u, float *y, int64_t n) {
    cpu_geglu(impl(b)->pool, g, u, y, n);
}

static void cpu_scale(backend *b, float *y, float s, int64_t n) {
    (void)b;
    ref_scale(y, s, n);
}

static void cpu_l2_norm(backend *b, float *x, int T, int H, int D, float eps, float scale) {
    tok_job J = {.x = x, .H = H, .D = D, .eps = eps, .scale = scale};
    pool_run(impl(b)->pool, T, 8, l2_tokens, &J);
}

static float *scratch(cpu *c, int64_t n) {
    if (c->scratch_cap < n) {
        free(c->scratch);
        c->scratch = malloc(sizeof(float) * (size_t)n);
        c->scratch_cap = c->scratch ? n : 0;
        if (!c->scratch) abort();
    }
    return c->scratch;
}

static void cpu_attention_op(backend *b, const float *q, const float *k, const float *v, float *out,
                             const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale,
                             int window) {
    cpu *c = impl(b);
    int nt = pool_n_threads(c->pool);
    cpu_attention(c->pool, scratch(c, cpu_attention_scratch(nt, D)), q, k, v, out, qpos, kpos, T, S, Hq, Hkv, D, scale,
                  window);
}

static void cpu_conv1d_silu_op(backend *b, const float *x, float *state, const weight *w, float *y, int T, int Ch, int K) {
    if (cpu_conv1d_silu(impl(b)->pool, x, state, (const float *)w->data, y, T, Ch, K))
        ref_conv1d_silu(x, state, (const float *)w->data, y, T, Ch, K);
}

static void cpu_gdn_gates(backend *b, float *alpha_to_g, float *beta, const weight *ssm_a, const weight *dt_bias,
                          int T, int Hv) {
    (void)b;
    const float *A = ssm_a->data, *dt = dt_bias->data;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < Hv; j++) {
            float a = alpha_to_g[t * Hv + j] + dt[j];
            float sp = a > 20.0f ? a : log1pf(expf(a)); /* softplus, linear above 20 as torch's */
            alpha_to_g[t * Hv + j] = A[j] * sp;
            beta[t * Hv + j] = 1.0f / (1.0f + expf(-beta[t * Hv + j]));
        }
}

#define GDN_CHUNK 64

static void cpu_gdn_op(backend *b, float *S, const float *q, const float *k, const float *v, const float *g,
                    const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map) {
    cpu *c = impl(b);
    float *sc = scratch(c, cpu_gdn_scratch(pool_n_threads(c->pool), GDN_CHUNK, Dk, Dv));
    cpu_gdn(c->pool, sc, S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, GDN_CHUNK, map);
}

static void cpu_gated_norm(backend *b, float *o, const float *z, const weight *w, int T, int Hv, int Dv, float eps) {
    (void)b;
    const float *wd = w->data;
    cpu_rms_norm_rows(impl(b)->pool, o, wd, o, (int64_t)T * Hv, Dv, eps);
    cpu_swiglu(b, z, o, o, (int64_t)T * Hv * Dv);
}

static void cpu_destroy(backend *b);

static const backend_ops cpu_ops = {
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .weight_init = cpu_weight_init,
    .matmul = cpu_matmul,
    .get_rows = cpu_get_rows,
    .rms_norm = cpu_rms_norm,
    .rms_norm_heads = cpu_rms_norm_heads,
    .add = cpu_add,
    .add_scaled = cpu_add_scaled,
    .swiglu = cpu_swiglu,
    .copy_cols = cpu_copy_cols,
    .sigmoid_mul = cpu_sigmoid_mul_op,
    .rope = cpu_rope_op,
    .add_bias = cpu_add_bias,
    .geglu = cpu_geglu_op,
    .scale = cpu_scale,
    .l2_norm = cpu_l2_norm,
    .attention = cpu_attention_op,
    .conv1d_silu = cpu_conv1d_silu_op,
    .gdn_gates = cpu_gdn_gates,
    .gdn = cpu_gdn_op,
    .gated_norm = cpu_gated_norm,
};

backend *cpu_backend_new(int n_threads, bool exact, err *e) {
    backend *b = calloc(1, sizeof *b);
    cpu *c = calloc(1, sizeof *c);
    if (!b || !c) goto oom;
    c->pool = pool_new(n_threads);
    if (!c->pool) goto oom;
    c->exact = exact;
    b->name = "cpu";
    b->ops = &cpu_ops;
    b->impl = c;
    return b;
oom:
    free(b);
    free(c);
    err_set(e, ERR_NOMEM, "cannot create the cpu backend with %d threads", n_threads);
    return NULL;
}

static void cpu_destroy(backend *b) {
    cpu *c = b->impl;
    if (c) {
        pool_free(c->pool);
        free(c->xq);
        free(c->rowbuf);
        free(c->scratch);
        free(c->rows);
        free(c->acts);
        free(c->panels);
        free(c->gstart);
        free(c->packs);
        free(c);
    }
    free(b);
}
