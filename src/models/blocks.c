/* blocks: the building blocks the architecture files share (blocks.h). */
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

int blk_bind_norm(model *m, int il, const char *suffix, weight *w, err *e) {
    int rc = bind_blk(m, il, suffix, w, true, 1, m->hp.n_embd, 0, e);
    return rc ? rc : model_require_f32(w, e);
}

int blk_bind_globals(model *m, err *e) {
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
    if ((rc = blk_bind_norm(m, il, "attn_norm.weight", &L->attn_norm, e)) ||
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

int blk_bind_ffn(model *m, int il, err *e) {
    layer *L = &m->layers[il];
    int64_t C = m->hp.n_embd, I = m->hp.n_ff;
    int rc;
    if ((rc = bind_blk(m, il, "ffn_gate.weight", &L->ffn_gate, true, 2, C, I, e)) ||
        (rc = bind_blk(m, il, "ffn_up.weight", &L->ffn_up, true, 2, C, I, e)) ||
        (rc = bind_blk(m, il, "ffn_down.weight", &L->ffn_down, true, 2, I, C, e)))
        return rc;
    return 0;
}

/* ---------------------------------------------------------------- blocks */

void blk_attend_cache(model *m, fwd_ctx *c, int il, const fwd_span *spans, int n_spans, const float *q,
                      const float *k, const float *v, float *att, float scale, int window) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    const fwd_work *w = &c->w;
    int Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    int64_t qrow = (int64_t)Hq * D, kvrow = (int64_t)Hkv * D;
    const enum qtype tk = c->kv->plan.type_k, tv = c->kv->plan.type_v;
    const size_t krow = qtype_row_bytes(tk, kvrow), vrow = qtype_row_bytes(tv, kvrow);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        const seq_cache *sc = &c->kv->seqs[spans[s].seq];
        char *kc = seq_state(sc, il, 0), *vc = seq_state(sc, il, 1);
        int n = spans[s].n, past = w->h_pos[t0]; /* a span continues its cache from its first position */
        op->store_rows(x, kc + (size_t)past * krow, tk, k + t0 * kvrow, n, kvrow);
        op->store_rows(x, vc + (size_t)past * vrow, tv, v + t0 * kvrow, n, kvrow);
        op->attention(x, q + t0 * qrow, kc, vc, tk, tv, att + t0 * qrow, w->pos + t0, w->kpos, n, past + n, Hq, Hkv, D,
                      scale, window);
    }
}

void llama_attention(model *m, fwd_ctx *c, int il, const fwd_span *spans, int n_spans, const rope_params *rp,
                     int window) {
    const hparams *hp = &m->hp;
    const layer *L = &m->layers[il];
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int T = w->T, Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    int64_t qrow = (int64_t)Hq * D, kvrow = (int64_t)Hkv * D;
    float *q = w->a, *att = w->b, *k = w->c, *v = w->d;
    op->matmul(x, &L->attn_q, 0, w->h, q, T, MM_ROWS_PASS); /* [T][Hq][D] */
    op->matmul(x, &L->attn_k, 0, w->h, k, T, MM_ROWS_PASS); /* [T][Hkv][D] */
    op->matmul(x, &L->attn_v, 0, w->h, v, T, MM_ROWS_PASS);
    if (L->attn_q_bias.data) op->add_bias(x, q, &L->attn_q_bias, T, (int)qrow);
    if (L->attn_k_bias.data) op->add_bias(x, k, &L->attn_k_bias, T, (int)kvrow);
    if (L->attn_v_bias.data) op->add_bias(x, v, &L->attn_v_bias, T, (int)kvrow);
    if (L->attn_q_norm.data) op->rms_norm_heads(x, q, &L->attn_q_norm, T, Hq, D, hp->eps);
    if (L->attn_k_norm.data) op->rms_norm_heads(x, k, &L->attn_k_norm, T, Hkv, D, hp->eps);
    const weight *factors = m->rope_freqs.data ? &m->rope_freqs : NULL;
    op->rope(x, q, w->pos, T, Hq, D, rp, factors);
    op->rope(x, k, w->pos, T, Hkv, D, rp, factors);
    blk_attend_cache(m, c, il, spans, n_spans, q, k, v, att, hp->attn_scale, window);
    op->matmul(x, &L->attn_output, 0, att, w->y, T, MM_ROWS_PASS);
    if (L->attn_output_bias.data) op->add_bias(x, w->y, &L->attn_output_bias, T, hp->n_embd);
}

void blk_ffn(model *m, fwd_ctx *c, const layer *L, int I, enum blk_act act) {
    (void)m;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    op->matmul(x, &L->ffn_gate, 0, w->h, w->f, w->T, MM_ROWS_PASS);
    op->matmul(x, &L->ffn_up, 0, w->h, w->u, w->T, MM_ROWS_PASS);
    if (act == ACT_SILU)
        op->swiglu(x, w->f, w->u, w->f, (int64_t)w->T * I);
    else
        op->geglu(x, w->f, w->u, w->f, (int64_t)w->T * I);
    op->matmul(x, &L->ffn_down, 0, w->f, w->y, w->T, MM_ROWS_PASS);
}

int blk_attention_state(const model *m, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    const int64_t w = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
    out[0] = (state_buf){sp->type_k, sp->n_ctx, w, false};
    out[1] = (state_buf){sp->type_v, sp->n_ctx, w, false};
    return 2;
}
