/* cuda_exec: the CUDA executor's ops other than the matmuls (cuda_matmul.c). Each is one or two kernel
 * launches on the executor's stream (kernels.h); transfers are async copies on it, and a download is the
 * only place the host waits for the device. Kernel choice per op:
 *  - attention: T = 1 over an F16 cache -> the split-K decode kernel (S cached positions, a kernel
 *    parameter); T > 1 over an F16 cache with D = 64, 128, 256 -> flash attention
 *    (the first query's position read on the device); anything else -> the general kernel (attention.cu);
 *  - gdn: T > 1 with Dk = Dv = 128 -> the chunked kernel; otherwise the step form over the T tokens;
 *  - gated_norm: rms_norm then silu(z) * o (two launches), rms_norm_heads: rms_norm over T * H rows.
 * Every failure (a launcher's precondition, a launch or an asynchronous error seen at a download) is
 * recorded once with exec_fail; later ops then do nothing. */
#include <stdint.h>
#include <string.h>

#include "backends/cuda/cuda_impl.h"

/* counts the op and drops the input records (it may write their rows: xq, xb); under LLM170_CUDA_PROFILE
 * marks its start (cuda_prof.c) */
#define OP(x, name)                                                                                              \
    ((x)->stats.n_ops++, cx_pend_flush((x), NULL), cx_of(x)->xq_src = NULL, cx_of(x)->xb_src = NULL,             \
     cx_graph_tick(x), cx_prof_mark((x), (name), NULL))
#define ST(x) (cx_of(x)->st)
/* run a launcher unless the executor already failed */
#define RUN(x, op, call)                              \
    do {                                              \
        if (!(x)->status) cx_kfail((x), (call), op, ""); \
    } while (0)

static void cu_fail(exec *x, cudaError_t ce, const char *what) {
    if (ce != cudaSuccess)
        exec_fail(x, ERR_IO, "%s: cuda error %s (%s)", what, cudaGetErrorName(ce), cudaGetErrorString(ce));
}

/* while a small pass is captured, through the graph's staging buffer (cuda_graph.c) */
static void cx_upload(exec *x, void *dst, const void *src, size_t bytes) {
    cx_bind(x);
    x->stats.n_uploads++;
    cx_pend_flush(x, NULL);
    cx_of(x)->xq_src = cx_of(x)->xb_src = NULL;
    cx_prof_mark(x, "upload", NULL);
    if (!bytes || x->status || cx_graph_upload(x, dst, src, bytes)) return;
    cu_fail(x, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ST(x)), "upload");
}

/* a download's copy (a captured pass is launched first, or discarded if it failed); false when none was queued */
static bool cx_copy_out(exec *x, void *dst, const void *src, size_t bytes) {
    cx_bind(x);
    x->stats.n_downloads++;
    cx_pend_flush(x, NULL);
    cx_of(x)->xq_src = cx_of(x)->xb_src = NULL;
    cx_graph_end(x);
    if (!bytes || x->status) return false;
    cx_prof_mark(x, "download", NULL); /* the end of the pass's last op */
    cu_fail(x, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ST(x)), "download");
    return !x->status;
}

/* the host's only wait: the stream up to this copy (errors of earlier kernels surface here) */
static void cx_download(exec *x, void *dst, const void *src, size_t bytes) {
    if (!cx_copy_out(x, dst, src, bytes)) return;
    cu_fail(x, cudaStreamSynchronize(ST(x)), "download (the pass's kernels)");
    if (!x->status) cx_prof_collect(x), cx_graph_timed(cx_of(x));
    if (!x->status) cx_of(x)->inflight = false;
}

/* cx_download's copy without its wait: the next download's wait covers it (the same stream) */
static void cx_download_start(exec *x, void *dst, const void *src, size_t bytes) { cx_copy_out(x, dst, src, bytes); }

/* ---------------------------------------------------------------- deferred small ops (pop) */

static bool apart(const void *a, size_t na, const void *b, size_t nb) {
    const char *p = a, *q = b;
    return p + na <= q || q + nb <= p;
}

/* a small pass (<= CUDA_GEMV_MAX_ROWS tokens): where deferring a small op to join the next can pay */
static bool small_pass(const cuda_exec *c) { return c->pr.T >= 1 && c->pr.T <= CUDA_GEMV_MAX_ROWS; }

void cx_pop_flush(exec *x) {
    cuda_exec *c = cx_of(x);
    const int kind = c->pop.kind;
    c->pop.kind = CX_POP_NONE;
    if (x->status || kind == CX_POP_NONE) return;
    if (kind == CX_POP_ROPE)
        cx_kfail(x, cuda_rope(c->pop.x, c->pop.pos, c->pop.T, c->pop.H, c->pop.D, &c->pop.rp, c->pop.factors, c->st),
                 "rope", "");
    else if (kind == CX_POP_STORE)
        cx_kfail(x, cuda_store_rows(c->pop.dst, c->pop.type, c->pop.src, c->pop.rows, c->pop.width, c->st), "store_rows",
                 "");
    else if (kind == CX_POP_COMBINE || kind == CX_POP_COMBINE_GATED)
        cx_kfail(x,
                 cuda_moe_combine_gated(c->pop.x, c->pop.src, c->pop.sel, c->pop.factors, c->pop.T, c->pop.H,
                                        (int)c->pop.width, kind == CX_POP_COMBINE ? NULL : c->pop.in2,
                                        kind == CX_POP_COMBINE ? NULL : c->pop.gate2, NULL, c->st),
                 "moe_combine", "");
    else if (kind == CX_POP_GATED)
        cx_kfail(x, cuda_add_gated_rows(c->pop.x, c->pop.src, c->pop.factors, c->pop.rows, c->pop.width, c->st),
                 "add_gated_rows", "");
    else
        cx_kfail(x, cuda_l2_norm(c->pop.x, c->pop.rows, c->pop.D, c->pop.eps, c->pop.scale, c->st), "l2_norm", "");
}

/* the bookkeeping of OP for an op that joins the deferred one (no flush: it launches with it) */
static void joined(exec *x) {
    cuda_exec *c = cx_of(x);
    x->stats.n_ops++;
    c->xq_src = c->xb_src = NULL;
    c->pop.kind = CX_POP_NONE;
}

static void cx_copy(exec *x, float *dst, const float *src, int64_t n) {
    OP(x, "copy");
    if (n > 0 && !x->status)
        cu_fail(x, cudaMemcpyAsync(dst, src, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, ST(x)), "copy");
}

static void cx_zero(exec *x, float *dst, int64_t n) {
    OP(x, "zero");
    if (n > 0 && !x->status) cu_fail(x, cudaMemsetAsync(dst, 0, sizeof(float) * (size_t)n, ST(x)), "zero");
}

static void cx_get_rows(exec *x, const weight *w, const int32_t *ids, float *y, int T) {
    OP(x, "get_rows");
    const cuda_weight *cw = w->data;
    if (cw->planes) RUN(x, "get_rows", cuda_get_rows_q(&cw->q, ids, y, T, ST(x)));
    else RUN(x, "get_rows", cuda_get_rows_f((int)cw->type, cw->raw, ids, y, T, cw->K, ST(x)));
}

/* Whether an op that writes y[T][K] may also write its q8_1 for the GEMV of a matmul that reads y next
 * (cuda_matmul.c quantize_in): a pass small enough for the GEMV, rows the scratch holds, and y apart from
 * `in` when the fused kernel reads whole rows of it from several blocks (rms_norm; NULL: element-wise). */
static bool fuse_q8(exec *x, const float *y, int T, int64_t K, const float *in) {
    const cuda_exec *c = cx_of(x);
    const int64_t n = (int64_t)T * K;
    if (x->status || T < 1 || T > CUDA_GEMV_MAX_ROWS || T > c->RK || K < 32 || K % 32 || K > c->K) return false;
    return !in || in + n <= y || y + n <= in;
}

/* the q8_1 rows in xq / ds are now those of y[T][K] */
static void fused_q8(exec *x, const float *y, int T, int64_t K) {
    cuda_exec *c = cx_of(x);
    if (!x->status) c->xq_src = y, c->xq_n = T, c->xq_K = K;
}

/* Whether an op that writes y[T][K] may also write its bf16 for the GEMM of a matmul that reads y next
 * (cuda_matmul.c bf16_in, whose record names the rows [r0, r0 + n) of one GEMM run): a pass of one span of
 * more tokens than the GEMV takes, y its T rows (the run the GEMM makes over them: r0 = 0, n = T), and rows
 * the scratch holds. Both kernels read only the row (the element) they write, so y may alias their input.
 * Where no GEMM reads y next (a GEMV-only weight type, an op in between), the record is dropped unread: one
 * bf16 write wasted. */
static bool fuse_bf16(exec *x, int T, int64_t K) {
    const cuda_exec *c = cx_of(x);
    return !x->status && c->pr.n_spans == 1 && T == c->pr.T && T > CUDA_GEMV_MAX_ROWS && T <= c->pr.R && K <= c->K;
}

/* the bf16 rows in xb are now those of y[T][K] */
static void fused_bf16(exec *x, const float *y, int T, int64_t K) {
    cuda_exec *c = cx_of(x);
    if (!x->status) c->xb_src = y, c->xb_n = T, c->xb_K = K;
}

static void cx_rms_norm(exec *x, const float *in, const weight *w, float *y, int T, int C, float eps) {
    OP(x, "rms_norm");
    const float *wd = w ? cx_f32(x, w, "rms_norm") : NULL;
    if (T <= 0) return;
    if (fuse_q8(x, y, T, C, in)) {
        RUN(x, "rms_norm", cuda_rms_norm_q8_1(in, wd, eps, cx_of(x)->xq, cx_of(x)->ds, y, T, C, ST(x)));
        fused_q8(x, y, T, C);
        return;
    }
    if (fuse_bf16(x, T, C)) {
        RUN(x, "rms_norm", cuda_rms_norm_bf16(in, wd, y, cx_of(x)->xb, T, C, eps, ST(x)));
        fused_bf16(x, y, T, C);
        return;
    }
    RUN(x, "rms_norm", cuda_rms_norm(in, wd, y, T, C, eps, ST(x)));
}

static void cx_rms_norm_heads(exec *x, float *io, const weight *w, int T, int H, int D, float eps) {
    OP(x, "rms_norm_heads");
    const float *wd = w ? cx_f32(x, w, "rms_norm_heads") : NULL;
    if (T > 0) RUN(x, "rms_norm_heads", cuda_rms_norm(io, wd, io, T * H, D, eps, ST(x)));
}

static void cx_add(exec *x, float *y, const float *in, int64_t n) {
    cuda_exec *c = cx_of(x);
    if (c->pop.kind == CX_POP_GATED && in == c->pop.x && n == c->pop.rows * c->pop.width &&
        apart(y, sizeof(float) * (size_t)n, in, sizeof(float) * (size_t)n)) { /* y += the rows just gated */
        float *g = c->pop.x;
        const float *src = c->pop.src, *gate = c->pop.factors;
        const int64_t T = c->pop.rows, C = c->pop.width;
        joined(x);
        RUN(x, "add", cuda_add_gated_rows_res(g, src, gate, y, T, C, ST(x)));
        return;
    }
    if (c->pop.kind == CX_POP_COMBINE_GATED && in == c->pop.x && n == (int64_t)c->pop.T * c->pop.width &&
        apart(y, sizeof(float) * (size_t)n, in, sizeof(float) * (size_t)n)) { /* y += the combined, gated rows */
        float *g = c->pop.x;
        const float *ys = c->pop.src, *wsel = c->pop.factors, *gin = c->pop.in2, *gate = c->pop.gate2;
        const int32_t *sel = c->pop.sel;
        const int T = c->pop.T, K = c->pop.H, C = (int)c->pop.width;
        joined(x);
        RUN(x, "add", cuda_moe_combine_gated(g, ys, sel, wsel, T, K, C, gin, gate, y, ST(x)));
        return;
    }
    if (c->pend.n == 1 && !c->pend.sel && in == c->pend.y[0] && n == (int64_t)c->pend.T * c->pend.q[0].N &&
        (y + n <= c->pend.y[0] || c->pend.y[0] + n <= y)) { /* y += the GEMV just deferred: one launch for both */
        x->stats.n_ops++;
        c->xq_src = c->xb_src = NULL;
        cx_pend_flush(x, y);
        return;
    }
    OP(x, "add");
    if (n <= 0) return;
    if (((uintptr_t)y | (uintptr_t)in) & 15) RUN(x, "add", cuda_add_bias(y, in, 1, n, ST(x))); /* y[i] += in[i] */
    else RUN(x, "add", cuda_add(y, in, n, ST(x)));
}

static void cx_swiglu(exec *x, const float *g, const float *u, float *y, int64_t n) {
    OP(x, "swiglu");
    if (n <= 0) return;
    const int T = cx_of(x)->pr.T; /* y is [T][n / T] when the op covers the pass's rows (not routed slots) */
    if (T > 0 && n % T == 0 && fuse_q8(x, y, T, n / T, NULL)) {
        RUN(x, "swiglu", cuda_swiglu_q8_1(g, u, cx_of(x)->xq, cx_of(x)->ds, y, T, (int)(n / T), ST(x)));
        fused_q8(x, y, T, n / T);
        return;
    }
    if (T > 0 && n % T == 0 && fuse_bf16(x, T, n / T)) {
        RUN(x, "swiglu", cuda_swiglu_bf16(g, u, y, cx_of(x)->xb, n, ST(x)));
        fused_bf16(x, y, T, n / T);
        return;
    }
    RUN(x, "swiglu", cuda_swiglu(g, u, y, n, ST(x)));
}

static void cx_geglu(exec *x, const float *g, const float *u, float *y, int64_t n) {
    OP(x, "geglu");
    if (n > 0) RUN(x, "geglu", cuda_geglu(g, u, y, n, ST(x)));
}

static void cx_sigmoid_mul(exec *x, float *y, const float *gate, int64_t n) {
    OP(x, "sigmoid_mul");
    if (n > 0) RUN(x, "sigmoid_mul", cuda_sigmoid_mul(y, gate, n, ST(x)));
}

static void cx_copy_cols(exec *x, float *dst, const float *src, int64_t rows, int64_t src_stride, int64_t offset,
                         int64_t n) {
    OP(x, "copy_cols");
    RUN(x, "copy_cols", cuda_copy_cols(dst, src, rows, src_stride, offset, n, ST(x)));
}

static void cx_set_cols(exec *x, float *dst, const float *src, int64_t rows, int64_t dst_stride, int64_t offset,
                        int64_t n) {
    OP(x, "set_cols");
    RUN(x, "set_cols", cuda_set_cols(dst, src, rows, dst_stride, offset, n, ST(x)));
}

static void cx_gather_rows(exec *x, float *dst, const float *src, const int32_t *idx, int n, int C) {
    OP(x, "gather_rows");
    RUN(x, "gather_rows", cuda_gather_rows(dst, src, idx, n, C, ST(x)));
}

static void cx_rope(exec *x, float *io, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                    const weight *factors) {
    cuda_exec *c = cx_of(x);
    const float *f = factors ? cx_f32(x, factors, "rope") : NULL;
    const size_t bytes = sizeof(float) * (size_t)T * H * D;
    if (c->pop.kind == CX_POP_ROPE && pos == c->pop.pos && T == c->pop.T && D == c->pop.D && f == c->pop.factors &&
        rp->mode == c->pop.rp.mode && rp->n_rot == c->pop.rp.n_rot && rp->theta == c->pop.rp.theta &&
        rp->freq_scale == c->pop.rp.freq_scale &&
        apart(io, bytes, c->pop.x, sizeof(float) * (size_t)T * c->pop.H * D)) { /* q then k: one launch */
        float *x1 = c->pop.x;
        const int H1 = c->pop.H;
        joined(x);
        RUN(x, "rope", cuda_rope2(x1, H1, io, H, pos, T, D, rp, f, ST(x)));
        return;
    }
    OP(x, "rope");
    if (T <= 0 || x->status) return;
    if (small_pass(c)) {
        c->pop.kind = CX_POP_ROPE, c->pop.x = io, c->pop.pos = pos, c->pop.T = T, c->pop.H = H, c->pop.D = D;
        c->pop.rp = *rp, c->pop.factors = f;
        return;
    }
    RUN(x, "rope", cuda_rope(io, pos, T, H, D, rp, f, ST(x)));
}

/* A bias on the output of a GEMV still pending (a qwen2 layer's q, k and v biases right after their
 * projections) is added by the GEMV as it writes (cuda_qmat.bias: the same rounding as cuda_add_bias after
 * it), no launch of its own; a second bias on the same output launches on its own, after the GEMV. */
static void cx_add_bias(exec *x, float *y, const weight *bias, int T, int N) {
    cuda_exec *c = cx_of(x);
    if (c->pend.n && !c->pend.sel && c->pend.T == T && !x->status)
        for (int i = 0; i < c->pend.n; i++)
            if (c->pend.y[i] == y && c->pend.q[i].N == N && !c->pend.q[i].bias) {
                const float *b = cx_f32(x, bias, "add_bias");
                if (!b) return;
                /* the q8_1 (and bf16) record stays: y is a pending GEMV's output, which never overlaps the
                 * rows the record holds (wrote() drops it when a matmul's output does), so the next
                 * projection over the same input still joins the group */
                x->stats.n_ops++;
                c->pend.q[i].bias = b;
                return;
            }
    OP(x, "add_bias");
    const float *b = cx_f32(x, bias, "add_bias");
    if (b) RUN(x, "add_bias", cuda_add_bias(y, b, T, N, ST(x)));
}

static void cx_scale(exec *x, float *y, float s, int64_t n) {
    OP(x, "scale");
    RUN(x, "scale", cuda_scale(y, s, n, ST(x)));
}

static void cx_l2_norm(exec *x, float *io, int T, int H, int D, float eps, float scale) {
    cuda_exec *c = cx_of(x);
    const int64_t R = (int64_t)T * H;
    if (c->pop.kind == CX_POP_L2 && D == c->pop.D && eps == c->pop.eps && scale == c->pop.scale && R > 0 &&
        apart(io, sizeof(float) * (size_t)(R * D), c->pop.x, sizeof(float) * (size_t)(c->pop.rows * D))) {
        float *x1 = c->pop.x; /* q then k: one launch */
        const int64_t R1 = c->pop.rows;
        joined(x);
        RUN(x, "l2_norm", cuda_l2_norm2(x1, R1, io, R, D, eps, scale, ST(x)));
        return;
    }
    OP(x, "l2_norm");
    if (x->status) return;
    if (R > 0 && D >= 1 && small_pass(c)) {
        c->pop.kind = CX_POP_L2, c->pop.x = io, c->pop.rows = R, c->pop.D = D, c->pop.eps = eps, c->pop.scale = scale;
        return;
    }
    RUN(x, "l2_norm", cuda_l2_norm(io, R, D, eps, scale, ST(x)));
}

static void cx_attention(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv,
                         float *out, const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D,
                         float scale, int window) {
    OP(x, "attention");
    cuda_exec *c = cx_of(x);
    if (x->status || T <= 0) return;
    const bool f16 = tk == QT_F16 && tv == QT_F16 && Hkv > 0 && Hq % Hkv == 0;
    if (f16 && T == 1 && D % 32 == 0 && D <= 256 && Hq / Hkv <= 8 && S >= 1 &&
        cuda_attn_decode_scratch(S, Hq, D) <= c->attn_n) {
        RUN(x, "attention", cuda_attn_decode(q, k, v, out, qpos, kpos, NULL, S, Hq, Hkv, D, scale, window, c->attn,
                                             c->st));
        return;
    }
    if (f16 && T > 1 && S >= 1 && (D == 64 || D == 128 || D == 256) && scale > 0.0f) {
        RUN(x, "attention", cuda_flash_attn_prefill_qpos(q, k, v, out, T, S, Hq, Hkv, D, qpos, window, scale, c->st));
        return;
    }
    RUN(x, "attention", cuda_attention(q, k, v, (int)tk, (int)tv, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window,
                                       c->st));
}

/* F16 caches and the split-K kernel's shapes: store, split and merge launches for as many sequences as the
 * partials hold (kernels.h cuda_attn_decode_seqs); otherwise each sequence alone through store_rows and
 * attention (attend_decode_each, backend.c; the same path at any n, so a sequence's bits never depend on
 * the others) */
static void cx_attend_decode(exec *x, const attn_seq *seqs, int n, const float *q, const float *k, const float *v,
                             float *out, enum qtype tk, enum qtype tv, const int32_t *kpos, int Hq, int Hkv, int D,
                             float scale, int window) {
    cuda_exec *c = cx_of(x);
    if (!(tk == QT_F16 && tv == QT_F16 && Hkv > 0 && Hq % Hkv == 0 && Hq / Hkv <= 8 && D % 32 == 0 && D <= 256 &&
          c->attn_n > 0)) {
        attend_decode_each(x, seqs, n, q, k, v, out, tk, tv, kpos, Hq, Hkv, D, scale, window);
        return;
    }
    OP(x, "attend_decode");
    const int64_t room = c->attn_n * c->attn_seqs;
    for (int i0 = 0; i0 < n && !x->status;) {
        cuda_attn_seq g[CUDA_ATTN_SEQS_MAX];
        int m = 0, S_max = 1;
        while (i0 + m < n && m < CUDA_ATTN_SEQS_MAX) { /* as many as the partials hold */
            const attn_seq *s = &seqs[i0 + m];
            const int S = s->pos + 1 > S_max ? s->pos + 1 : S_max;
            if ((int64_t)(m + 1) * cuda_attn_decode_scratch(S, Hq, D) > room) break;
            g[m++] = (cuda_attn_seq){s->k, s->v, s->pos, s->row};
            S_max = S;
        }
        if (!m) {
            exec_fail(x, ERR_RANGE, "attend_decode: position %d is past the executor's planned context of %d",
                      seqs[i0].pos, c->plan.n_ctx);
            return;
        }
        RUN(x, "attend_decode", cuda_attn_decode_seqs(g, m, q, k, v, out, kpos, Hq, Hkv, D, scale, window, c->attn,
                                                      room, c->st));
        i0 += m;
    }
}

static void cx_store_rows(exec *x, void *dst, enum qtype type, const float *src, int64_t rows, int64_t width) {
    cuda_exec *c = cx_of(x);
    const bool half = type == QT_F16 || type == QT_BF16;
    const size_t db = 2 * (size_t)(rows * width), sb = 4 * (size_t)(rows * width);
    if (c->pop.kind == CX_POP_STORE && half && (int)type == c->pop.type && rows == c->pop.rows &&
        width == c->pop.width && apart(dst, db, c->pop.dst, db) && apart(dst, db, c->pop.src, sb) &&
        apart(c->pop.dst, db, src, sb)) { /* the K then the V cache rows: one launch */
        void *d1 = c->pop.dst;
        const float *s1 = c->pop.src;
        joined(x);
        RUN(x, "store_rows", cuda_store_rows2(d1, s1, dst, src, (int)type, rows, width, ST(x)));
        return;
    }
    OP(x, "store_rows");
    if (x->status) return;
    if (half && rows > 0 && width > 0 && small_pass(c)) {
        c->pop.kind = CX_POP_STORE, c->pop.dst = dst, c->pop.src = src, c->pop.type = (int)type;
        c->pop.rows = rows, c->pop.width = width;
        return;
    }
    RUN(x, "store_rows", cuda_store_rows(dst, (int)type, src, rows, width, ST(x)));
}

static void cx_conv1d_silu(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch, int K) {
    OP(x, "conv1d_silu");
    const float *wd = cx_f32(x, w, "conv1d_silu");
    if (wd) RUN(x, "conv1d_silu", cuda_conv1d_silu(in, state, wd, y, T, Ch, K, ST(x)));
}

static void cx_gdn_gates(exec *x, float *alpha_to_g, float *beta, const weight *ssm_a, const weight *dt_bias, int T,
                         int Hv) {
    OP(x, "gdn_gates");
    const float *A = cx_f32(x, ssm_a, "gdn_gates"), *dt = cx_f32(x, dt_bias, "gdn_gates");
    if (A && dt) RUN(x, "gdn_gates", cuda_gdn_gates(alpha_to_g, beta, A, dt, T, Hv, ST(x)));
}

static void cx_gdn(exec *x, float *S, const float *q, const float *k, const float *v, const float *g,
                   const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map) {
    OP(x, "gdn");
    cuda_exec *c = cx_of(x);
    if (T > 1 && Dk == 128 && Dv == 128 && cuda_gdn_chunk_scratch(T, Hv) <= c->gdn_n)
        RUN(x, "gdn", cuda_gdn_chunk(S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, map, c->gdn, c->st));
    else
        RUN(x, "gdn", cuda_gdn_seq(S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, map, c->st));
}

static void cx_gated_norm(exec *x, float *o, const float *z, const weight *w, int T, int Hv, int Dv, float eps) {
    OP(x, "gated_norm");
    const float *wd = cx_f32(x, w, "gated_norm");
    if (!wd || T <= 0) return;
    RUN(x, "gated_norm", cuda_rms_norm(o, wd, o, T * Hv, Dv, eps, ST(x)));
    if (fuse_bf16(x, T, (int64_t)Hv * Dv)) { /* a prompt: o's bf16 for the out projection's GEMM too */
        RUN(x, "gated_norm", cuda_swiglu_bf16(z, o, o, cx_of(x)->xb, (int64_t)T * Hv * Dv, ST(x)));
        fused_bf16(x, o, T, (int64_t)Hv * Dv);
        return;
    }
    RUN(x, "gated_norm", cuda_swiglu(z, o, o, (int64_t)T * Hv * Dv, ST(x))); /* o = silu(z) * o */
}

/* one kernel for the whole layer step where it takes the shape (Dk = Dv = 128, the planned heads), writing
 * o's q8_1 for the ssm_out GEMV that follows; else the five ops one by one */
static void cx_gdn_decode(exec *x, const gdn_seq *seqs, int n, const float *qkv, float *alpha, float *beta,
                          const float *z, const gdn_weights *w, float *work, float *o, const gdn_shape *sh) {
    cuda_exec *c = cx_of(x);
    if (sh->Dk != 128 || sh->Dv != 128 || !c->gdn_sync || sh->Hv > c->plan.gdn_hv || sh->Hk > sh->Hv || n < 1 ||
        n > CUDA_GDN_MAX_SEQS) {
        gdn_decode_each(x, seqs, n, qkv, alpha, beta, z, w, work, o, sh);
        return;
    }
    OP(x, "gdn_decode");
    cuda_gdn_args a = {.qkv = qkv, .alpha = alpha, .beta_raw = beta, .z = z, .o = o, .sync = c->gdn_sync, .n = n,
                       .Hk = sh->Hk, .Hv = sh->Hv, .Dk = sh->Dk, .Dv = sh->Dv, .Kc = sh->Kc, .map = sh->map,
                       .eps = sh->eps};
    a.conv_w = cx_f32(x, w->conv, "gdn_decode"), a.ssm_a = cx_f32(x, w->a, "gdn_decode");
    a.dt_bias = cx_f32(x, w->dt, "gdn_decode"), a.norm_w = cx_f32(x, w->norm, "gdn_decode");
    if (x->status) return;
    for (int i = 0; i < n; i++) a.seq[i].conv = seqs[i].conv, a.seq[i].S = seqs[i].S;
    const int64_t K = (int64_t)sh->Hv * sh->Dv;
    const bool q8 = fuse_q8(x, o, n, K, NULL);
    if (q8) a.xq = c->xq, a.ds = c->ds;
    RUN(x, "gdn_decode", cuda_gdn_step(&a, ST(x)));
    if (q8) fused_q8(x, o, n, K);
}

static void cx_moe_route(exec *x, const float *logits, int32_t *sel, float *wsel, int T, int E, int K,
                         enum moe_gating gating, bool renorm) {
    cuda_exec *c = cx_of(x);
    const float *held = c->xq_src; /* the q8_1 rows of the layer's input stay valid for the expert GEMVs */
    const size_t hb = held ? sizeof(float) * (size_t)c->xq_n * (size_t)c->xq_K : 0, sb = sizeof(float) * (size_t)T * K;
    OP(x, "moe_route");
    if (held && apart(held, hb, sel, sb) && apart(held, hb, wsel, sb)) c->xq_src = held;
    if (K < 1 || K > E) {
        exec_fail(x, ERR_ARG, "moe_route: top %d of %d experts", K, E);
        return;
    }
    if (T > 0)
        RUN(x, "moe_route", cuda_moe_route(logits, sel, wsel, T, E, K,
                                           gating == MOE_SIGMOID ? CUDA_MOE_SIGMOID : CUDA_MOE_SOFTMAX, renorm, ST(x)));
}

static void cx_moe_combine(exec *x, float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K,
                           int C) {
    OP(x, "moe_combine");
    cuda_exec *c = cx_of(x);
    if (!x->status && T > 0 && K >= 1 && K <= 64 && C > 0 && small_pass(c)) { /* add_gated_rows into y may join it */
        c->pop.kind = CX_POP_COMBINE, c->pop.x = y, c->pop.src = ys, c->pop.sel = sel, c->pop.factors = wsel;
        c->pop.T = T, c->pop.H = K, c->pop.width = C;
        return;
    }
    RUN(x, "moe_combine", cuda_moe_combine(y, ys, sel, wsel, T, K, C, ST(x)));
}

static void cx_add_gated_rows(exec *x, float *y, const float *in, const float *gate, int T, int C) {
    cuda_exec *c = cx_of(x);
    const size_t yb = sizeof(float) * (size_t)T * (size_t)C;
    if (c->pop.kind == CX_POP_COMBINE && c->pop.x == y && c->pop.T == T && c->pop.width == C && !x->status &&
        apart(y, yb, in, yb) && apart(y, yb, gate, sizeof(float) * (size_t)T)) { /* the combine's y += it */
        x->stats.n_ops++;
        c->xq_src = c->xb_src = NULL;
        c->pop.kind = CX_POP_COMBINE_GATED, c->pop.in2 = in, c->pop.gate2 = gate;
        return;
    }
    OP(x, "add_gated_rows");
    if (!x->status && T > 0 && C > 0 && small_pass(c)) { /* an add of y into the residual may join it (cx_add) */
        c->pop.kind = CX_POP_GATED, c->pop.x = y, c->pop.src = in, c->pop.factors = gate, c->pop.rows = T;
        c->pop.width = C;
        return;
    }
    RUN(x, "add_gated_rows", cuda_add_gated_rows(y, in, gate, T, C, ST(x)));
}

const exec_ops cuda_exec_ops = {
    .destroy = cx_destroy,
    .begin_pass = cx_begin_pass,
    .upload = cx_upload,
    .download = cx_download,
    .download_start = cx_download_start,
    .copy = cx_copy,
    .zero = cx_zero,
    .matmul = cx_matmul,
    .get_rows = cx_get_rows,
    .rms_norm = cx_rms_norm,
    .rms_norm_heads = cx_rms_norm_heads,
    .add = cx_add,
    .swiglu = cx_swiglu,
    .copy_cols = cx_copy_cols,
    .set_cols = cx_set_cols,
    .gather_rows = cx_gather_rows,
    .sigmoid_mul = cx_sigmoid_mul,
    .rope = cx_rope,
    .add_bias = cx_add_bias,
    .geglu = cx_geglu,
    .scale = cx_scale,
    .l2_norm = cx_l2_norm,
    .attention = cx_attention,
    .store_rows = cx_store_rows,
    .attend_decode = cx_attend_decode,
    .conv1d_silu = cx_conv1d_silu,
    .gdn_gates = cx_gdn_gates,
    .gdn = cx_gdn,
    .gated_norm = cx_gated_norm,
    .gdn_decode = cx_gdn_decode,
    .moe_route = cx_moe_route,
    .matmul_experts = cx_matmul_experts,
    .moe_combine = cx_moe_combine,
    .add_gated_rows = cx_add_gated_rows,
};
