/* llama: the plain pre-norm transformer decoder — GGUF archs llama, qwen2 and qwen3 — and the dense
 * blocks gemma3.c shares with it (llama.h).
 *
 *   x = token_embd[tokens]
 *   for each block:
 *       h = rms_norm(x) * attn_norm
 *       q, k, v = h Wq (+ bq), h Wk (+ bk), h Wv (+ bv)         biases: qwen2
 *       q, k = rms_norm_per_head(q, k) * (q_norm, k_norm)      qwen3
 *       q, k = rope(q, k)                                      llama: NORM pairs, rope_freqs (llama3)
 *       x += softmax(q k^T / sqrt(D), causal) v Wo             GQA: Hq/Hkv query heads per kv head
 *       x += (silu(h' Wgate) * h' Wup) Wdown,  h' = rms_norm(x) * ffn_norm
 *   logits = (rms_norm(x) * output_norm) output                output == token_embd when tied
 *
 * The three archs differ only in data: which optional tensors the file has (biases, q/k norms,
 * rope_freqs, output) and the RoPE pairing llama.cpp assigns each arch (llama: NORM, because the
 * converter permutes llama's q/k rows; qwen2/qwen3: NEOX). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/blocks.h"
#include "models/registry.h"

static int llama_load(model *m, err *e) {
    int rc;
    if ((rc = llama_read_hparams(m, e)) || (rc = blk_bind_globals(m, e))) return rc;
    int64_t half = m->hp.n_rot / 2;
    if ((rc = model_bind(m, &m->rope_freqs, "rope_freqs.weight", 1, &half, false, e)) ||
        (rc = model_require_f32(&m->rope_freqs, e)))
        return rc;
    for (int il = 0; il < m->hp.n_block; il++) {
        layer *L = &m->layers[il];
        if ((rc = llama_bind_attention(m, il, m->arch == ARCH_QWEN3, e)) ||
            (rc = blk_bind_norm(m, il, "ffn_norm.weight", &L->ffn_norm, e)) || (rc = blk_bind_ffn(m, il, e)))
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------- forward */

static void llama_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int64_t tc = (int64_t)w->T * hp->n_embd;
    rope_params rp = {m->arch == ARCH_LLAMA ? ROPE_NORM : ROPE_NEOX, hp->n_rot, hp->rope_theta, hp->rope_freq_scale};
    op->get_rows(x, &m->token_embd, w->ids, w->x, w->T);
    for (int il = 0; il < hp->n_layer; il++) {
        const layer *L = &m->layers[il];
        op->rms_norm(x, w->x, &L->attn_norm, w->h, w->T, hp->n_embd, hp->eps);
        llama_attention(m, c, il, spans, n_spans, &rp, ATTN_NO_WINDOW);
        op->add(x, w->x, w->y, tc);
        op->rms_norm(x, w->x, &L->ffn_norm, w->h, w->T, hp->n_embd, hp->eps);
        blk_ffn(m, c, L, hp->n_ff, ACT_SILU);
        op->add(x, w->x, w->y, tc);
    }
}

static int llama_block_state(const model *m, int il, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    (void)il;
    return blk_attention_state(m, sp, out);
}

const arch_def arch_llama = {ARCH_LLAMA, "llama", llama_load, llama_forward, llama_block_state, NULL};
const arch_def arch_qwen2 = {ARCH_QWEN2, "qwen2", llama_load, llama_forward, llama_block_state, NULL};
const arch_def arch_qwen3 = {ARCH_QWEN3, "qwen3", llama_load, llama_forward, llama_block_state, NULL};
