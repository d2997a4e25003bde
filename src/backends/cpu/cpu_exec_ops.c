/* cpu_exec_ops: the CPU executor's ops other than the matmuls (cpu_backend.c): the fast kernels of
 * cpu_elementwise.c, cpu_gdn.c and cpu_attention.c (tested against the references of ops_ref.c), the
 * references themselves where they are a small share of the time, and the device-side MoE routing.
 * Every op counts itself in the executor's stats; transfers count as uploads / downloads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_impl.h"
#include "backends/cpu/cpu_ops.h"
#include "quant/quant.h"

#define OP(x) ((x)->stats.n_ops++)

static void cpu_upload(exec *x, void *dst, const void *src, size_t bytes) {
    x->stats.n_uploads++;
    if (bytes) memmove(dst, src, bytes);
}
static void cpu_download(exec *x, void *dst, const void *src, size_t bytes) {
    x->stats.n_downloads++;
    if (bytes) memmove(dst, src, bytes);
}
static void cpu_copy(exec *x, float *dst, const float *src, int64_t n) {
    OP(x);
    memmove(dst, src, (size_t)n * sizeof(float));
}
static void cpu_zero(exec *x, float *dst, int64_t n) {
    OP(x);
    memset(dst, 0, (size_t)n * sizeof(float));
}

static void cpu_get_rows(exec *x, const weight *w, const int32_t *ids, float *y, int T) {
    OP(x);
    const quant_ops *q = quant_ops_get(w->type, QUANT_ISA_SCALAR);
    size_t rb = qtype_row_bytes(w->type, w->ne[0]);
    for (int t = 0; t < T; t++) q->to_float((const char *)w->data + (size_t)ids[t] * rb, y + (int64_t)t * w->ne[0], w->ne[0]);
}

static void cpu_rms_norm(exec *x, const float *in, const weight *w, float *y, int T, int C, float eps) {
    OP(x);
    cpu_rms_norm_rows(cpu_of(x)->pool, in, w ? (const float *)w->data : NULL, y, T, C, eps);
}

static void cpu_rms_norm_heads(exec *x, float *io, const weight *w, int T, int H, int D, float eps) {
    OP(x);
    cpu_rms_norm_rows(cpu_of(x)->pool, io, w ? (const float *)w->data : NULL, io, (int64_t)T * H, D, eps);
}

static void cpu_add(exec *x, float *y, const float *in, int64_t n) {
    OP(x);
    for (int64_t i = 0; i < n; i++) y[i] += in[i];
}

static void cpu_swiglu(exec *x, const float *g, const float *u, float *y, int64_t n) {
    OP(x);
    cpu_silu_mul(cpu_of(x)->pool, g, u, y, n);
}

static void cpu_copy_cols(exec *x, float *dst, const float *src, int64_t rows, int64_t src_stride, int64_t offset,
                          int64_t n) {
    OP(x);
    for (int64_t r = 0; r < rows; r++) memcpy(dst + r * n, src + r * src_stride + offset, sizeof(float) * (size_t)n);
}

static void cpu_set_cols(exec *x, float *dst, const float *src, int64_t rows, int64_t dst_stride, int64_t offset,
                         int64_t n) {
    OP(x);
    for (int64_t r = 0; r < rows; r++) memcpy(dst + r * dst_stride + offset, src + r * n, sizeof(float) * (size_t)n);
}

static void cpu_gather_rows(exec *x, float *dst, const float *src, const int32_t *idx, int n, int C) {
    OP(x);
    for (int i = 0; i < n; i++) memmove(dst + (int64_t)i * C, src + (int64_t)idx[i] * C, sizeof(float) * (size_t)C);
}

static void cpu_sigmoid_mul_op(exec *x, float *y, const float *gate, int64_t n) {
    OP(x);
    cpu_sigmoid_mul(cpu_of(x)->pool, y, gate, n);
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

static void cpu_rope_op(exec *x, float *io, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                        const weight *factors) {
    OP(x);
    cpu_rope(cpu_of(x)->pool, io, pos, T, H, D, rp, factors ? (const float *)factors->data : NULL);
}

static void cpu_add_bias(exec *x, float *y, const weight *bias, int T, int N) {
    OP(x);
    ref_add_bias(y, bias->data, T, N);
}

static void cpu_geglu_op(exec *x, const float *g, const float *u, float *y, int64_t n) {
    OP(x);
    cpu_geglu(cpu_of(x)->pool, g, u, y, n);
}

static void cpu_scale(exec *x, float *y, float s, int64_t n) {
    OP(x);
    ref_scale(y, s, n);
}

static void cpu_l2_norm(exec *x, float *io, int T, int H, int D, float eps, float scale) {
    OP(x);
    tok_job J = {.x = io, .H = H, .D = D, .eps = eps, .scale = scale};
    pool_run(cpu_of(x)->pool, T, 8, l2_tokens, &J);
}

static void cpu_attention_op(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv,
                             float *out, const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D,
                             float scale, int window) {
    OP(x);
    cpu_exec *c = cpu_of(x);
    const int nt = pool_n_threads(c->pool);
    float *sc = cbuf_get(x, &c->scratch, sizeof(float) * (size_t)cpu_attention_scratch(nt, D), "attention scratch");
    if (sc) cpu_attention(c->pool, sc, q, k, v, tk, tv, out, qpos, kpos, T, S, Hq, Hkv, D, scale, window);
}

static void cpu_store_rows(exec *x, void *dst, enum qtype type, const float *src, int64_t rows, int64_t width) {
    OP(x);
    if (type == QT_F32) {
        memmove(dst, src, sizeof(float) * (size_t)(rows * width));
        return;
    }
    quant_from_float_fn from = quant_ops_best(type).from_float;
    if (!from) {
        exec_fail(x, ERR_UNSUPPORTED, "store_rows: no conversion to %s", qtype_get((uint32_t)type)->name);
        return;
    }
    const size_t rb = qtype_row_bytes(type, width);
    for (int64_t r = 0; r < rows; r++) from(src + r * width, (char *)dst + (size_t)r * rb, width);
}

static void cpu_conv1d_silu_op(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch, int K) {
    OP(x);
    if (cpu_conv1d_silu(cpu_of(x)->pool, in, state, (const float *)w->data, y, T, Ch, K))
        ref_conv1d_silu(in, state, (const float *)w->data, y, T, Ch, K);
}

static void cpu_gdn_gates(exec *x, float *alpha_to_g, float *beta, const weight *ssm_a, const weight *dt_bias, int T,
                          int Hv) {
    OP(x);
    const float *A = ssm_a->data, *dt = dt_bias->data;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < Hv; j++) {
            float a = alpha_to_g[t * Hv + j] + dt[j];
            float sp = a > 20.0f ? a : log1pf(expf(a)); /* softplus, linear above 20 as torch's */
            alpha_to_g[t * Hv + j] = A[j] * sp;
            beta[t * Hv + j] = 1.0f / (1.0f + expf(-beta[t * Hv + j]));
        }
}

static void cpu_gdn_op(exec *x, float *S, const float *q, const float *k, const float *v, const float *g,
                       const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map) {
    OP(x);
    cpu_exec *c = cpu_of(x);
    const int nt = pool_n_threads(c->pool);
    float *sc = cbuf_get(x, &c->scratch, sizeof(float) * (size_t)cpu_gdn_scratch(nt, GDN_CHUNK, Dk, Dv), "GDN scratch");
    if (sc) cpu_gdn(c->pool, sc, S, q, k, v, g, beta, o, T, Hk, Hv, Dk, Dv, GDN_CHUNK, map);
}

static void cpu_gated_norm(exec *x, float *o, const float *z, const weight *w, int T, int Hv, int Dv, float eps) {
    OP(x);
    cpu_rms_norm_rows(cpu_of(x)->pool, o, (const float *)w->data, o, (int64_t)T * Hv, Dv, eps);
    cpu_silu_mul(cpu_of(x)->pool, z, o, o, (int64_t)T * Hv * Dv);
}

/* ---------------------------------------------------------------- MoE */

static void cpu_moe_route(exec *x, const float *logits, int32_t *sel, float *wsel, int T, int E, int K,
                          enum moe_gating gating, bool renorm) {
    OP(x);
    float p[1024];
    if (K < 1 || K > E) {
        exec_fail(x, ERR_ARG, "moe_route: top %d of %d experts", K, E);
        return;
    }
    if (E > (int)(sizeof p / sizeof p[0])) {
        exec_fail(x, ERR_UNSUPPORTED, "moe_route: %d experts, the cpu executor routes at most %d", E,
                  (int)(sizeof p / sizeof p[0]));
        return;
    }
    for (int t = 0; t < T; t++)
        ref_moe_route(logits + (int64_t)t * E, E, K, gating == MOE_SIGMOID, renorm, p, sel + (int64_t)t * K,
                      wsel + (int64_t)t * K);
}

static void cpu_moe_combine(exec *x, float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K,
                            int C) {
    OP(x);
    for (int t = 0; t < T; t++) {
        float *yt = y + (int64_t)t * C;
        memset(yt, 0, sizeof(float) * (size_t)C);
        const int32_t *s = sel + (int64_t)t * K;
        int last = -1;
        for (int n = 0; n < K; n++) { /* ascending expert id: the next larger id after `last` */
            int j = -1;
            for (int q = 0; q < K; q++)
                if (s[q] > last && (j < 0 || s[q] < s[j])) j = q;
            if (j < 0) break;
            last = s[j];
            const float wt = wsel[(int64_t)t * K + j], *src = ys + ((int64_t)t * K + j) * C;
            for (int i = 0; i < C; i++) yt[i] += wt * src[i];
        }
    }
}

static void cpu_add_gated_rows(exec *x, float *y, const float *in, const float *gate, int T, int C) {
    OP(x);
    for (int t = 0; t < T; t++) {
        const float s = 1.0f / (1.0f + expf(-gate[t]));
        float *yt = y + (int64_t)t * C;
        const float *xt = in + (int64_t)t * C;
        for (int i = 0; i < C; i++) yt[i] += s * xt[i];
    }
}

const exec_ops cpu_exec_ops = {
    .destroy = cpu_exec_destroy,
    .begin_pass = cpu_begin_pass,
    .upload = cpu_upload,
    .download = cpu_download,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .matmul = cpu_matmul,
    .get_rows = cpu_get_rows,
    .rms_norm = cpu_rms_norm,
    .rms_norm_heads = cpu_rms_norm_heads,
    .add = cpu_add,
    .swiglu = cpu_swiglu,
    .copy_cols = cpu_copy_cols,
    .set_cols = cpu_set_cols,
    .gather_rows = cpu_gather_rows,
    .sigmoid_mul = cpu_sigmoid_mul_op,
    .rope = cpu_rope_op,
    .add_bias = cpu_add_bias,
    .geglu = cpu_geglu_op,
    .scale = cpu_scale,
    .l2_norm = cpu_l2_norm,
    .attention = cpu_attention_op,
    .store_rows = cpu_store_rows,
    .attend_decode = attend_decode_each, /* backend.c: store_rows and attention a sequence at a time */
    .conv1d_silu = cpu_conv1d_silu_op,
    .gdn_gates = cpu_gdn_gates,
    .gdn = cpu_gdn_op,
    .gated_norm = cpu_gated_norm,
    .gdn_decode = gdn_decode_each, /* backend.c: the five ops a sequence at a time */
    .moe_route = cpu_moe_route,
    .matmul_experts = cpu_matmul_experts,
    .moe_combine = cpu_moe_combine,
    .add_gated_rows = cpu_add_gated_rows,
    .rms_norm_groups = cpu_rms_norm_groups,
    .silu_scaled = cpu_silu_scaled,
    .hc_mix = cpu_hc_mix,
    .hc_add = cpu_hc_add,
    .ple_gate = cpu_ple_gate,
    .conv1d_dilated_silu = cpu_conv1d_dilated_silu,
    .ngram_rows = cpu_ngram_rows,
    .qsa_block_keys = cpu_qsa_block_keys,
    .qsa_select = cpu_qsa_select,
    .attention_sparse = cpu_attention_sparse,
};
