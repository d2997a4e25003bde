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

int blk_read_hybrid_hparams(model *m, err *e) {
    hparams *hp = &m->hp;
    int rc = 0, key_len = 0, val_len = 0, inner = 0;
    if ((rc = model_get_u32(m, "block_count", &hp->n_block, e)) ||
        (rc = model_get_u32(m, "context_length", &hp->n_ctx_train, e)) ||
        (rc = model_get_u32(m, "embedding_length", &hp->n_embd, e)) ||
        (rc = model_get_u32(m, "attention.head_count", &hp->n_head, e)) ||
        (rc = model_get_u32(m, "attention.head_count_kv", &hp->n_head_kv, e)) ||
        (rc = model_get_u32(m, "attention.key_length", &key_len, e)) ||
        (rc = model_get_u32(m, "attention.value_length", &val_len, e)) ||
        (rc = model_get_u32(m, "rope.dimension_count", &hp->n_rot, e)) ||
        (rc = model_get_u32(m, "ssm.conv_kernel", &hp->ssm_conv, e)) ||
        (rc = model_get_u32(m, "ssm.state_size", &hp->ssm_dk, e)) ||
        (rc = model_get_u32(m, "ssm.group_count", &hp->ssm_hk, e)) ||
        (rc = model_get_u32(m, "ssm.time_step_rank", &hp->ssm_hv, e)) ||
        (rc = model_get_u32(m, "ssm.inner_size", &inner, e)) ||
        (rc = model_get_f32(m, "attention.layer_norm_rms_epsilon", &hp->eps, true, e)) ||
        (rc = model_get_f32(m, "rope.freq_base", &hp->rope_theta, true, e)))
        return rc;
    hp->head_dim = key_len;
    /* consistency checks that would otherwise surface as out-of-bounds reads */
    if (key_len != val_len) return err_set(e, ERR_UNSUPPORTED, "attention key_length %d != value_length %d", key_len, val_len);
    if (hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return err_set(e, ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d", hp->n_head, hp->n_head_kv);
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return err_set(e, ERR_FORMAT, "rope.dimension_count %d must be even and <= head dim %d", hp->n_rot, hp->head_dim);
    if (hp->ssm_hk <= 0 || hp->ssm_hv <= 0 || hp->ssm_hv % hp->ssm_hk || inner % hp->ssm_hv || hp->ssm_conv < 2)
        return err_set(e, ERR_FORMAT, "ssm: group_count %d, time_step_rank %d, inner_size %d, conv %d are inconsistent",
                       hp->ssm_hk, hp->ssm_hv, inner, hp->ssm_conv);
    hp->ssm_dv = inner / hp->ssm_hv;
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
    attn_seq dec[ATTN_DECODE_MAX_SEQS]; /* one-token spans (decode steps) go to attend_decode together */
    int nd = 0;
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        const seq_cache *sc = &c->kv->seqs[spans[s].seq];
        char *kc = seq_state(sc, il, 0), *vc = seq_state(sc, il, 1);
        int n = spans[s].n, past = w->h_pos[t0]; /* a span continues its cache from its first position */
        if (n == 1) {
            dec[nd++] = (attn_seq){kc, vc, w->pos + t0, past, t0};
            if (nd == ATTN_DECODE_MAX_SEQS) {
                op->attend_decode(x, dec, nd, q, k, v, att, tk, tv, w->kpos, Hq, Hkv, D, scale, window);
                nd = 0;
            }
            continue;
        }
        op->store_rows(x, kc + (size_t)past * krow, tk, k + t0 * kvrow, n, kvrow);
        op->store_rows(x, vc + (size_t)past * vrow, tv, v + t0 * kvrow, n, kvrow);
        op->attention(x, q + t0 * qrow, kc, vc, tk, tv, att + t0 * qrow, w->pos + t0, w->kpos, n, past + n, Hq, Hkv, D,
                      scale, window);
    }
    if (nd) op->attend_decode(x, dec, nd, q, k, v, att, tk, tv, w->kpos, Hq, Hkv, D, scale, window);
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
    /* each bias right after its projection (the same values in any order): a GPU adds it in that GEMV, which
     * is still pending then even where the next projection, of another type, launches the ones before it */
    op->matmul(x, &L->attn_q, 0, w->h, q, T, MM_ROWS_PASS); /* [T][Hq][D] */
    if (L->attn_q_bias.data) op->add_bias(x, q, &L->attn_q_bias, T, (int)qrow);
    op->matmul(x, &L->attn_k, 0, w->h, k, T, MM_ROWS_PASS); /* [T][Hkv][D] */
    if (L->attn_k_bias.data) op->add_bias(x, k, &L->attn_k_bias, T, (int)kvrow);
    op->matmul(x, &L->attn_v, 0, w->h, v, T, MM_ROWS_PASS);
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

void blk_gated_qkv(model *m, fwd_ctx *c, const layer *L, float *q, float *gate, float *k, float *v) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int T = w->T, Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    float *qg = w->a;
    op->matmul(x, &L->attn_q, 0, w->h, qg, T, MM_ROWS_PASS); /* [T][Hq][q | gate] */
    op->copy_cols(x, q, qg, (int64_t)T * Hq, 2LL * D, 0, D);
    op->copy_cols(x, gate, qg, (int64_t)T * Hq, 2LL * D, D, D);
    op->matmul(x, &L->attn_k, 0, w->h, k, T, MM_ROWS_PASS);
    op->matmul(x, &L->attn_v, 0, w->h, v, T, MM_ROWS_PASS);
    op->rms_norm_heads(x, q, &L->attn_q_norm, T, Hq, D, hp->eps);
    op->rms_norm_heads(x, k, &L->attn_k_norm, T, Hkv, D, hp->eps);
    rope_params rp = {ROPE_NEOX, hp->n_rot, hp->rope_theta, 1.0f};
    op->rope(x, q, w->pos, T, Hq, D, &rp, NULL);
    op->rope(x, k, w->pos, T, Hkv, D, &rp, NULL);
}

void blk_gdn(model *m, fwd_ctx *c, const layer *L, int il, const fwd_span *spans, int n_spans, enum gdn_gate gate) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int T = w->T, Hk = hp->ssm_hk, Hv = hp->ssm_hv, Dk = hp->ssm_dk, Dv = hp->ssm_dv;
    int64_t qk = (int64_t)Hk * Dk, vw = (int64_t)Hv * Dv, dc = 2 * qk + vw;
    float *qkv = w->a, *conv = w->b, *z = w->c, *o = w->d, *q = w->f;
    /* q, k and v live in one buffer after the conv: split them into f (q | k | v contiguous per part) */
    float *k = q + (int64_t)T * qk, *v = k + (int64_t)T * qk;
    op->matmul(x, &L->attn_qkv, 0, w->h, qkv, T, MM_ROWS_PASS);
    op->matmul(x, &L->attn_gate, 0, w->h, z, T, MM_ROWS_PASS);
    op->matmul(x, &L->ssm_alpha, 0, w->h, w->g, T, MM_ROWS_PASS);
    op->matmul(x, &L->ssm_beta, 0, w->h, w->beta, T, MM_ROWS_PASS);
    if (gate == GDN_GATE_SILU && T == n_spans && T <= GDN_DECODE_MAX_SEQS) { /* decode steps only: fused */
        gdn_seq seqs[GDN_DECODE_MAX_SEQS];
        for (int s = 0; s < n_spans; s++)
            seqs[s] = (gdn_seq){seq_state(&c->kv->seqs[spans[s].seq], il, 0), seq_state(&c->kv->seqs[spans[s].seq], il, 1)};
        const gdn_weights gw = {&L->ssm_conv1d, &L->ssm_a, &L->ssm_dt, &L->ssm_norm};
        const gdn_shape sh = {Hk, Hv, Dk, Dv, hp->ssm_conv, hp->eps, GDN_HEADS_TILED};
        op->gdn_decode(x, seqs, n_spans, qkv, w->g, w->beta, z, &gw, conv, o, &sh);
        op->matmul(x, &L->ssm_out, 0, o, w->y, T, MM_ROWS_PASS);
        return;
    }
    op->gdn_gates(x, w->g, w->beta, &L->ssm_a, &L->ssm_dt, T, Hv);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->conv1d_silu(x, qkv + t0 * dc, seq_state(&c->kv->seqs[spans[s].seq], il, 0), &L->ssm_conv1d,
                        conv + t0 * dc, spans[s].n, (int)dc, hp->ssm_conv);
    if (T == 1) { /* one token: its q | k | v are already contiguous parts of the conv row */
        q = conv, k = conv + qk, v = conv + 2 * qk;
    } else {
        op->copy_cols(x, q, conv, T, dc, 0, qk);
        op->copy_cols(x, k, conv, T, dc, qk, qk);
        op->copy_cols(x, v, conv, T, dc, 2 * qk, vw);
    }
    op->l2_norm(x, q, T, Hk, Dk, hp->eps, 1.0f / sqrtf((float)Dk));
    op->l2_norm(x, k, T, Hk, Dk, hp->eps, 1.0f);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->gdn(x, seq_state(&c->kv->seqs[spans[s].seq], il, 1), q + t0 * qk, k + t0 * qk, v + t0 * vw,
                w->g + (int64_t)t0 * Hv, w->beta + (int64_t)t0 * Hv, o + t0 * vw, spans[s].n, Hk, Hv, Dk, Dv,
                GDN_HEADS_TILED);
    if (gate == GDN_GATE_SILU) {
        op->gated_norm(x, o, z, &L->ssm_norm, T, Hv, Dv, hp->eps);
    } else { /* qwen4exp: rms_norm(o) * w * sigmoid(z) */
        op->rms_norm_heads(x, o, &L->ssm_norm, T, Hv, Dv, hp->eps);
        op->sigmoid_mul(x, o, z, (int64_t)T * Hv * Dv);
    }
    op->matmul(x, &L->ssm_out, 0, o, w->y, T, MM_ROWS_PASS);
}

void blk_moe(model *m, fwd_ctx *c, const layer *L) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int T = w->T, E = hp->n_expert, K = hp->n_expert_used, C = hp->n_embd;
    /* the order lets a GPU executor fuse: the router and the shared expert's gate (both float matrices over
     * h) one after the other; every projection of h (routed and shared gate / up) right after the routing,
     * so h is quantized once; the combine of the routed rows, the shared expert's gated add and the caller's
     * residual add last, one after the other (the values are those of any order). The gate's T values go
     * after the router's T x E in w->a (wide_width leaves room). */
    float *gsh = w->a + (int64_t)T * E;
    op->matmul(x, &L->ffn_gate_inp, 0, w->h, w->a, T, MM_ROWS_PASS);
    op->matmul(x, &L->ffn_gate_inp_shexp, 0, w->h, gsh, T, MM_ROWS_PASS);
    op->moe_route(x, w->a, w->moe_sel, w->moe_w, T, E, K, MOE_SOFTMAX, true);
    op->matmul_experts(x, &L->ffn_gate_exps, w->moe_sel, K, w->h, false, w->moe_g, T);
    op->matmul_experts(x, &L->ffn_up_exps, w->moe_sel, K, w->h, false, w->moe_u, T);
    op->matmul(x, &L->ffn_gate_shexp, 0, w->h, w->b, T, MM_ROWS_PASS);
    op->matmul(x, &L->ffn_up_shexp, 0, w->h, w->c, T, MM_ROWS_PASS);
    op->swiglu(x, w->moe_g, w->moe_u, w->moe_g, (int64_t)T * K * hp->n_ff_exp);
    op->matmul_experts(x, &L->ffn_down_exps, w->moe_sel, K, w->moe_g, true, w->moe_y, T);
    op->swiglu(x, w->b, w->c, w->b, (int64_t)T * hp->n_ff_shexp);
    op->matmul(x, &L->ffn_down_shexp, 0, w->b, w->d, T, MM_ROWS_PASS);
    op->moe_combine(x, w->y, w->moe_y, w->moe_sel, w->moe_w, T, K, C);
    op->add_gated_rows(x, w->y, w->d, gsh, T, C);
}


int blk_attention_state(const model *m, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    const int64_t w = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
    out[0] = (state_buf){sp->type_k, sp->n_ctx, w, false};
    out[1] = (state_buf){sp->type_v, sp->n_ctx, w, false};
    return 2;
}
