/* blocks (internal to src/models/): the dense decoder blocks that llama.c (llama, qwen2, qwen3) and
 * gemma3.c share: hyperparameters of a plain attention model, binding of its attention weights, a
 * batch's activation buffers, the attention block over the KV cache, and the output head.
 *
 * Shapes: T tokens of the batch, C = n_embd, Hq/Hkv heads of D = head_dim, I = n_ff, V = n_vocab.
 * Ownership: llama_work_new allocates backend buffers and host arrays that llama_work_free returns. */
#ifndef LLM170_ENGINE_LLAMA_H
#define LLM170_ENGINE_LLAMA_H

#include "engine/forward.h"

/* Activation buffers for one batch of T tokens (backend memory unless marked host). */
typedef struct llama_work {
    int T;
    float *x, *h, *y;  /* [T][C]: residual stream, normed block input, block output */
    float *q, *att;    /* [T][Hq*D]: queries, attention output */
    float *k, *v;      /* [T][Hkv*D] */
    float *g, *u;      /* [T][I]: FFN gate and up projections */
    int32_t *ids;      /* host [T]: token ids, span by span */
    int32_t *pos;      /* host [T]: each token's position in its sequence */
    int32_t *kpos;     /* host [n_ctx]: 0 .. n_ctx-1, the positions of a cache's rows */
    uint8_t *bulk;     /* host [T]: bulk rows (backend_ops.matmul) */
    uint8_t *out_bulk; /* host [T]: the same for the output rows (fwd_bulk_rows) */
} llama_work;

/* Allocates the buffers for the batch and fills ids, pos and the bulk flags from the spans and the cache
 * lengths. */
int llama_work_new(model *m, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w, err *e);
void llama_work_free(backend *be, llama_work *w);

/* Reads the hyperparameters every dense-attention arch has (block_count, widths, heads, key_length,
 * rope base / dimension / linear scaling, rms epsilon) and checks them; attn_scale = 1/sqrt(D). */
int llama_read_hparams(model *m, err *e);

/* Binds token_embd, output_norm, output (tied to token_embd when absent), output.bias if present,
 * and sizes the layer array. */
int llama_bind_globals(model *m, err *e);

/* Binds block il's attention: attn_norm, attn_q/k/v/output with their optional biases, and the q/k
 * norms ({D}; required iff qk_norm). Refuses fused or extra tensors this code would silently skip. */
int llama_bind_attention(model *m, int il, bool qk_norm, err *e);

/* Binds blk.il.<suffix> as an F32 norm weight of C values. */
int llama_bind_norm(model *m, int il, const char *suffix, weight *w, err *e);

/* Binds block il's FFN projections ffn_gate/ffn_up {C, I} and ffn_down {I, C}. */
int llama_bind_ffn(model *m, int il, err *e);

/* Self-attention of block il over every span: reads w->h, writes w->y. q/k get their biases, their
 * per-head norms (when bound), RoPE with rp (and the model's rope_freqs when present); new keys and
 * values are appended to each span's cache; window is the sliding window or ATTN_NO_WINDOW. */
void llama_attention(model *m, int il, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w,
                     const rope_params *rp, int window);

/* Final norm of the rows that want output, the LM head (+ output.bias), downloads into logits /
 * hidden (either may be NULL), and advances every span's n_past. */
int llama_output(model *m, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w, float *logits,
                 float *hidden, err *e);

#endif
