/* kv: per-sequence memory of a model: whatever state each block's architecture declares
 * (arch_def.block_state): the KV cache of a full-attention block, the conv window and delta-rule matrix S
 * of a Gated DeltaNet block, ... kv.c knows no kind: a new kind is a new block_state, not an edit here.
 *
 * Sizes are planned up front (kv_bytes) so a caller can refuse a configuration that does not fit before
 * allocating anything. Buffers are device memory from the model's backend; kv_free returns them.
 * Stream operations (zeroing on reset, checkpoints) run on the context's executor.
 * Layouts are the architecture's: attention k/v [n_ctx][Hkv][D]; GDN conv [K-1][2*Hk*Dk + Hv*Dv]
 * (oldest input first), ssm [Hv][Dk][Dv]. */
#ifndef LLM170_ENGINE_KV_H
#define LLM170_ENGINE_KV_H

#include <stdint.h>

#include "base/err.h"
#include "engine/model.h"

typedef struct seq_cache {
    int n_past;     /* tokens already in the cache; the next token's position */
    int mtp_past;   /* rows already in the MTP block's cache */
    void **buf;     /* [n_block][STATE_MAX_BUFS]: block il's state buffer i, or NULL */
} seq_cache;

/* Block il's state buffer i of a sequence (attention: 0 = k, 1 = v; GDN: 0 = conv, 1 = ssm). */
static inline void *seq_state(const seq_cache *c, int il, int i) { return c->buf[il * STATE_MAX_BUFS + i]; }

typedef struct kv_state {
    const model *m;
    exec *x;        /* the context's executor (stream operations) */
    int n_seq, n_ctx;
    state_plan plan; /* n_ctx and the KV cache types */
    seq_cache *seqs;
} kv_state;

/* Bytes kv_new would allocate for n_seq sequences under the plan. */
uint64_t kv_bytes(const model *m, int n_seq, const state_plan *sp);

/* Fails naming the type if the device's attention does not take a cache type of the plan. */
int kv_new(kv_state **out, const model *m, exec *x, int n_seq, const state_plan *sp, err *e);
void kv_free(kv_state *kv);

/* Forgets sequence s: n_past = 0, recurrent state zeroed (a recycled slot must not leak the previous
 * conversation into the next). */
void kv_reset(kv_state *kv, int s);

/* Checkpoints of the recurrent state (prefix reuse on hybrid models): kv_rec_floats floats per sequence
 * (0 if the model has none); save copies sequence s's recurrent buffers to dst (host memory), restore
 * copies them back. Neither touches n_past or the caches. */
int64_t kv_rec_floats(const kv_state *kv);
void kv_rec_save(const kv_state *kv, int s, void *dst);
void kv_rec_restore(kv_state *kv, int s, const void *src);

#endif
