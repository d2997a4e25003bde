/* backend: the seam between a model's forward pass and the hardware that runs it.
 *
 * Two objects (what a new backend, e.g. CUDA, implements):
 *  - a **device** (`backend`, backend_ops): holds the weights (weight_init) and device memory
 *    (alloc/free: KV caches, recurrent state, a context's activation arena). Shared by every context of a
 *    model; read-only while passes run, so contexts may run concurrently.
 *  - an **executor** (`exec`, exec_ops): one per context; its own threads (CPU) or stream (GPU) and the
 *    scratch its ops need, sized once by exec_new from an exec_plan (the worst pass the context will run):
 *    no allocation in a steady-state pass. Every op is stream-ordered on it; the only host transfers are
 *    the explicit upload/download calls, and a model makes them only for its inputs (token ids,
 *    positions) and the outputs the caller asked for.
 *
 * A pass: begin_pass gives the executor the batch's structure once (spans of tokens, each continuing one
 * sequence, and their output rows); the executor derives its kernel policy from it (the CPU's choice of
 * matrix-product kernels for long runs of one sequence's tokens), so a model states only which rows an op
 * runs on (mm_rows). A sequence's results never depend on what else shares its batch.
 *
 * Errors are values: an op that cannot run (out of scratch or device memory, a device error) records the
 * first failure in the executor and later ops do nothing; exec_status reads and clears it (what was
 * needed and what was available). Nothing aborts.
 *
 * Memory: buffers are device memory from backend_ops.alloc, typed by the op that reads them (f32
 * activations, int32 ids / positions / expert selections, the KV cache in the context's cache types: F32,
 * F16, BF16 or Q8_0 rows written by store_rows and read by attention); the forward pass never
 * dereferences them. backend_cache_type_ok says which cache types an executor's ops take. Shapes use the alphabet of ops_ref.h (T tokens, C channels, ...). */
#ifndef LLM170_BACKENDS_BACKEND_H
#define LLM170_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/ops_ref.h"
#include "gguf/gguf.h"
#include "quant/qtype.h"

/* A model weight as a device holds it. For matmuls, ne[0] is the input width (a row), ne[1] the
 * number of output rows, ne[2] the number of experts (1 if none). */
typedef struct weight {
    const char *name;   /* the GGUF tensor name (owned by the gguf_file) */
    enum qtype type;
    int n_dims;
    int64_t ne[4];
    uint64_t nbytes;
    const void *data;   /* device-owned or mapped; opaque to the model */
} weight;

typedef struct backend backend;
typedef struct exec exec;

/* The worst pass an executor must run without allocating (a dry plan from the context's parameters). */
typedef struct exec_plan {
    int max_tokens;   /* T of the largest pass (the context's n_batch) */
    int max_out;      /* output rows of one output-head call */
    int n_ctx;        /* the longest sequence a pass attends over */
    int max_in;       /* widest matmul input (largest weight ne[0]); 0 = the device's largest */
    int attn_d;       /* attention head dim (0: no attention) */
    int attn_hq;      /* attention query heads (0: unknown; a GPU's decode attention scratch is sized by it) */
    int gdn_dk, gdn_dv; /* delta-rule key / value head dims (0: none) */
    int gdn_hv;       /* delta-rule value heads (0: unknown; a GPU's chunked-form scratch is sized by it) */
    int moe_k;        /* experts per token (0: no MoE) */
    int qsa_keys;     /* sparse attention: most keys one query reads (budget + block - 1; 0: none) */
    int qsa_heads;    /* its query heads */
    int n_threads;    /* CPU threads (CPU executors) */
} exec_plan;

/* One sequence of a batched decode step (attend_decode): its K and V caches, its new token's slot and row
 * in the pass, and that position on the device (device int32, = pos). */
typedef struct attn_seq {
    void *k, *v;
    const int32_t *qpos;
    int32_t pos, row;
} attn_seq;
#define ATTN_DECODE_MAX_SEQS 64 /* sequences one attend_decode call takes */

/* gdn_decode: one sequence's recurrent state (device memory: conv [Kc-1][2 Hk Dk + Hv Dv], S [Hv][Dk][Dv]),
 * a Gated DeltaNet layer's weights after its projections (F32: conv [dc][Kc], ssm_a and dt_bias [Hv], the
 * gated norm's [Dv]) and its shape. */
typedef struct gdn_seq {
    float *conv, *S;
} gdn_seq;
typedef struct gdn_weights {
    const weight *conv, *a, *dt, *norm;
} gdn_weights;
typedef struct gdn_shape {
    int Hk, Hv, Dk, Dv, Kc;
    float eps;
    enum gdn_head_map map;
} gdn_shape;
#define GDN_DECODE_MAX_SEQS 64 /* sequences one gdn_decode call takes */

/* One span of a pass: n tokens of one sequence, the last n_out of which are output rows. */
typedef struct pass_span {
    int n, n_out;
} pass_span;

/* Which rows a matmul runs on: the pass's T token rows, or output rows [first, first + T) of the pass
 * (the output head, taken in pieces), or rows with no structure (row-by-row kernels), or rows that a
 * benchmark declares one long run of a sequence (matrix-product kernels at any T). */
typedef struct mm_rows {
    enum { MM_PASS, MM_OUT, MM_ROWWISE, MM_RUN } kind;
    int first;
} mm_rows;
#define MM_ROWS_PASS ((mm_rows){MM_PASS, 0})

/* MoE gating of the router logits (moe_route). */
enum moe_gating { MOE_SOFTMAX, MOE_SIGMOID };

/* Per-executor counters (tests and `--profile`): op calls and host transfers since exec_new. */
typedef struct exec_stats {
    uint64_t n_ops, n_uploads, n_downloads;
} exec_stats;

typedef struct backend_ops {
    void (*destroy)(backend *b); /* frees the device and everything it allocated */
    /* device memory: zeroed; NULL when the device is out of memory */
    void *(*alloc)(backend *b, size_t bytes);
    void (*free)(backend *b, void *buf);
    /* Binds a GGUF tensor as a weight (CPU: points at the mapped bytes). Fails naming the tensor if the
     * device cannot use its type for the ops it is meant for. */
    int (*weight_init)(backend *b, weight *w, const gguf_tensor *t, err *e);
    /* A new executor for plan; NULL with a message (needed vs available) when its scratch does not fit. */
    exec *(*exec_new)(backend *b, const exec_plan *plan, err *e);
    /* backend_default_cache_type / backend_cache_type_ok for this device; NULL: the CPU's answers */
    enum qtype (*default_cache_type)(const backend *b);
    bool (*cache_type_ok)(const backend *b, enum qtype t, int64_t D);
    /* host memory that downloads land in fastest (CUDA: page-locked, so a copy goes straight to it instead of
     * through the driver's bounce buffers); NULL: malloc / free. backend_host_alloc / backend_host_free. */
    void *(*host_alloc)(backend *b, size_t bytes);
    void (*host_free)(backend *b, void *p);
} backend_ops;

typedef struct exec_ops {
    void (*destroy)(exec *x);
    /* the batch structure of the next pass (copied), before the pass's uploads; later MM_PASS / MM_OUT
     * matmuls refer to it. An executor may record the pass and run it at its first download (CUDA graphs) */
    void (*begin_pass)(exec *x, const pass_span *spans, int n_spans);
    /* --- transfers (bytes) and device copies: upload reads src before it returns; download waits --- */
    void (*upload)(exec *x, void *dst, const void *src, size_t bytes);
    void (*download)(exec *x, void *dst, const void *src, size_t bytes);
    /* a download that the next download completes: dst must not be read before that one returns (one wait for
     * a pass's logits and hidden rows); NULL: download */
    void (*download_start)(exec *x, void *dst, const void *src, size_t bytes);
    void (*copy)(exec *x, float *dst, const float *src, int64_t n);
    void (*zero)(exec *x, float *dst, int64_t n);

    /* --- ops --- */
    /* y[T][ne1] = x[T][ne0] . W^T  (expert e of a 3-D weight; 0 otherwise) on the rows `rows` names */
    void (*matmul)(exec *x, const weight *w, int expert, const float *in, float *y, int T, mm_rows rows);
    /* y[T][ne0] = rows ids[t] of W (an embedding lookup, dequantized); ids: device int32 */
    void (*get_rows)(exec *x, const weight *w, const int32_t *ids, float *y, int T);
    /* y[T][C] = rms_norm(x) * w  (w: an F32 weight of C values, or NULL) */
    void (*rms_norm)(exec *x, const float *in, const weight *w, float *y, int T, int C, float eps);
    /* x[T][H][D] in place: per-head rms_norm with a shared weight of D values */
    void (*rms_norm_heads)(exec *x, float *io, const weight *w, int T, int H, int D, float eps);
    void (*add)(exec *x, float *y, const float *in, int64_t n);                 /* y += x */
    void (*swiglu)(exec *x, const float *g, const float *u, float *y, int64_t n); /* y = silu(g) * u */
    /* dst[rows][n] = src[rows][src_stride] columns [offset, offset + n) (splits fused projections) */
    void (*copy_cols)(exec *x, float *dst, const float *src, int64_t rows, int64_t src_stride, int64_t offset,
                      int64_t n);
    /* dst[rows][dst_stride] columns [offset, offset + n) = src[rows][n] (concatenation) */
    void (*set_cols)(exec *x, float *dst, const float *src, int64_t rows, int64_t dst_stride, int64_t offset,
                     int64_t n);
    /* dst[i][C] = src[idx[i]][C] for i < n (gather rows by index; idx: device int32) */
    void (*gather_rows)(exec *x, float *dst, const float *src, const int32_t *idx, int n, int C);
    void (*sigmoid_mul)(exec *x, float *y, const float *gate, int64_t n);     /* y *= sigmoid(gate) */
    /* x[T][H][D] in place (see ref_rope); pos: device int32; factors: an F32 weight of n_rot/2 divisors,
     * or NULL */
    void (*rope)(exec *x, float *io, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                 const weight *factors);
    /* y[T][N] += bias[N] (an F32 weight) */
    void (*add_bias)(exec *x, float *y, const weight *bias, int T, int N);
    void (*geglu)(exec *x, const float *g, const float *u, float *y, int64_t n); /* y = gelu_tanh(g) * u */
    void (*scale)(exec *x, float *y, float s, int64_t n);                        /* y *= s */
    void (*l2_norm)(exec *x, float *io, int T, int H, int D, float eps, float scale);
    /* attention of T queries over a sequence's cache of S positions (see ref_attention); k and v: caches
     * of type tk / tv (rows of Hkv*D values; F32, F16, BF16 or Q8_0); qpos, kpos: device int32; window:
     * sliding-window size, or ATTN_NO_WINDOW. The queries of one call are consecutive positions (qpos[t] =
     * qpos[0] + t) and cache slot s holds position s (kpos[s] = s): a GPU's flash-attention prefill reads
     * only qpos[0] */
    void (*attention)(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv, float *out,
                      const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale,
                      int window);
    /* dst = rows of `width` values of type `type` (F32, F16, BF16, Q8_0: a cache's row layout,
     * qtype_row_bytes(type, width) bytes each) from src[rows][width] (writes new keys / values) */
    void (*store_rows)(exec *x, void *dst, enum qtype type, const float *src, int64_t rows, int64_t width);
    /* The attention of a batched decode step, one new token for each of n <= ATTN_DECODE_MAX_SEQS sequences
     * (seqs: a host array): token i's key and value (rows seqs[i].row of k and v, Hkv*D values) are stored
     * at slot seqs[i].pos of its caches (type tk / tv), then its query (row seqs[i].row of q) attends over
     * slots [0, pos] into that row of out: what store_rows, store_rows and attention (T = 1, S = pos + 1)
     * do for each sequence alone, in fewer launches. A sequence's bits do not depend on the others in the
     * call. kpos, scale, window as for attention. */
    void (*attend_decode)(exec *x, const attn_seq *seqs, int n, const float *q, const float *k, const float *v,
                          float *out, enum qtype tk, enum qtype tv, const int32_t *kpos, int Hq, int Hkv, int D,
                          float scale, int window);
    void (*conv1d_silu)(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch, int K);
    /* g[T][Hv] = ssm_a * softplus(alpha + dt_bias); beta[T][Hv] = sigmoid(beta_in); in place */
    void (*gdn_gates)(exec *x, float *alpha_to_g, float *beta, const weight *ssm_a, const weight *dt_bias, int T,
                      int Hv);
    /* the gated delta rule over T tokens from state S (the CPU: step form token by token for short spans, so a
     * span gives the bits of one-token steps; chunked otherwise) */
    void (*gdn)(exec *x, float *S, const float *q, const float *k, const float *v, const float *g, const float *beta,
                float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map);
    /* o[T][Hv][Dv] = rms_norm_per_head(o) * w * silu(z) */
    void (*gated_norm)(exec *x, float *o, const float *z, const weight *w, int T, int Hv, int Dv, float eps);
    /* One decode token of each of n <= GDN_DECODE_MAX_SEQS sequences through a Gated DeltaNet layer, from its
     * projections to the gated norm (row i of qkv [n][2 Hk Dk + Hv Dv], alpha, beta [n][Hv], z and o [n][Hv*Dv]
     * is sequence i's): gdn_gates over the n rows, then per sequence conv1d_silu of its qkv row with its conv
     * state into its row of work (q | k | v), l2_norm of q (times Dk^-1/2) and of k, the delta rule on its
     * S, and gated_norm of the n rows of o with z: what those ops do one by one (gdn_decode_each, backend.c),
     * in fewer launches on a GPU. The states advance in place; alpha, beta and work are left unspecified.
     * A sequence's bits do not depend on the others in the call. */
    void (*gdn_decode)(exec *x, const gdn_seq *seqs, int n, const float *qkv, float *alpha, float *beta,
                       const float *z, const gdn_weights *w, float *work, float *o, const gdn_shape *sh);

    /* --- MoE, all on the device --- */
    /* logits[T][E] -> sel[T][K] (int32 expert ids, best first; ties to the lower id) and wsel[T][K]:
     * softmax over all E (or sigmoid), top-K, divided by their sum when renorm. */
    void (*moe_route)(exec *x, const float *logits, int32_t *sel, float *wsel, int T, int E, int K,
                      enum moe_gating gating, bool renorm);
    /* The grouped expert matmul: y[t*K + j] = W[sel[t][j]] . in[r], r = t (in_per_slot false: in is
     * [T][ne0]) or r = t*K + j (true: in is [T*K][ne0]); one call for every routed row of the pass
     * (T must be the pass's T). */
    void (*matmul_experts)(exec *x, const weight *w, const int32_t *sel, int K, const float *in, bool in_per_slot,
                           float *y, int T);
    /* y[t][C] = sum over j of wsel[t][j] * ys[t*K + j][C], summed in ascending expert id (sel) order from
     * zero (scatter-add of the routed rows) */
    void (*moe_combine)(exec *x, float *y, const float *ys, const int32_t *sel, const float *wsel, int T, int K,
                        int C);
    /* y[t][C] += sigmoid(gate[t]) * in[t][C] (a gated residual, e.g. the shared expert) */
    void (*add_gated_rows)(exec *x, float *y, const float *in, const float *gate, int T, int C);
    /* --- hyper-connections, PLE, QSA (qwen4exp); the math of each is its ref_ function in ops_ref.h --- */
    /* y[T][G][D] = per-group rms_norm(x) * w (w: an F32 weight of G*D values: each group its own slice) */
    void (*rms_norm_groups)(exec *x, const float *in, const weight *w, float *y, int T, int G, int D, float eps);
    void (*silu_scaled)(exec *x, const float *in, float *y, float s, int64_t n); /* y = silu(s * x) */
    /* m[T][D] = mean over S streams of sigmoid(gate) * xn (xn, gate [T][S][D]) */
    void (*hc_mix)(exec *x, const float *xn, const float *gate, float *m, int T, int S, int D);
    /* X[T][S][D] += 2 sigmoid(inj[T][S] / S) * y[T][D] */
    void (*hc_add)(exec *x, float *X, const float *y, const float *inj, int T, int S, int D);
    /* out[T][S][D] = sigmoid(signed sqrt(key . query / sqrt(D))) * v[T][D], per stream */
    void (*ple_gate)(exec *x, const float *key, const float *query, const float *v, float *out, int T, int S, int D);
    /* conv1d_silu with dilation dil: state [(K-1)*dil][Ch] */
    void (*conv1d_dilated_silu)(exec *x, const float *in, float *state, const weight *w, float *y, int T, int Ch,
                                int K, int dil);
    /* rows[T][n_heads] (device int32) of the hashed n-gram table for ids[T] (device int32) after the history
     * state hist[N-1] (updated) */
    void (*ngram_rows)(exec *x, const int32_t *ids, float *hist, int32_t *rows, int T, const ngram_hash *h);
    /* compressed keys blk[b0..b1) from the raw indexer keys (w: an F32 norm weight of D values) */
    void (*qsa_block_keys)(exec *x, const float *raw, float *blk, int b0, int b1, int c, int D, const weight *w,
                           float eps, const rope_params *rp);
    /* sel[T][n_sel] (device int32): each query's blocks (ascending, then -1); qpos: device int32 */
    void (*qsa_select)(exec *x, const float *q, const float *blk, const int32_t *qpos, int32_t *sel, int T, int Hi,
                       int D, int c, int n_sel);
    /* attention over each query's selected blocks and its tail (caches of type tk / tv as for attention) */
    void (*attention_sparse)(exec *x, const float *q, const void *k, const void *v, enum qtype tk, enum qtype tv,
                             float *out, const int32_t *qpos, const int32_t *sel, int T, int Hq, int Hkv, int D,
                             float scale, int c, int n_sel);
} exec_ops;

struct backend {
    const char *name;
    const backend_ops *ops;
    void *impl;
};

struct exec {
    backend *dev;
    const exec_ops *ops;
    void *impl;
    exec_stats stats;
    int status;        /* the first failure since exec_status (0 = none) */
    char msg[256];
};

/* Records a failure (the first one wins) and returns its code. Backends call it from ops. */
int exec_fail(exec *x, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0, or the recorded failure copied to e (then cleared). */
int exec_status(exec *x, err *e);

/* The batch structure of a pass as an executor keeps it from begin_pass, and the kernel family of each
 * matmul row: 1 where the row belongs to a span of at least `min_bulk` tokens of one sequence (the
 * backend's matrix-product kernel), 0 otherwise (its row-by-row kernel). Shared by the backends; each
 * states only its min_bulk. The family depends on the row's own span, so a sequence's results never
 * depend on what else shares its batch. */
typedef struct pass_rows {
    int R;             /* most rows of one matmul call (max of the plan's max_tokens and max_out) */
    int max_tokens, min_bulk;
    int T, n_spans, n_out; /* the current pass */
    uint8_t *bulk, *out_bulk, *ones; /* [R] per token row, per output row; ones: all 1 (MM_RUN) */
    int32_t *span_of;  /* [R]: the span of each token row */
} pass_rows;
/* Sizes p for plan; 0, or ERR_NOMEM. */
int pass_rows_init(pass_rows *p, const exec_plan *plan, int min_bulk);
void pass_rows_free(pass_rows *p);
/* begin_pass's shared part: the spans into p (a pass larger than the plan records a failure in x). */
void pass_rows_begin(exec *x, pass_rows *p, const pass_span *spans, int n_spans);
/* The family flags of a matmul of T rows named by rows (NULL for MM_ROWWISE: all row-by-row); false, with a
 * failure recorded in x, where the rows are not the pass's. */
bool pass_rows_family(exec *x, const pass_rows *p, const char *name, int T, mm_rows rows, const uint8_t **fam);

/* attend_decode the plain way: each sequence alone through the executor's own store_rows (key, value) and
 * attention (T = 1). The CPU's attend_decode; a GPU's for the caches and shapes its batched kernels do
 * not take. */
void attend_decode_each(exec *x, const attn_seq *seqs, int n, const float *q, const float *k, const float *v,
                        float *out, enum qtype tk, enum qtype tv, const int32_t *kpos, int Hq, int Hkv, int D,
                        float scale, int window);

/* gdn_decode the plain way: gdn_gates, conv1d_silu, l2_norm, gdn and gated_norm through the executor's own
 * ops. The CPU's gdn_decode; a GPU's for the shapes its fused kernel does not take. */
void gdn_decode_each(exec *x, const gdn_seq *seqs, int n, const float *qkv, float *alpha, float *beta, const float *z,
                     const gdn_weights *w, float *work, float *o, const gdn_shape *sh);

/* Whether attention / store_rows take caches of type t on this device (and, for a block type, rows of
 * width D: whole blocks). */
bool backend_cache_type_ok(const backend *b, enum qtype t, int64_t D);
/* The cache type a context gets by default on this device: the CPU's is F32 (its attention converts an
 * f16 cache one key block per query head: +3-5% CPU per decoded token on SmolLM2 135M, docs/benchmarks.md);
 * a GPU's will be F16 (llama.cpp's default). */
enum qtype backend_default_cache_type(const backend *b);
/* Host memory for what a context downloads every pass (its logits and hidden rows): the device's host_alloc
 * (CUDA: page-locked), else malloc. NULL when out of memory. Free it with backend_host_free on the same b. */
void *backend_host_alloc(backend *b, size_t bytes);
void backend_host_free(backend *b, void *p);

/* Devices other than the CPU come from providers registered at start-up (the CUDA backend is its own
 * library, linked by the CLI, which calls cuda_backend_register: the core does not depend on it).
 * backend_register is not thread-safe: call it before any backend_open. */
typedef struct backend_provider {
    const char *prefix;                 /* "cuda": opens "cuda" and "cuda:N" */
    const char *(*list)(void);          /* this machine's devices, comma-separated ("" when none) */
    backend *(*open)(const char *device, int n_threads, bool exact, err *e);
} backend_provider;
void backend_register(const backend_provider *p);

/* Devices this build has on this machine ("cpu", "cpu,cuda:0"), as a comma-separated list. */
const char *backend_devices(void);
/* Opens the named device ("cpu", "cuda", "cuda:N"; NULL or "" = "cpu"). Unknown or unavailable: an
 * error listing the devices this build has; never another device in its place. */
backend *backend_open(const char *device, int n_threads, bool exact, err *e);

/* The CPU backend with n_threads threads per executor (>= 1). `exact` selects the f32 reference path for
 * matmuls (weights dequantized to f32, activations not quantized) instead of quantized dot products. */
backend *cpu_backend_new(int n_threads, bool exact, err *e);
static inline void backend_free(backend *b) {
    if (b) b->ops->destroy(b);
}
static inline void exec_free(exec *x) {
    if (x) x->ops->destroy(x);
}

#endif
