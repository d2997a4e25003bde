/* cuda_matmul: the CUDA executor's matmuls (matmul, matmul_experts) and the deferred launches they share.
 *
 * Per row, the family its span chooses (CUDA_GEMV_MAX_ROWS, cuda_impl.h): GEMV rows are quantized to q8_1
 * and run through cuda_gemv_q (one launch for all of a matmul's GEMV rows: a batched decode step reads W
 * once; from 64 such rows the int8 product cuda_mmq_dense); GEMM rows are rounded to bf16 and run through
 * cuda_gemm_q (where its shape conditions hold: K % 64 == 0, N even, 16-byte aligned blocks; else the GEMV)
 * or the two-pass products. Float weights go to cuda_matmul_f at any T. matmul_experts is one launch over
 * every routed slot (the expert id read on the device), or the grouped products for a prompt's rows. The
 * q8_1 and bf16 inputs are recorded (xq_src, xb_src) so the matmuls over one input convert it once.
 * Nothing synchronises the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

/* expert e's rows of the GEMV layout */
static cuda_qmat expert_qmat(const cuda_weight *cw, int e) {
    cuda_qmat q = cw->q;
    const size_t r0 = (size_t)e * (size_t)cw->N;
    q.N = cw->N;
    q.qs = (const char *)q.qs + r0 * cw->qs_row;
    q.hi = q.hi ? (const char *)q.hi + r0 * cw->hi_row : NULL;
    q.meta = (const char *)q.meta + r0 * cw->meta_row;
    return q;
}

/* xq / ds = q8_1 of in[n][K], unless they already hold exactly that (q, k and v, or gate and up, read one
 * input: one quantization serves them; the record is dropped by every other op, upload and download, and
 * by a matmul whose output overlaps it) */
/* Whether xq / ds hold the q8_1 of in[n][K]. q8_1 blocks are 32 values each and rows are back to back in
 * xq / ds, so the same values as other rows of K % 32 == 0 are the same bytes (the MoE's swiglu quantizes
 * T rows of moe_k x n_ff_exp, its down projection reads them as T x moe_k rows of n_ff_exp). */
static bool xq_holds(const cuda_exec *c, const float *in, int64_t n, int64_t K) {
    return c->xq_src == in && (int64_t)c->xq_n * c->xq_K == n * K && K % 32 == 0;
}

static int quantize_in(exec *x, const float *in, int n, int64_t K, const char *op, const char *name) {
    cuda_exec *c = cx_of(x);
    if (xq_holds(c, in, n, K)) return 0;
    cx_prof_mark(x, "quantize_q8_1", NULL);
    c->xq_src = NULL;
    if (cx_kfail(x, cuda_quantize_q8_1(in, c->xq, c->ds, n, (int)K, c->st), op, name)) return 1;
    c->xq_src = in, c->xq_n = n, c->xq_K = K;
    return 0;
}

/* xb = bf16 of rows[n][K] (a GEMM run's input), unless it already holds exactly that: as quantize_in, the
 * projections of one input (q / k / v, gate / up, a GDN layer's four) convert it once; the record is dropped
 * where xq's is */
static int bf16_in(exec *x, const float *rows, int n, int64_t K, const char *op, const char *name) {
    cuda_exec *c = cx_of(x);
    if (c->xb_src == rows && c->xb_n == n && c->xb_K == K) return 0;
    cx_prof_mark(x, "to_bf16", NULL);
    c->xb_src = NULL;
    if (cx_kfail(x, cuda_f32_to_bf16(rows, c->xb, (int64_t)n * K, c->st), op, name)) return 1;
    c->xb_src = rows, c->xb_n = n, c->xb_K = K;
    return 0;
}

/* a matmul wrote y[0 .. n): the quantized and bf16 input records are void if that overlaps their rows */
static void wrote(cuda_exec *c, const float *y, int64_t n) {
    if (c->xq_src && y < c->xq_src + (int64_t)c->xq_n * c->xq_K && c->xq_src < y + n) c->xq_src = NULL;
    if (c->xb_src && y < c->xb_src + (int64_t)c->xb_n * c->xb_K && c->xb_src < y + n) c->xb_src = NULL;
}

/* the deferred float matmuls: one launch */
static void fpend_flush(exec *x) {
    cuda_exec *c = cx_of(x);
    const int n = c->fpend.n;
    if (!n) return;
    c->fpend.n = 0;
    if (x->status) return;
    cx_kfail(x,
             cuda_matmul_f_group(c->fpend.type, c->fpend.W, c->fpend.y, c->fpend.N, n, c->fpend.x, c->fpend.K,
                                 c->fpend.T, c->st),
             "matmul", c->fpend.name);
}

void cx_pend_flush(exec *x, float *res) {
    cuda_exec *c = cx_of(x);
    cx_pop_flush(x);
    fpend_flush(x);
    const int n = c->pend.n;
    if (!n) return;
    c->pend.n = 0;
    if (x->status) return;
    if (c->pend.sel) { /* routed experts (cx_matmul_experts): one launch for the matrices of one expert set */
        cx_kfail(x,
                 cuda_gemv_q_experts_group(c->pend.q, n, c->pend.E, c->pend.sel, c->pend.slots, c->pend.xdiv, c->xq,
                                           c->ds, c->pend.y, c->st),
                 "matmul_experts", c->pend.name);
        return;
    }
    const int st = res      ? cuda_gemv_q_res(&c->pend.q[0], c->xq, c->ds, c->pend.y[0], res, c->pend.T, c->st)
                   : n == 1 ? cuda_gemv_q(&c->pend.q[0], c->xq, c->ds, c->pend.y[0], c->pend.T, c->st)
                            : cuda_gemv_q_group(c->pend.q, n, c->xq, c->ds, c->pend.y, c->pend.T, c->st);
    cx_kfail(x, st, "matmul", c->pend.name);
}

/* whether y[0 .. n) overlaps a pending GEMV's output (T rows of its N) */
static bool overlaps_pend(const cuda_exec *c, const float *y, int64_t n, int64_t T) {
    for (int i = 0; i < c->pend.n; i++) {
        const int64_t np = T * c->pend.q[i].N;
        if (y < c->pend.y[i] + np && c->pend.y[i] < y + n) return true;
    }
    return false;
}

/* Whether a GEMV of W over in[T] into y may join the pending ones: the same q8_1 rows (in is what xq
 * holds), type and width, room in the group, and y apart from every pending output. */
static bool pend_joins(const cuda_exec *c, const cuda_weight *cw, const float *in, const float *y, int T) {
    return c->pend.n && !c->pend.sel && c->pend.n < CUDA_GEMV_GROUP && cw->planes && c->pend.T == T &&
           T <= CUDA_GEMV_MAX_ROWS && xq_holds(c, in, T, cw->K) && cw->type == c->pend.q[0].type &&
           cw->K == c->pend.q[0].K && !overlaps_pend(c, y, (int64_t)T * cw->N, T);
}

/* Whether a float matmul of W over in[T] into y may join the pending ones: the same input, type, K and
 * rows, room in the group, and y apart from the input and from every pending output. */
static bool fpend_joins(const cuda_exec *c, const cuda_weight *cw, const float *in, const float *y, int T) {
    if (!c->fpend.n || c->fpend.n >= CUDA_MATMUL_F_GROUP || c->fpend.x != in || c->fpend.T != T ||
        c->fpend.type != (int)cw->type || c->fpend.K != cw->K)
        return false;
    const int64_t ny = (int64_t)T * cw->N;
    if (y < in + (int64_t)T * cw->K && in < y + ny) return false;
    for (int i = 0; i < c->fpend.n; i++)
        if (y < c->fpend.y[i] + (int64_t)T * c->fpend.N[i] && c->fpend.y[i] < y + ny) return false;
    return true;
}

/* BATCH_MMQ_ROWS GEMV rows or more in a run (a batched decode step's one-token spans) take the int8 product
 * (cuda_mmq_dense) where it takes the type: on an H100 1.17x the chunked GEMV at 64 sequences of the 8B, 0.97x
 * at 32, 0.81x at 16 (docs/cuda.md). Its rows are within the matmul bound, not the one-row launch's bits;
 * LLM170_CUDA_BATCH_MMQ=0 keeps the chunked GEMV and the bit-exact batch invariant at every batch size. */
#define BATCH_MMQ_ROWS 64

/* an A/B switch read once: on unless the variable's value starts with '0' (*v: 0 not yet read, 1 off, 2 on) */
static bool switch_on(int *v, const char *name) {
    int s = __atomic_load_n(v, __ATOMIC_RELAXED);
    if (!s) {
        const char *e = getenv(name);
        s = e && e[0] == '0' ? 1 : 2;
        __atomic_store_n(v, s, __ATOMIC_RELAXED);
    }
    return s == 2;
}

static bool use_batch_mmq(void) {
    static int v;
    return switch_on(&v, "LLM170_CUDA_BATCH_MMQ");
}

/* rows [r0, r0 + n) of x through the GEMV (up to 8: deferred, cx_pend_flush; more: one batched launch) */
static void mm_gemv(exec *x, const weight *w, const cuda_qmat *q, const float *in, float *y, int r0, int n) {
    cuda_exec *c = cx_of(x);
    const int64_t K = q->K, N = q->N, U = K / 32;
    const bool joins = r0 == 0 && pend_joins(c, w->data, in, y, n);
    if (!joins) cx_pend_flush(x, NULL); /* it reads xq */
    if (!joins && quantize_in(x, in + (int64_t)r0 * K, n, K, "matmul", w->name)) return;
    cx_prof_mark(x, "gemv", w->name);
    if (n <= CUDA_GEMV_MAX_ROWS) { /* deferred: another GEMV or an add may join the launch */
        if (!joins) c->pend.T = n, c->pend.name = w->name, c->pend.sel = NULL;
        c->pend.q[c->pend.n] = *q, c->pend.y[c->pend.n] = y + (int64_t)r0 * N;
        c->pend.n++;
        return;
    }
    if (n >= BATCH_MMQ_ROWS && use_batch_mmq() && cuda_mmq_experts_supports(q->type, K)) {
        /* the batched decode rows on int8 tensor cores (kernels/mmq.cu): W read once per tile of 32 or 64 rows */
        cx_prof_mark(x, "mmq_dense", w->name);
        cx_kfail(x, cuda_mmq_dense(q, c->xq, c->ds, y + (int64_t)r0 * N, n, cuda_mmq_tile(n, 1), c->st), "matmul",
                 w->name);
        return;
    }
    /* one launch over every row (W read from memory once, chunks of 8 rows inside), CUDA_GEMV_BATCH_MAX at a time */
    for (int t = 0; t < n; t += CUDA_GEMV_BATCH_MAX) {
        const int m = n - t < CUDA_GEMV_BATCH_MAX ? n - t : CUDA_GEMV_BATCH_MAX;
        if (cx_kfail(x, cuda_gemv_q(q, c->xq + (int64_t)t * K, c->ds + (int64_t)t * U * 2, y + (int64_t)(r0 + t) * N, m,
                                    c->st),
                     "matmul", w->name))
            return;
    }
}

/* rows [r0, r0 + n) through the bf16 GEMM where its conditions hold, else the GEMV */
/* GEMM rows from this many on dequantize the whole matrix to bf16 first (cuda_dequant_bf16, then
 * cuda_gemm_bf16: the fused kernel's bits, docs/cuda-prefill.md): 1.36x the fused kernel at 512 tokens and
 * 1.6x at 4096 on the 8B's 14336 x 4096 (H200, dequantization included); below, the dequantization costs
 * more than it saves. The fused kernel refusing a shape (Q6_K's spans on sm_80's shared memory) takes the
 * two-pass path at any count. */
#define GEMM_TWO_PASS_ROWS 256

static void mm_gemm(exec *x, const weight *w, int expert, const float *in, float *y, int r0, int n) {
    cuda_exec *c = cx_of(x);
    const cuda_weight *cw = w->data;
    const int64_t K = cw->K, N = cw->N;
    const char *raw = (const char *)cw->raw + (size_t)expert * (size_t)N * qtype_row_bytes(cw->type, K);
    const cuda_qmat q = expert_qmat(cw, expert);
    if (!cuda_gemm_q_supports((int)cw->type) || K % 64 || N % 2 || ((uintptr_t)raw & 15)) {
        mm_gemv(x, w, &q, in, y, r0, n);
        return;
    }
    if (cuda_gemm_part_floats(n, (int)N, (int)K) > c->gpart_n) { /* sized from the plan: not reached */
        exec_fail(x, ERR_RANGE, "matmul '%s': %d GEMM rows need more split-K scratch than planned", w->name, n);
        return;
    }
    if (bf16_in(x, in + (int64_t)r0 * K, n, K, "matmul", w->name)) return;
    const bool two_pass_ok = c->wdq && N <= 65535 && N * K <= c->d->max_dq;
    float *yr = y + (int64_t)r0 * N;
    if (!(two_pass_ok && n >= GEMM_TWO_PASS_ROWS)) {
        cx_prof_mark(x, "gemm", w->name);
        const int st = cuda_gemm_q((int)cw->type, raw, c->xb, yr, c->gpart, n, (int)N, (int)K, c->st);
        if (st != CUDA_KERR_UNSUPPORTED || !two_pass_ok) {
            cx_kfail(x, st, "matmul", w->name);
            return;
        }
    }
    cx_prof_mark(x, "dequant_bf16", w->name);
    if (cx_kfail(x, cuda_dequant_bf16((int)cw->type, raw, c->wdq, (int)N, (int)K, c->st), "matmul", w->name)) return;
    /* on sm_90a the product runs on wgmma (kernels/gemm_wgmma.cu: 1.7x the prompt rate of the 8B, 1.9x the
     * 27B's at 512 tokens, H100) wherever mma.sync would not split K: there both give the same bits (the
     * check requires it), so a prompt's chunks below 256 rows (mma.sync) and above (wgmma) keep one pass's
     * bits; the split shapes (N <= 2048: k / v projections) stay on mma.sync for the same reason */
    if (!cuda_gemm_part_floats(n, (int)N, (int)K) && cuda_gemm_wgmma_available()) {
        cx_prof_mark(x, "gemm_wgmma", w->name);
        cx_kfail(x, cuda_gemm_bf16_wgmma(c->wdq, c->xb, yr, n, (int)N, (int)K, c->st), "matmul", w->name);
        return;
    }
    cx_prof_mark(x, "gemm_bf16", w->name);
    cx_kfail(x, cuda_gemm_bf16(c->wdq, c->xb, yr, c->gpart, n, (int)N, (int)K, c->st), "matmul", w->name);
}

void cx_matmul(exec *x, const weight *w, int expert, const float *in, float *y, int T, mm_rows rows) {
    cuda_exec *c = cx_of(x);
    x->stats.n_ops++;
    if (x->status || T <= 0) return;
    const cuda_weight *cw = w->data;
    const bool fjoins = cuda_is_float_type(cw->type) && fpend_joins(c, cw, in, y, T);
    if (!fjoins && !pend_joins(c, cw, in, y, T)) cx_pend_flush(x, NULL);
    cx_graph_tick(x);
    const uint8_t *fam; /* per row: 1 GEMM, 0 GEMV; NULL: all GEMV */
    if (!pass_rows_family(x, &c->pr, w->name, T, rows, &fam)) return;
    if (T > c->pr.R || cw->K > c->K) {
        exec_fail(x, ERR_RANGE, "matmul '%s': %d rows of %lld values; the executor was planned for %d of %lld", w->name,
                  T, (long long)cw->K, c->pr.R, (long long)c->K);
        return;
    }
    if (expert < 0 || expert >= cw->E) {
        exec_fail(x, ERR_ARG, "matmul '%s': expert %d of %lld", w->name, expert, (long long)cw->E);
        return;
    }
    if (cuda_is_float_type(cw->type)) { /* one kernel for every row: no family to choose; deferred, as a GEMV */
        cx_prof_mark(x, "matmul_f", w->name);
        const char *raw = (const char *)cw->raw + (size_t)expert * (size_t)cw->N * qtype_row_bytes(cw->type, cw->K);
        if (!fjoins) /* nothing is pending: cx_pend_flush above */
            c->fpend.x = in, c->fpend.type = (int)cw->type, c->fpend.K = (int)cw->K, c->fpend.T = T,
            c->fpend.name = w->name;
        c->fpend.W[c->fpend.n] = raw, c->fpend.y[c->fpend.n] = y, c->fpend.N[c->fpend.n] = (int)cw->N;
        c->fpend.n++;
        wrote(c, y, (int64_t)T * cw->N);
        return;
    }
    const cuda_qmat q = expert_qmat(cw, expert);
    for (int r0 = 0; r0 < T && !x->status;) { /* runs of rows of one family */
        const uint8_t f = fam ? fam[r0] : 0;
        int r1 = r0 + 1;
        while (r1 < T && (fam ? fam[r1] : 0) == f) r1++;
        if (f) mm_gemm(x, w, expert, in, y, r0, r1 - r0);
        else mm_gemv(x, w, &q, in, y, r0, r1 - r0);
        r0 = r1;
    }
    wrote(c, y, (int64_t)T * cw->N);
}

/* MoE prefill's grouped expert product on int8 tensor cores (experts_mmq) for the types kernels/mmq.cu takes:
 * 1.96x the 35B-A3B's pp512 and 1.31x its pp4096 over the bf16 kernel (H100, 2026-12-07, docs/cuda-prefill.md).
 * LLM170_CUDA_MMQ=0 keeps the bf16 kernel (experts_gemm) for every type: other bits, an A/B switch. */
static bool use_mmq(void) {
    static int v;
    return switch_on(&v, "LLM170_CUDA_MMQ");
}

/* experts_gemm on int8 tensor cores (kernels/mmq.cu): the pass's input rows quantized to q8_1 (once for gate
 * and up: quantize_in keeps them), the slots grouped in tiles of cuda_mmq_tile slots */
static void experts_mmq(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                        float *y, int r0, int r1) {
    cuda_exec *c = cx_of(x);
    const cuda_weight *cw = w->data;
    const int slots = (r1 - r0) * K, row0 = in_per_slot ? r0 * K : r0, n_all = in_per_slot ? c->pr.T * K : c->pr.T;
    const int bm = cuda_mmq_tile(slots, (int)cw->E);
    if (quantize_in(x, in, n_all, cw->K, "matmul_experts", w->name)) return;
    cx_prof_mark(x, "moe_group", w->name);
    if (cx_kfail(x, cuda_moe_group(sel + (int64_t)r0 * K, slots, (int)cw->E, bm, c->moe_g, c->st), "matmul_experts",
                 w->name))
        return;
    cuda_qmat q = cw->q;
    q.N = cw->N; /* rows an expert; the planes hold all E of them */
    cx_prof_mark(x, "mmq_experts", w->name);
    const int64_t U = cw->K / 32;
    cx_kfail(x,
             cuda_mmq_experts(&q, (int)cw->E, c->xq + (int64_t)row0 * cw->K, c->ds + (int64_t)row0 * U * 2,
                              in_per_slot ? 1 : K, c->moe_g, bm, y + (int64_t)r0 * K * cw->N, slots, c->st),
             "matmul_experts", w->name);
}

/* The routed slots of pass rows [r0, r1) through the grouped expert product (kernels/gemm_q.cu): their
 * inputs rounded to bf16, the slots grouped by expert on the device, each expert's weights read once per 64
 * of its slots. */
static void experts_gemm(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                         float *y, int r0, int r1) {
    cuda_exec *c = cx_of(x);
    const cuda_weight *cw = w->data;
    const int slots = (r1 - r0) * K, n_in = in_per_slot ? slots : r1 - r0, row0 = in_per_slot ? r0 * K : r0;
    if (cuda_moe_group_ints(slots, (int)cw->E, CUDA_MMQ_TILE_MIN) > c->moe_g_n) { /* sized from the plan: not reached */
        exec_fail(x, ERR_RANGE, "matmul_experts '%s': %d routed slots need more grouping scratch than planned", w->name,
                  slots);
        return;
    }
    if (use_mmq() && cw->planes && cuda_mmq_experts_supports((int)cw->type, cw->K)) {
        experts_mmq(x, w, sel, K, in, in_per_slot, y, r0, r1);
        return;
    }
    /* the same rows as mm_gemm's of this run (in_per_slot: the slots'), so the shared expert's gate and up
     * over the same input reuse them */
    if (bf16_in(x, in + (int64_t)row0 * cw->K, n_in, cw->K, "matmul_experts", w->name)) return;
    cx_prof_mark(x, "moe_group", w->name);
    if (cx_kfail(x, cuda_moe_group(sel + (int64_t)r0 * K, slots, (int)cw->E, CUDA_MOE_TILE, c->moe_g, c->st),
                 "matmul_experts", w->name))
        return;
    cx_prof_mark(x, "gemm_experts", w->name);
    cx_kfail(x, cuda_gemm_q_experts((int)cw->type, cw->raw, (int)cw->E, c->xb, in_per_slot ? 1 : K, c->moe_g,
                                    y + (int64_t)r0 * K * cw->N, slots, (int)cw->N, (int)cw->K, c->st),
             "matmul_experts", w->name);
}

/* Every routed slot in one launch (one block row per slot, its expert's rows read by id on the device):
 * no host round trip, and a slot's result does not depend on the others. The rows of spans longer than
 * CUDA_GEMV_MAX_ROWS (the pass's GEMM family, as cx_matmul's) take the grouped expert product instead
 * where its shape conditions hold; the others the GEMV, run by run. */
void cx_matmul_experts(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                       float *y, int T) {
    cuda_exec *c = cx_of(x);
    x->stats.n_ops++;
    if (x->status) return;
    const cuda_weight *cw = w->data;
    if (T != c->pr.T) {
        exec_fail(x, ERR_ARG, "matmul_experts '%s' over %d rows; the pass has %d", w->name, T, c->pr.T);
        return;
    }
    const int64_t slots = (int64_t)T * K, n_in = in_per_slot ? slots : T;
    if (K < 1 || n_in > c->RK || cw->K > c->K) {
        exec_fail(x, ERR_RANGE, "matmul_experts '%s': %lld rows of %lld values, %d experts a token; planned for %d of %lld",
                  w->name, (long long)n_in, (long long)cw->K, K, c->RK, (long long)c->K);
        return;
    }
    if (!T) return;
    const int xdiv = in_per_slot ? 1 : K;
    const uint8_t *fam = NULL; /* per row: 1 GEMM, 0 GEMV; NULL: all GEMV */
    if (!cuda_is_float_type(cw->type) && cuda_gemm_q_supports((int)cw->type) && cw->K % 64 == 0 && cw->N % 2 == 0 &&
        !((uintptr_t)cw->raw & 15) && cw->E <= 8192 && c->moe_g) {
        if (!pass_rows_family(x, &c->pr, w->name, T, MM_ROWS_PASS, &fam)) return;
    }
    if (fam) { /* runs of rows of one family; nothing deferred */
        cx_pend_flush(x, NULL);
        cx_graph_tick(x);
        cuda_qmat q = cw->q;
        q.N = cw->N;
        for (int r0 = 0; r0 < T && !x->status;) {
            int r1 = r0 + 1;
            while (r1 < T && fam[r1] == fam[r0]) r1++;
            if (fam[r0]) {
                experts_gemm(x, w, sel, K, in, in_per_slot, y, r0, r1);
            } else if (!quantize_in(x, in, (int)n_in, cw->K, "matmul_experts", w->name)) {
                const int64_t row0 = in_per_slot ? (int64_t)r0 * K : r0, U = cw->K / 32;
                cx_prof_mark(x, "gemv_experts", w->name);
                cx_kfail(x, cuda_gemv_q_experts(&q, (int)cw->E, sel + (int64_t)r0 * K, (r1 - r0) * K, xdiv,
                                                c->xq + row0 * cw->K, c->ds + row0 * U * 2, y + (int64_t)r0 * K * cw->N,
                                                c->st),
                         "matmul_experts", w->name);
            }
            r0 = r1;
        }
        wrote(c, y, slots * cw->N);
        return;
    }
    /* deferred like a GEMV: the next expert set over the same routed slots and q8_1 rows (gate and up)
     * joins it as one launch (each member's blocks as in a launch of its own: the same bits) */
    const bool joins = c->pend.n && c->pend.sel == sel && c->pend.n < CUDA_GEMV_GROUP && c->pend.slots == slots &&
                       c->pend.xdiv == xdiv && c->pend.E == cw->E && !cuda_is_float_type(cw->type) &&
                       cw->type == c->pend.q[0].type && cw->K == c->pend.q[0].K && xq_holds(c, in, n_in, cw->K) &&
                       !overlaps_pend(c, y, slots * cw->N, slots);
    if (joins) {
        cx_graph_tick(x);
        cx_prof_mark(x, "gemv_experts", w->name);
        c->pend.q[c->pend.n] = cw->q, c->pend.q[c->pend.n].N = cw->N, c->pend.y[c->pend.n] = y;
        c->pend.n++;
        wrote(c, y, slots * cw->N);
        return;
    }
    cx_pend_flush(x, NULL);
    cx_graph_tick(x);
    if (cuda_is_float_type(cw->type)) {
        cx_prof_mark(x, "matmul_experts", w->name);
        cx_kfail(x, cuda_matmul_f((int)cw->type, cw->raw, in, y, (int)cw->N, (int)cw->K, (int)slots, sel, (int)cw->E,
                                  xdiv, c->st),
                 "matmul_experts", w->name);
        wrote(c, y, slots * cw->N);
        return;
    }
    cuda_qmat q = cw->q;
    q.N = cw->N; /* rows per expert; the kernel offsets by sel * N */
    if (quantize_in(x, in, (int)n_in, cw->K, "matmul_experts", w->name)) return;
    cx_prof_mark(x, "gemv_experts", w->name);
    c->pend.n = 1, c->pend.T = 1, c->pend.name = w->name, c->pend.q[0] = q, c->pend.y[0] = y;
    c->pend.sel = sel, c->pend.E = (int)cw->E, c->pend.slots = (int)slots, c->pend.xdiv = xdiv;
    wrote(c, y, slots * cw->N);
}
