/* cuda_backend: the CUDA device (weights uploaded at load, device memory from cudaMalloc) and executor
 * (one stream, scratch sized once from the plan), and the matmuls.
 *
 * Weights: F32 / F16 / BF16 tensors are uploaded as they are. The quantized types the kernels run (Q4_0,
 * Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K) are uploaded twice: repacked into the GEMV layout (repack.h; also
 * what get_rows dequantizes from) and as GGUF blocks for the prefill GEMM (kernels/gemm_q.cu), which reads
 * that layout. Any other type is an error naming the tensor.
 *
 * Matmuls: per row, the family its span chooses (CUDA_GEMV_MAX_ROWS, cuda_impl.h): GEMV rows are
 * quantized to q8_1 and run through cuda_gemv_q (one launch for all of a matmul's GEMV rows: a batched
 * decode step reads W once); GEMM rows are rounded to bf16 and run through cuda_gemm_q (where its shape
 * conditions hold: K % 64 == 0, N even, 16-byte aligned blocks; else the GEMV). Float weights go to
 * cuda_matmul_f at any T. matmul_experts is one launch
 * over every routed slot (the expert id read on the device). Nothing synchronises the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/repack.h"

/* ---------------------------------------------------------------- failures */

int cx_kfail(exec *x, int status, const char *op, const char *what) {
    if (status == CUDA_KERR_OK) return 0;
    const char *why = status == CUDA_KERR_ARGS          ? "a kernel precondition failed"
                      : status == CUDA_KERR_UNSUPPORTED ? "a type or shape the kernels do not handle"
                                                        : "the launch failed";
    cudaError_t ce = status == CUDA_KERR_LAUNCH ? cudaGetLastError() : cudaSuccess;
    exec_fail(x, status == CUDA_KERR_UNSUPPORTED ? ERR_UNSUPPORTED : status == CUDA_KERR_ARGS ? ERR_ARG : ERR_IO,
              "%s%s%s%s: %s%s%s", op, *what ? " '" : "", what, *what ? "'" : "", why, ce != cudaSuccess ? ": " : "",
              ce != cudaSuccess ? cudaGetErrorString(ce) : "");
    return status;
}

const float *cx_f32(exec *x, const weight *w, const char *op) {
    const cuda_weight *cw = w->data;
    if (w->type != QT_F32) {
        exec_fail(x, ERR_UNSUPPORTED, "%s: weight '%s' is %s, the op needs F32", op, w->name,
                  qtype_get((uint32_t)w->type)->name);
        return NULL;
    }
    return cw->raw;
}

static bool is_float_type(enum qtype t) { return t == QT_F32 || t == QT_F16 || t == QT_BF16; }

/* ---------------------------------------------------------------- the pass */

/* The executor's device becomes the calling thread's current one: a context may be driven from another
 * thread than the one that made it (the server's scheduler thread), and the CUDA runtime's current device
 * is per thread (0 unless set). Remembered per thread, so an op costs one compare. */
void cx_bind(exec *x) {
    static _Thread_local int bound = -1;
    const int dev = cx_of(x)->d->dev;
    if (bound == dev) return;
    const cudaError_t ce = cudaSetDevice(dev);
    if (ce != cudaSuccess) {
        exec_fail(x, ERR_IO, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(ce));
        return;
    }
    bound = dev;
}

/* a pass of <= CUDA_GEMV_MAX_ROWS tokens with output rows is captured into a CUDA graph (cuda_graph.c);
 * the ops since the last download (a pass without one) are launched first */
void cx_begin_pass(exec *x, const pass_span *spans, int n_spans) {
    cx_bind(x);
    x->stats.n_ops++;
    cx_pend_flush(x, NULL); /* the previous pass's last op, if it had no download */
    cx_of(x)->xq_src = cx_of(x)->xb_src = NULL;
    cx_graph_end(x);
    pass_rows_begin(x, &cx_of(x)->pr, spans, n_spans);
    cx_graph_begin(x);
}

/* ---------------------------------------------------------------- matmuls */

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

/* BATCH_MMQ_ROWS GEMV rows or more in a run (a batched decode step's one-token spans, side by side) take the
 * int8 tensor-core product (cuda_mmq_dense) where it takes the type: the 8B's step at 64 sequences spent most
 * of its time in the 8-row GEMV over chunks of 8, whose float work in the one-row order bounds it
 * (docs/cuda.md). Measured on an H100 (2026-12-08, the 8B's batched decode, this product against the chunks):
 * 16 sequences 0.81x, 32 0.97x, 64 1.17x; below 64 its 64-row blocks leave most SMs idle on the matrices of
 * few rows (the down projection: 64 blocks), which split-K would fix (scripts/pending/mmq-dense-split.patch).
 * Its outputs are within the matmul bound, not the one-row launch's bits: from 64 one-token spans a step, a
 * sequence's logits depend on its batch by rounding (as llama.cpp's and vLLM's do). LLM170_CUDA_BATCH_MMQ=0
 * keeps the chunked GEMV and with it the bit-exact batch invariant at every batch size. */
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

static bool cw_planes(const weight *w) { return ((const cuda_weight *)w->data)->planes; }

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
    if (n >= BATCH_MMQ_ROWS && use_batch_mmq() && cw_planes(w) && cuda_mmq_experts_supports(q->type, K)) {
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
    const bool fjoins = is_float_type(cw->type) && fpend_joins(c, cw, in, y, T);
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
    if (is_float_type(cw->type)) { /* one kernel for every row: no family to choose; deferred, as a GEMV */
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
    if (!is_float_type(cw->type) && cuda_gemm_q_supports((int)cw->type) && cw->K % 64 == 0 && cw->N % 2 == 0 &&
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
                       c->pend.xdiv == xdiv && c->pend.E == cw->E && !is_float_type(cw->type) &&
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
    if (is_float_type(cw->type)) {
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

/* ---------------------------------------------------------------- device */

static int oom(err *e, const char *what, size_t need) {
    size_t fr = 0, tot = 0;
    cudaGetLastError(); /* clear the allocation failure */
    cudaMemGetInfo(&fr, &tot);
    return err_set(e, ERR_NOMEM, "%s: %.1f MiB of GPU memory needed, %.1f MiB free of %.1f MiB", what,
                   (double)need / (1 << 20), (double)fr / (1 << 20), (double)tot / (1 << 20));
}

static void *cd_alloc(backend *b, size_t bytes) {
    cuda_dev *d = b->impl;
    void *p = NULL;
    if (!bytes || cudaSetDevice(d->dev) != cudaSuccess) return NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    /* zeroed before any executor's stream (non-blocking: no implicit order with this memset) uses it */
    if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cd_free(backend *b, void *p) {
    (void)b;
    if (p) cudaFree(p);
}

static void weight_release(cuda_weight *cw) {
    cu_free(cw->raw);
    cu_free(cw->planes);
    free(cw);
}

/* A tensor's bytes on the device, with UP_SLACK zeroed bytes after them: the prefill GEMM loads blocks in
 * 16-byte pieces, so the last piece of a row of 210-byte Q6_K (or 176-byte Q5_K) blocks reaches up to 15
 * bytes past the tensor's end (never used, but outside the allocation without the slack). */
#define UP_SLACK 256
static int up(void **dst, const void *src, size_t bytes, const char *name, err *e) {
    char what[200];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (cudaMalloc(dst, bytes + UP_SLACK) != cudaSuccess) {
        *dst = NULL;
        return oom(e, what, bytes + UP_SLACK);
    }
    int rc = cu_check(cudaMemset((char *)*dst + bytes, 0, UP_SLACK), e, what);
    return rc ? rc : cu_check(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), e, what);
}

static int cd_weight_init(backend *b, weight *w, const gguf_tensor *t, err *e) {
    cuda_dev *d = b->impl;
    const enum qtype ty = (enum qtype)t->type;
    const qtype_info *in = qtype_get(t->type);
    const bool quant = ty == QT_Q4_0 || ty == QT_Q4_1 || ty == QT_Q5_0 || ty == QT_Q8_0 || ty == QT_Q4_K ||
                       ty == QT_Q5_K || ty == QT_Q6_K;
    if (!in || (!quant && !is_float_type(ty)))
        return err_set(e, ERR_UNSUPPORTED,
                       "tensor '%s': type %s is not supported by the cuda backend (it runs F32, F16, BF16, Q4_0, Q4_1, "
                       "Q5_0, Q8_0, Q4_K, Q5_K, Q6_K; requantize the file, or use --device cpu)",
                       t->name, in ? in->name : "?");
    int rc = cu_check(cudaSetDevice(d->dev), e, "cudaSetDevice");
    if (rc) return rc;
    cuda_weight *cw = calloc(1, sizeof *cw);
    if (!cw) return err_set(e, ERR_NOMEM, "out of memory");
    cw->type = ty;
    cw->K = t->ne[0];
    cw->E = t->n_dims >= 3 ? t->ne[2] : 1;
    cw->N = t->n_dims >= 2 ? t->ne[1] : 1;
    rc = up(&cw->raw, t->data, t->nbytes, t->name, e);
    if (!rc && quant) {
        const int64_t rows = (int64_t)(t->n_elements / (uint64_t)cw->K);
        size_t qs, hi, meta;
        if ((rc = cuda_repack_sizes(ty, 1, cw->K, &cw->qs_row, &cw->hi_row, &cw->meta_row, e)) ||
            (rc = cuda_repack_sizes(ty, rows, cw->K, &qs, &hi, &meta, e))) {
            char why[sizeof e->msg];
            snprintf(why, sizeof why, "%s", e->msg);
            err_set(e, rc, "tensor '%s': %s", t->name, why);
        } else {
            /* planes 256-byte aligned inside one allocation */
            const size_t o_hi = (qs + 255) & ~(size_t)255, o_meta = o_hi + ((hi + 255) & ~(size_t)255);
            char *h = malloc(o_meta + meta);
            if (!h) rc = err_set(e, ERR_NOMEM, "tensor '%s': out of host memory to repack", t->name);
            if (!rc) rc = cuda_repack(ty, t->data, rows, cw->K, h, hi ? h + o_hi : NULL, h + o_meta, e);
            if (!rc) rc = up(&cw->planes, h, o_meta + meta, t->name, e);
            free(h);
            if (!rc)
                cw->q = (cuda_qmat){.type = ty, .N = rows, .K = cw->K, .qs = cw->planes,
                                    .hi = hi ? (char *)cw->planes + o_hi : NULL, .meta = (char *)cw->planes + o_meta};
            d->weight_bytes += o_meta + meta;
        }
    }
    if (rc) {
        weight_release(cw);
        return rc;
    }
    d->weight_bytes += t->nbytes;
    cw->next = d->weights;
    d->weights = cw;
    w->name = t->name;
    w->type = ty;
    w->n_dims = (int)t->n_dims;
    for (int i = 0; i < 4; i++) w->ne[i] = t->ne[i];
    w->nbytes = t->nbytes;
    w->data = cw;
    if (t->ne[0] > d->max_in) d->max_in = t->ne[0];
    if (quant && cw->N <= 65535 && cw->K % 64 == 0 && cw->N * cw->K > d->max_dq) d->max_dq = cw->N * cw->K;
    return 0;
}

void cx_destroy(exec *x) {
    if (!x) return;
    cuda_exec *c = x->impl;
    if (c) {
        c->pend.n = 0, c->pop.kind = CX_POP_NONE;
        cx_graph_free(c); /* an open capture is discarded */
        if (c->st) {
            cudaStreamSynchronize(c->st);
            cudaStreamDestroy(c->st);
        }
        cx_prof_free(c); /* prints the op profile */
        void *dbufs[] = {c->xq, c->ds, c->xb, c->attn, c->gdn, c->gpart, c->wdq, c->gdn_sync, c->moe_g};
        for (size_t i = 0; i < sizeof dbufs / sizeof dbufs[0]; i++) cu_free(dbufs[i]);
        pass_rows_free(&c->pr);
        free(c);
    }
    free(x);
}

/* Sizes every scratch buffer for the plan's worst call: activations of R (or routed RK) rows of the widest
 * input, the split-K partials of a decode attention over n_ctx positions, the chunked GDN's per-chunk
 * matrices for max_tokens. */
static exec *cd_exec_new(backend *b, const exec_plan *plan, err *e) {
    cuda_dev *d = b->impl;
    if (cu_check(cudaSetDevice(d->dev), e, "cudaSetDevice")) return NULL;
    exec *x = calloc(1, sizeof *x);
    cuda_exec *c = calloc(1, sizeof *c);
    if (!x || !c) {
        free(x), free(c);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    x->dev = b, x->ops = &cuda_exec_ops, x->impl = c;
    c->d = d;
    c->graphs = d->graphs && !cx_prof_wanted(); /* a profiled pass runs eagerly (cuda_prof.c) */
    c->plan = *plan;
    const int maxT = plan->max_tokens > 0 ? plan->max_tokens : 1;
    c->plan.max_tokens = maxT;
    if (pass_rows_init(&c->pr, &c->plan, CUDA_GEMV_MAX_ROWS + 1)) {
        cx_destroy(x);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    c->RK = plan->moe_k > 0 && (int64_t)maxT * plan->moe_k > c->pr.R ? maxT * plan->moe_k : c->pr.R;
    int64_t K = plan->max_in > d->max_in ? plan->max_in : d->max_in > 0 ? d->max_in : 32;
    c->K = K = (K + 63) / 64 * 64;
    const size_t R = (size_t)c->pr.R, RK = (size_t)c->RK;
    /* the GEMM's split-K slices: its largest split shape (2048 rows, any K that splits) at R rows; none
     * when no pass reaches the GEMM */
    c->gpart_n = R > CUDA_GEMV_MAX_ROWS ? cuda_gemm_part_floats((int)R, 2048, 4096) : 0;
    if (plan->attn_d > 0 && plan->attn_d % 32 == 0 && plan->attn_d <= 256 && plan->attn_hq > 0 && plan->n_ctx > 0)
        c->attn_n = cuda_attn_decode_scratch(plan->n_ctx, plan->attn_hq, plan->attn_d);
    /* the sequences of a batched decode step one attend_decode launch takes at the planned context: as many
     * as 64 MiB of partials hold (2-3 MB a sequence on 8B-27B shapes at n_ctx >= 4096; 0.3 MB at 640), at
     * least 16, at most CUDA_ATTN_SEQS_MAX and the pass's tokens; more of shorter sequences fit */
    c->attn_seqs = 1;
    if (c->attn_n > 0) {
        const int64_t fit = ((int64_t)64 << 20) / (c->attn_n * (int64_t)sizeof(float));
        c->attn_seqs = fit < 16 ? 16 : fit > CUDA_ATTN_SEQS_MAX ? CUDA_ATTN_SEQS_MAX : (int)fit;
        if (c->attn_seqs > maxT) c->attn_seqs = maxT;
    }
    /* the grouped expert product's table (experts_gemm): every routed slot of a pass of GEMM rows, any E */
    if (plan->moe_k > 0 && R > CUDA_GEMV_MAX_ROWS)
        c->moe_g_n = cuda_moe_group_ints((int)RK, (int)RK, CUDA_MMQ_TILE_MIN); /* tiles of either kernel */
    if (plan->gdn_dk == 128 && plan->gdn_dv == 128 && plan->gdn_hv > 0 && maxT > 1)
        c->gdn_n = cuda_gdn_chunk_scratch(maxT, plan->gdn_hv);
    struct { void **p; size_t n; } want[] = {
        {(void **)&c->xq, RK * (size_t)K},
        {(void **)&c->ds, RK * (size_t)(K / 32) * 2 * sizeof(float)},
        {(void **)&c->xb, (plan->moe_k > 0 && RK > R ? RK : R) * (size_t)K * 2}, /* MoE: the routed slots' rows */
        {(void **)&c->moe_g, (size_t)c->moe_g_n * sizeof(int32_t)},
        {(void **)&c->gpart, (size_t)c->gpart_n * sizeof(float)},
        {(void **)&c->wdq, R > CUDA_GEMV_MAX_ROWS ? (size_t)d->max_dq * 2 : 0},
        {(void **)&c->attn, (size_t)c->attn_n * (size_t)c->attn_seqs * sizeof(float)},
        {(void **)&c->gdn, (size_t)c->gdn_n * sizeof(float)},
        {(void **)&c->gdn_sync, plan->gdn_hv > 0 ? (size_t)CUDA_GDN_MAX_SEQS * 2 * plan->gdn_hv * sizeof(unsigned) : 0},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) total += want[i].n;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!want[i].n) continue;
        if (cudaMalloc(want[i].p, want[i].n) != cudaSuccess) {
            *want[i].p = NULL;
            cx_destroy(x);
            char what[160];
            snprintf(what, sizeof what, "cannot create a cuda executor for %d-token passes (scratch)", maxT);
            oom(e, what, total);
            return NULL;
        }
    }
    if ((c->gdn_sync && cu_check(cudaMemset(c->gdn_sync, 0, (size_t)CUDA_GDN_MAX_SEQS * 2 * plan->gdn_hv *
                                                                   sizeof(unsigned)),
                                 e, "cudaMemset")) ||
        cu_check(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking), e, "cudaStreamCreate") ||
        cx_graph_init(c, e) || (cx_prof_wanted() && cx_prof_init(c, e))) {
        cx_destroy(x);
        return NULL;
    }
    return x;
}

static void cd_destroy(backend *b) {
    cuda_dev *d = b->impl;
    for (cuda_weight *w = d->weights, *n; w; w = n) {
        n = w->next;
        weight_release(w);
    }
    free(d);
    free(b);
}

/* page-locked host memory (portable: any device's copies may use it) */
static void *cd_host_alloc(backend *b, size_t bytes) {
    cuda_dev *d = b->impl;
    void *p = NULL;
    if (!bytes || cudaSetDevice(d->dev) != cudaSuccess) return NULL;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}

static void cd_host_free(backend *b, void *p) {
    (void)b;
    cudaFreeHost(p);
}

static enum qtype cd_default_cache_type(const backend *b) {
    (void)b; /* llama.cpp's default; the split-K decode and flash prefill kernels read f16 caches */
    return QT_F16;
}

/* every cache type through the general attention kernel (D <= 256); Q8_0 rows in whole blocks */
static bool cd_cache_type_ok(const backend *b, enum qtype t, int64_t D) {
    (void)b;
    if (D < 1 || D > 256) return false;
    if (t == QT_F32 || t == QT_F16 || t == QT_BF16) return true;
    return t == QT_Q8_0 && D % 32 == 0;
}

static const backend_ops cuda_backend_ops = {
    .destroy = cd_destroy,
    .alloc = cd_alloc,
    .free = cd_free,
    .weight_init = cd_weight_init,
    .exec_new = cd_exec_new,
    .default_cache_type = cd_default_cache_type,
    .cache_type_ok = cd_cache_type_ok,
    .host_alloc = cd_host_alloc,
    .host_free = cd_host_free,
};

/* "cuda", "cuda:N", either with ":nograph" */
backend *cuda_backend_new(const char *device, err *e) {
    int n = 0;
    const char *rest = device + 4;
    if (!strncmp(device, "cuda:", 5) && device[5] >= '0' && device[5] <= '9') {
        char *end = NULL;
        long v = strtol(device + 5, &end, 10);
        if (v > 1024) rest = "?";
        else n = (int)v, rest = end;
    }
    const bool graphs = strcmp(rest, ":nograph") != 0;
    if (strncmp(device, "cuda", 4) || (*rest && graphs))
        return err_set(e, ERR_ARG, "device '%s': expected cuda or cuda:N, optionally followed by :nograph", device),
               NULL;
    backend *b = calloc(1, sizeof *b);
    cuda_dev *d = calloc(1, sizeof *d);
    if (!b || !d) {
        free(b), free(d);
        err_set(e, ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->dev = n;
    d->graphs = graphs;
    snprintf(d->name, sizeof d->name, "cuda:%d%s", n, graphs ? "" : ":nograph");
    if (cu_select_device(n, d->info, sizeof d->info, e)) {
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e->msg);
        err_set(e, e->code, "device '%s': %s (devices: %s)", device, why, backend_devices());
        free(b), free(d);
        return NULL;
    }
    b->name = d->name;
    b->ops = &cuda_backend_ops;
    b->impl = d;
    return b;
}

/* "cuda:0,cuda:1" for the GPUs of this machine ("" when none) */
static const char *cuda_list(void) {
    static char list[128];
    int n = 0;
    list[0] = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return list;
    }
    for (int i = 0, o = 0; i < n && o < (int)sizeof list - 16; i++)
        o += snprintf(list + o, sizeof list - (size_t)o, "%scuda:%d", i ? "," : "", i);
    return list;
}

static backend *cuda_open(const char *device, int n_threads, bool exact, err *e) {
    (void)n_threads, (void)exact; /* CPU settings */
    return cuda_backend_new(device, e);
}

void cuda_backend_register(void) {
    static const backend_provider p = {.prefix = "cuda", .list = cuda_list, .open = cuda_open};
    backend_register(&p);
}
