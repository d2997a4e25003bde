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

/* ---------------------------------------------------------------- hyperparameters */

int llama_read_hparams(model *m, err *e) {
    hparams *hp = &m->hp;
    int rc;
    if ((rc = model_get_u32(m, "block_count", &hp->n_block, e)) ||
        (rc = model_get_u32(m, "context_length", &hp->n_ctx_train, e)) ||
        (rc = model_get_u32(m, "embedding_length", &hp->n_embd, e)) ||
        (rc = model_get_u32(m, "feed_forward_length", &hp->n_ff, e)) ||
        (rc = model_get_u32(m, "attention.head_count", &hp->n_head, e)) ||
        (rc = model_get_f32(m, "attention.layer_norm_rms_epsilon", &hp->eps, true, e)))
        return rc;
    char key[128];
    /* optional keys with llama.cpp's defaults */
    hp->n_head_kv = hp->n_head;
    snprintf(key, sizeof key, "%s.attention.head_count_kv", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "attention.head_count_kv", &hp->n_head_kv, e))) return rc;
    if (hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return err_set(e, ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d", hp->n_head, hp->n_head_kv);
    hp->head_dim = hp->n_embd / hp->n_head;
    int val_len = -1;
    snprintf(key, sizeof key, "%s.attention.key_length", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "attention.key_length", &hp->head_dim, e))) return rc;
    snprintf(key, sizeof key, "%s.attention.value_length", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "attention.value_length", &val_len, e))) return rc;
    if (val_len >= 0 && val_len != hp->head_dim)
        return err_set(e, ERR_UNSUPPORTED, "attention key_length %d != value_length %d", hp->head_dim, val_len);
    hp->n_rot = hp->head_dim;
    snprintf(key, sizeof key, "%s.rope.dimension_count", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "rope.dimension_count", &hp->n_rot, e))) return rc;
    if (hp->head_dim <= 0 || hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return err_set(e, ERR_FORMAT, "rope.dimension_count %d must be even and <= head dim %d", hp->n_rot, hp->head_dim);
    hp->rope_theta = 10000.0f;
    if ((rc = model_get_f32(m, "rope.freq_base", &hp->rope_theta, false, e))) return rc;
    /* RoPE scaling: none or linear (a position scale); llama3's is the rope_freqs tensor, not a key */
    char type[32] = "linear";
    snprintf(key, sizeof key, "%s.rope.scaling.type", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = gguf_get_cstr(m->gguf, key, type, sizeof type, e))) return rc;
    if (strcmp(type, "none") && strcmp(type, "linear"))
        return err_set(e, ERR_UNSUPPORTED, "%s = '%s' is not supported (supported: none, linear)", key, type);
    float factor = 0.0f;
    if ((rc = model_get_f32(m, "rope.scaling.factor", &factor, false, e))) return rc;
    hp->rope_freq_scale = factor == 0.0f || !strcmp(type, "none") ? 1.0f : 1.0f / factor;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->n_layer = hp->n_block;
    if (hp->n_layer <= 0 || hp->n_embd <= 0 || hp->n_ff <= 0)
        return err_set(e, ERR_FORMAT, "block_count %d, embedding_length %d, feed_forward_length %d must be > 0",
                       hp->n_block, hp->n_embd, hp->n_ff);
    return 0;
}

/* ---------------------------------------------------------------- weights */

static int bind_blk(model *m, int il, const char *suffix, weight *w, bool required, int nd, int64_t ne0, int64_t ne1,
                    err *e) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    int64_t ne[2] = {ne0, ne1};
    return model_bind(m, w, name, nd, ne, required, e);
}

int llama_bind_norm(model *m, int il, const char *suffix, weight *w, err *e) {
    int rc = bind_blk(m, il, suffix, w, true, 1, m->hp.n_embd, 0, e);
    return rc ? rc : model_require_f32(w, e);
}

int llama_bind_globals(model *m, err *e) {
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return err_set(e, ERR_NOTFOUND, "tensor 'token_embd.weight' is missing");
    m->hp.n_vocab = (int)te->ne[1];
    int64_t ne[2] = {m->hp.n_embd, m->hp.n_vocab}, nv = m->hp.n_vocab;
    int rc;
    if ((rc = model_bind(m, &m->token_embd, "token_embd.weight", 2, ne, true, e)) ||
        (rc = model_bind(m, &m->output_norm, "output_norm.weight", 1, ne, true, e)) ||
        (rc = model_bind(m, &m->output, "output.weight", 2, ne, false, e)) ||
        (rc = model_bind(m, &m->output_bias, "output.bias", 1, &nv, false, e)) ||
        (rc = model_require_f32(&m->output_norm, e)) || (rc = model_require_f32(&m->output_bias, e)))
        return rc;
    m->tied = m->output.data == NULL;
    if (m->tied) m->output = m->token_embd;
    m->layers = calloc((size_t)m->hp.n_block, sizeof *m->layers);
    if (!m->layers) return err_set(e, ERR_NOMEM, "out of memory");
    return 0;
}

int llama_bind_attention(model *m, int il, bool qk_norm, err *e) {
    const hparams *hp = &m->hp;
    layer *L = &m->layers[il];
    int64_t C = hp->n_embd, D = hp->head_dim, Q = (int64_t)hp->n_head * D, KV = (int64_t)hp->n_head_kv * D;
    /* tensors of variants this code does not run: refuse rather than silently skip them */
    static const char *unsupported[] = {"attn_qkv.weight", "ffn_gate_inp.weight", "ffn_gate.bias", "ffn_up.bias",
                                        "ffn_down.bias"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%d.%s", il, unsupported[i]);
        if (gguf_find_tensor(m->gguf, name))
            return err_set(e, ERR_UNSUPPORTED, "tensor '%s': this %s variant is not supported", name,
                           model_arch_name(m->arch));
    }
    int rc;
    if ((rc = llama_bind_norm(m, il, "attn_norm.weight", &L->attn_norm, e)) ||
        (rc = bind_blk(m, il, "attn_q.weight", &L->attn_q, true, 2, C, Q, e)) ||
        (rc = bind_blk(m, il, "attn_k.weight", &L->attn_k, true, 2, C, KV, e)) ||
        (rc = bind_blk(m, il, "attn_v.weight", &L->attn_v, true, 2, C, KV, e)) ||
        (rc = bind_blk(m, il, "attn_output.weight", &L->attn_output, true, 2, Q, C, e)) ||
        (rc = bind_blk(m, il, "attn_q.bias", &L->attn_q_bias, false, 1, Q, 0, e)) ||
        (rc = bind_blk(m, il, "attn_k.bias", &L->attn_k_bias, false, 1, KV, 0, e)) ||
        (rc = bind_blk(m, il, "attn_v.bias", &L->attn_v_bias, false, 1, KV, 0, e)) ||
        (rc = bind_blk(m, il, "attn_output.bias", &L->attn_output_bias, false, 1, C, 0, e)) ||
        (rc = model_require_f32(&L->attn_q_bias, e)) || (rc = model_require_f32(&L->attn_k_bias, e)) ||
        (rc = model_require_f32(&L->attn_v_bias, e)) || (rc = model_require_f32(&L->attn_output_bias, e)))
        return rc;
    if (qk_norm &&
        ((rc = bind_blk(m, il, "attn_q_norm.weight", &L->attn_q_norm, true, 1, D, 0, e)) ||
         (rc = bind_blk(m, il, "attn_k_norm.weight", &L->attn_k_norm, true, 1, D, 0, e)) ||
         (rc = model_require_f32(&L->attn_q_norm, e)) || (rc = model_require_f32(&L->attn_k_norm, e))))
        return rc;
    return 0;
}

int llama_bind_ffn(model *m, int il, err *e) {
    layer *L = &m->layers[il];
    int64_t C = m->hp.n_embd, I = m->hp.n_ff;
    int rc;
    if ((rc = bind_blk(m, il, "ffn_gate.weight", &L->ffn_gate, true, 2, C, I, e)) ||
        (rc = bind_blk(m, il, "ffn_up.weight", &L->ffn_up, true, 2, C, I, e)) ||
        (rc = bind_blk(m, il, "ffn_down.weight", &L->ffn_down, true, 2, I, C, e)))
        return rc;
    return 0;
}

int llama_load(model *m, err *e) {
    int rc;
    if ((rc = llama_read_hparams(m, e)) || (rc = llama_bind_globals(m, e))) return rc;
    int64_t half = m->hp.n_rot / 2;
    if ((rc = model_bind(m, &m->rope_freqs, "rope_freqs.weight", 1, &half, false, e)) ||
        (rc = model_require_f32(&m->rope_freqs, e)))
        return rc;
    for (int il = 0; il < m->hp.n_block; il++) {
        layer *L = &m->layers[il];
        if ((rc = llama_bind_attention(m, il, m->arch == ARCH_QWEN3, e)) ||
            (rc = llama_bind_norm(m, il, "ffn_norm.weight", &L->ffn_norm, e)) || (rc = llama_bind_ffn(m, il, e)))
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------- activations */

void llama_work_free(backend *be, llama_work *w) {
    float *bufs[] = {w->x, w->h, w->y, w->q, w->att, w->k, w->v, w->g, w->u};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->ops->free(be, bufs[i]);
    free(w->ids);
    free(w->pos);
    free(w->kpos);
    free(w->bulk);
    free(w->out_bulk);
    memset(w, 0, sizeof *w);
}

int llama_work_new(model *m, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    memset(w, 0, sizeof *w);
    for (int s = 0; s < n_spans; s++) w->T += spans[s].n;
    int64_t T = w->T, tc = T * hp->n_embd, tq = T * hp->n_head * hp->head_dim, tkv = T * hp->n_head_kv * hp->head_dim,
            tf = T * hp->n_ff;
    w->x = be->ops->alloc(be, tc);
    w->h = be->ops->alloc(be, tc);
    w->y = be->ops->alloc(be, tc);
    w->q = be->ops->alloc(be, tq);
    w->att = be->ops->alloc(be, tq);
    w->k = be->ops->alloc(be, tkv);
    w->v = be->ops->alloc(be, tkv);
    w->g = be->ops->alloc(be, tf);
    w->u = be->ops->alloc(be, tf);
    w->ids = malloc(sizeof(int32_t) * (size_t)T);
    w->pos = malloc(sizeof(int32_t) * (size_t)T);
    w->kpos = malloc(sizeof(int32_t) * (size_t)kv->n_ctx);
    w->bulk = malloc((size_t)T);
    w->out_bulk = malloc((size_t)T);
    if (!w->x || !w->h || !w->y || !w->q || !w->att || !w->k || !w->v || !w->g || !w->u || !w->ids || !w->pos ||
        !w->kpos || !w->bulk || !w->out_bulk) {
        llama_work_free(be, w);
        return err_set(e, ERR_NOMEM, "cannot allocate activations for a batch of %lld tokens (%.1f MiB)", (long long)T,
                       (double)(3 * tc + 2 * tq + 2 * tkv + 2 * tf) * 4 / (1 << 20));
    }
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        for (int i = 0; i < spans[s].n; i++) {
            w->ids[t0 + i] = spans[s].tokens[i];
            w->pos[t0 + i] = kv->seqs[spans[s].seq].n_past + i;
        }
    for (int i = 0; i < kv->n_ctx; i++) w->kpos[i] = i;
    fwd_bulk_rows(spans, n_spans, w->bulk, w->out_bulk);
    return 0;
}

/* ---------------------------------------------------------------- blocks */

void llama_attention(model *m, int il, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w,
                     const rope_params *rp, int window) {
    const hparams *hp = &m->hp;
    const layer *L = &m->layers[il];
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int T = w->T, Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    int64_t qrow = (int64_t)Hq * D, kvrow = (int64_t)Hkv * D;
    op->matmul(be, &L->attn_q, 0, w->h, w->q, T, w->bulk); /* [T][Hq][D] */
    op->matmul(be, &L->attn_k, 0, w->h, w->k, T, w->bulk); /* [T][Hkv][D] */
    op->matmul(be, &L->attn_v, 0, w->h, w->v, T, w->bulk);
    if (L->attn_q_bias.data) op->add_bias(be, w->q, &L->attn_q_bias, T, (int)qrow);
    if (L->attn_k_bias.data) op->add_bias(be, w->k, &L->attn_k_bias, T, (int)kvrow);
    if (L->attn_v_bias.data) op->add_bias(be, w->v, &L->attn_v_bias, T, (int)kvrow);
    if (L->attn_q_norm.data) op->rms_norm_heads(be, w->q, &L->attn_q_norm, T, Hq, D, hp->eps);
    if (L->attn_k_norm.data) op->rms_norm_heads(be, w->k, &L->attn_k_norm, T, Hkv, D, hp->eps);
    const weight *factors = m->rope_freqs.data ? &m->rope_freqs : NULL;
    op->rope(be, w->q, w->pos, T, Hq, D, rp, factors);
    op->rope(be, w->k, w->pos, T, Hkv, D, rp, factors);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        seq_cache *c = &kv->seqs[spans[s].seq];
        int n = spans[s].n, past = w->pos[t0]; /* a span continues its sequence from the cache length */
        op->copy(be, c->k[il] + past * kvrow, w->k + t0 * kvrow, n * kvrow);
        op->copy(be, c->v[il] + past * kvrow, w->v + t0 * kvrow, n * kvrow);
        op->attention(be, w->q + t0 * qrow, c->k[il], c->v[il], w->att + t0 * qrow, w->pos + t0, w->kpos, n, past + n,
                      Hq, Hkv, D, hp->attn_scale, window);
    }
    op->matmul(be, &L->attn_output, 0, w->att, w->y, T, w->bulk);
    if (L->attn_output_bias.data) op->add_bias(be, w->y, &L->attn_output_bias, T, hp->n_embd);
}

/* SwiGLU feed-forward: reads w->h, writes w->y. */
static void ffn_swiglu(model *m, const layer *L, llama_work *w) {
    backend *be = m->be;
    const backend_ops *op = be->ops;
    op->matmul(be, &L->ffn_gate, 0, w->h, w->g, w->T, w->bulk);
    op->matmul(be, &L->ffn_up, 0, w->h, w->u, w->T, w->bulk);
    op->swiglu(be, w->g, w->u, w->g, (int64_t)w->T * m->hp.n_ff);
    op->matmul(be, &L->ffn_down, 0, w->g, w->y, w->T, w->bulk);
}

int llama_output(model *m, kv_state *kv, const fwd_span *spans, int n_spans, llama_work *w, float *logits,
                 float *hidden, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int rc = 0, n_out = 0;
    /* gather the rows that want output into h, then final norm and head */
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        int first = spans[s].n - fwd_span_rows(&spans[s]);
        for (int i = first; i < spans[s].n; i++, n_out++)
            op->copy(be, w->h + (int64_t)n_out * hp->n_embd, w->x + (int64_t)(t0 + i) * hp->n_embd, hp->n_embd);
    }
    if (n_out) op->rms_norm(be, w->h, &m->output_norm, w->y, n_out, hp->n_embd, hp->eps);
    if (hidden && n_out) op->download(be, hidden, w->y, (int64_t)n_out * hp->n_embd);
    if (logits && n_out) {
        float *lg = op->alloc(be, (int64_t)n_out * hp->n_vocab);
        if (!lg) {
            rc = err_set(e, ERR_NOMEM, "cannot allocate logits for %d rows", n_out);
        } else {
            op->matmul(be, &m->output, 0, w->y, lg, n_out, w->out_bulk);
            if (m->output_bias.data) op->add_bias(be, lg, &m->output_bias, n_out, hp->n_vocab);
            op->download(be, logits, lg, (int64_t)n_out * hp->n_vocab);
            op->free(be, lg);
        }
    }
    if (!rc)
        for (int s = 0; s < n_spans; s++) kv->seqs[spans[s].seq].n_past += spans[s].n;
    return rc;
}

/* ---------------------------------------------------------------- forward */

int llama_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    llama_work w;
    int rc = llama_work_new(m, kv, spans, n_spans, &w, e);
    if (rc) return rc;
    int64_t tc = (int64_t)w.T * hp->n_embd;
    rope_params rp = {m->arch == ARCH_LLAMA ? ROPE_NORM : ROPE_NEOX, hp->n_rot, hp->rope_theta, hp->rope_freq_scale};
    op->get_rows(be, &m->token_embd, w.ids, w.x, w.T);
    for (int il = 0; il < hp->n_layer; il++) {
        const layer *L = &m->layers[il];
        op->rms_norm(be, w.x, &L->attn_norm, w.h, w.T, hp->n_embd, hp->eps);
        llama_attention(m, il, kv, spans, n_spans, &w, &rp, ATTN_NO_WINDOW);
        op->add(be, w.x, w.y, tc);
        op->rms_norm(be, w.x, &L->ffn_norm, w.h, w.T, hp->n_embd, hp->eps);
        ffn_swiglu(m, L, &w);
        op->add(be, w.x, w.y, tc);
    }
    rc = llama_output(m, kv, spans, n_spans, &w, logits, hidden, e);
    llama_work_free(be, &w);
    return rc;
}
