/* backend: the seam between a model's forward pass and the hardware that runs it.
 *
 * A model file (qwen35.c, ...) is written once against this op set; each backend (CPU now, CUDA later)
 * implements every op or refuses the model at load time naming the op it lacks — never a silent per-op
 * fallback to another backend. Ops are coarse (a quantized matmul, an attention over the cache, a whole
 * GDN chunk) so a GPU backend can fuse inside them.
 *
 * Memory: activations and states are `float *` buffers from backend->alloc (host memory on the CPU
 * backend, device memory on a GPU backend); the forward pass never dereferences them itself, it only
 * passes them to ops, and reads results back with `download`. Weights are `weight` handles made by
 * `weight_init` from GGUF tensors; the backend owns whatever it allocates for them.
 * Shapes use the alphabet of ops_ref.h (T tokens, C channels, ...); every op documents its own. */
#ifndef LLM170_ENGINE_BACKEND_H
#define LLM170_ENGINE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/ops_ref.h"
#include "gguf/gguf.h"
#include "quant/qtype.h"

/* A model weight as a backend holds it. For matmuls, ne[0] is the input width (a row), ne[1] the
 * number of output rows, ne[2] the number of experts (1 if none). */
typedef struct weight {
    const char *name;   /* the GGUF tensor name (owned by the gguf_file) */
    enum qtype type;
    int n_dims;
    int64_t ne[4];
    uint64_t nbytes;
    const void *data;   /* backend-owned or mapped; opaque to the model */
} weight;

typedef struct backend backend;

/* A span of at least this many tokens of one sequence makes "bulk" rows (backend_ops.matmul): where the
 * CPU's int8 matrix products (quant/gemm.h) start to beat its row-by-row kernels, panel unpacking
 * included (one Xeon core, a 1024 x 2048 matrix: at 16 tokens 1.0x for Q6_K, 1.2x Q4_K, 2.4x Q8_0; at
 * 8 tokens 0.5-0.6x for the k-quants). */
#define BULK_MIN_ROWS 16

typedef struct backend_ops {
    void (*destroy)(backend *b); /* frees the backend and everything it allocated */
    /* --- memory --- */
    float *(*alloc)(backend *b, int64_t n_floats);          /* zeroed; NULL on OOM */
    void (*free)(backend *b, float *buf);
    void (*upload)(backend *b, float *dst, const float *src, int64_t n);
    void (*download)(backend *b, float *dst, const float *src, int64_t n);
    void (*copy)(backend *b, float *dst, const float *src, int64_t n);
    void (*zero)(backend *b, float *dst, int64_t n);
    /* Binds a GGUF tensor as a weight (CPU: points at the mapped bytes). Fails naming the tensor if the
     * backend cannot use its type for the ops it is meant for. */
    int (*weight_init)(backend *b, weight *w, const gguf_tensor *t, err *e);

    /* --- ops --- */
    /* y[T][ne1] = x[T][ne0] . W^T  (expert e of a 3-D weight; 0 otherwise). bulk (host, may be NULL =
     * all 0): bulk[t] != 0 marks row t as one of a long run of one sequence's tokens (see BULK_MIN_ROWS);
     * a backend may compute those rows with its matrix-product kernels, the others with its row-by-row
     * kernels (the two agree to a few ulps of the terms, not bit for bit). The flag depends only on the
     * row's own sequence, so a sequence's results never depend on what else shares its batch. */
    void (*matmul)(backend *b, const weight *w, int expert, const float *x, float *y, int T, const uint8_t *bulk);
    /* y[T][ne0] = rows ids[t] of W (an embedding lookup, dequantized) */
    void (*get_rows)(backend *b, const weight *w, const int32_t *ids, float *y, int T);
    /* y[T][C] = rms_norm(x) * w  (w: an F32 weight of C values, or NULL) */
    void (*rms_norm)(backend *b, const float *x, const weight *w, float *y, int T, int C, float eps);
    /* x[T][H][D] in place: per-head rms_norm with a shared weight of D values */
    void (*rms_norm_heads)(backend *b, float *x, const weight *w, int T, int H, int D, float eps);
    void (*add)(backend *b, float *y, const float *x, int64_t n);                 /* y += x */
    void (*add_scaled)(backend *b, float *y, const float *x, float s, int64_t n); /* y += s * x */
    void (*swiglu)(backend *b, const float *g, const float *u, float *y, int64_t n); /* y = silu(g) * u */
    /* dst[rows][n] = src[rows][src_stride] columns [offset, offset + n) (splits fused projections) */
    void (*copy_cols)(backend *b, float *dst, const float *src, int64_t rows, int64_t src_stride,
                      int64_t offset, int64_t n);
    void (*sigmoid_mul)(backend *b, float *y, const float *gate, int64_t n);     /* y *= sigmoid(gate) */
    /* x[T][H][D] in place (see ref_rope); factors: an F32 weight of n_rot/2 divisors, or NULL */
    void (*rope)(backend *b, float *x, const int32_t *pos, int T, int H, int D, const rope_params *rp,
                 const weight *factors);
    /* y[T][N] += bias[N] (an F32 weight) */
    void (*add_bias)(backend *b, float *y, const weight *bias, int T, int N);
    void (*geglu)(backend *b, const float *g, const float *u, float *y, int64_t n); /* y = gelu_tanh(g) * u */
    void (*scale)(backend *b, float *y, float s, int64_t n);                        /* y *= s */
    void (*l2_norm)(backend *b, float *x, int T, int H, int D, float eps, float scale);
    /* attention of T queries over a sequence's cache of S positions (see ref_attention); window:
     * sliding-window size, or ATTN_NO_WINDOW */
    void (*attention)(backend *b, const float *q, const float *k, const float *v, float *out,
                      const int32_t *qpos, const int32_t *kpos, int T, int S, int Hq, int Hkv, int D, float scale,
                      int window);
    void (*conv1d_silu)(backend *b, const float *x, float *state, const weight *w, float *y, int T, int Ch, int K);
    /* g[T][Hv] = ssm_a * softplus(alpha + dt_bias); beta[T][Hv] = sigmoid(beta_in); in place */
    void (*gdn_gates)(backend *b, float *alpha_to_g, float *beta, const weight *ssm_a, const weight *dt_bias,
                      int T, int Hv);
    /* the gated delta rule over T tokens from state S (step form for T == 1, chunked otherwise) */
    void (*gdn)(backend *b, float *S, const float *q, const float *k, const float *v, const float *g,
                const float *beta, float *o, int T, int Hk, int Hv, int Dk, int Dv, enum gdn_head_map map);
    /* o[T][Hv][Dv] = rms_norm_per_head(o) * w * silu(z) */
    void (*gated_norm)(backend *b, float *o, const float *z, const weight *w, int T, int Hv, int Dv, float eps);
} backend_ops;

struct backend {
    const char *name;
    const backend_ops *ops;
    void *impl;
};

/* The CPU backend with n_threads threads (>= 1). `exact` selects the f32 reference path for matmuls
 * (weights dequantized to f32, activations not quantized) instead of quantized dot products. */
backend *cpu_backend_new(int n_threads, bool exact, err *e);
static inline void backend_free(backend *b) {
    if (b) b->ops->destroy(b);
}

#endif
