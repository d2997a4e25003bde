/* kv: per-sequence memory of a model: the KV cache of every full-attention block and the recurrent state
 * (conv window + delta-rule matrix S) of every Gated DeltaNet block.
 *
 * Sizes are planned up front (kv_bytes) so a caller can refuse a configuration that does not fit before
 * allocating anything. Buffers come from the model's backend; kv_free returns them.
 * Layouts: k/v [n_ctx][Hkv][D]; conv [K-1][2*Hk*Dk + Hv*Dv] (oldest input first); ssm [Hv][Dk][Dv]. */
#ifndef LLM170_ENGINE_KV_H
#define LLM170_ENGINE_KV_H

#include <stdint.h>

#include "base/err.h"
#include "engine/model.h"

typedef struct seq_cache {
    int n_past;     /* tokens already in the cache; the next token's position */
    int mtp_past;   /* rows already in the MTP block's cache */
    float **k, **v; /* per block; NULL for GDN blocks */
    float **conv;   /* per block; NULL for attention blocks */
    float **ssm;    /* per block; NULL for attention blocks */
} seq_cache;

typedef struct kv_state {
    const model *m;
    int n_seq, n_ctx;
    seq_cache *seqs;
} kv_state;

/* Bytes kv_new would allocate for n_seq sequences of n_ctx tokens. */
uint64_t kv_bytes(const model *m, int n_seq, int n_ctx);

int kv_new(kv_state **out, const model *m, int n_seq, int n_ctx, err *e);
void kv_free(kv_state *kv);

/* Forgets sequence s: n_past = 0, recurrent state zeroed (a recycled slot must not leak the previous
 * conversation into the next). */
void kv_reset(kv_state *kv, int s);

/* Checkpoints of the recurrent state (prefix reuse on hybrid models): kv_rec_floats floats per sequence, at a
 * float-aligned address,
 * (0 if the model has no GDN block); save copies sequence s's conv windows and S matrices to dst (host
 * memory), restore copies them back. Neither touches n_past or the KV cache. */
int64_t kv_rec_floats(const kv_state *kv);
void kv_rec_save(const kv_state *kv, int s, void *dst);
void kv_rec_restore(kv_state *kv, int s, const void *src);

#endif
