/* gemma3: Gemma 3 text decoder (GGUF arch gemma3), on the shared blocks of blocks.h.
 *
 *   x = token_embd[tokens] * sqrt(C)
 *   for each block (local = sliding-window attention, else global):
 *       h = rms_norm(x) * attn_norm
 *       q, k = rms_norm_per_head(h Wq, h Wk) * (q_norm, k_norm);  v = h Wv
 *       q, k = rope_neox(q, k, base = local ? freq_base_swa : freq_base, scale = local ? 1 : freq_scale)
 *       a = softmax(q k^T * attn_scale, causal, local ? window : none) v Wo
 *       x += rms_norm(a) * post_attention_norm
 *       f = (gelu_tanh(h' Wgate) * h' Wup) Wdown,  h' = rms_norm(x) * ffn_norm
 *       x += rms_norm(f) * post_ffw_norm
 *   logits = (rms_norm(x) * output_norm) token_embd                always tied
 *
 * GGUF conventions (llama.cpp's converter and loader), which this file follows:
 *  - every *norm.weight is stored with Gemma's "+1" already added, so norms are a plain rms_norm * w;
 *  - the layer pattern: attention.sliding_window_pattern (a bool per layer or a period) when present,
 *    otherwise period 6: layer il is local unless il % 6 == 5 (the converter writes no pattern);
 *  - local RoPE base: rope.freq_base_swa, default 10000; linear RoPE scaling applies to global layers;
 *  - attention scale: 1/sqrt(key_length), except the 62-layer 27B model, whose query_pre_attn_scalar is
 *    n_embd / n_head (the converter does not store query_pre_attn_scalar);
 *  - final_logit_softcapping is absent from Gemma 3 checkpoints; a file that sets it is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/blocks.h"
#include "models/registry.h"

#define GEMMA3_SWA_PERIOD 6 /* llama.cpp's default pattern: 5 local layers, then 1 global */

/* Marks each layer local or global from attention.sliding_window_pattern (bool array or period). */
static int read_swa_pattern(model *m, err *e) {
    const hparams *hp = &m->hp;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", model_arch_name(m->arch));
    const gguf_kv *kv = gguf_find_kv(m->gguf, key);
    int period = GEMMA3_SWA_PERIOD;
    if (kv && kv->value.type == GGUF_ARRAY) {
        gguf_array a;
        int rc = gguf_get_arr(m->gguf, key, GGUF_BOOL, &a, e);
        if (rc) return rc;
        if (a.n != (uint64_t)hp->n_layer)
            return err_set(e, ERR_FORMAT, "%s has %llu entries, expected one per layer (%d)", key,
                           (unsigned long long)a.n, hp->n_layer);
        for (int il = 0; il < hp->n_layer; il++) m->layers[il].is_swa = hp->n_swa > 0 && ((const uint8_t *)a.data)[il];
        return 0;
    }
    if (kv) {
        int rc = model_get_u32(m, "attention.sliding_window_pattern", &period, e);
        if (rc) return rc;
    }
    /* period 0 means every layer is local (llama.cpp's convention) */
    for (int il = 0; il < hp->n_layer; il++)
        m->layers[il].is_swa = hp->n_swa > 0 && (period == 0 || il % period < period - 1);
    return 0;
}

static int read_hparams(model *m, err *e) {
    hparams *hp = &m->hp;
    int rc = llama_read_hparams(m, e);
    if (rc) return rc;
    hp->n_swa = 0;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window", model_arch_name(m->arch));
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "attention.sliding_window", &hp->n_swa, e))) return rc;
    hp->rope_theta_swa = 10000.0f;
    if ((rc = model_get_f32(m, "rope.freq_base_swa", &hp->rope_theta_swa, false, e))) return rc;
    float softcap = 0.0f;
    if ((rc = model_get_f32(m, "final_logit_softcapping", &softcap, false, e))) return rc;
    if (softcap != 0.0f)
        return err_set(e, ERR_UNSUPPORTED, "gemma3.final_logit_softcapping = %g is not supported (Gemma 3 has none)",
                       (double)softcap);
    int q_pre_attn = hp->n_layer == 62 ? hp->n_embd / hp->n_head : hp->head_dim;
    hp->attn_scale = 1.0f / sqrtf((float)q_pre_attn);
    return 0;
}

static int gemma3_load(model *m, err *e) {
    int rc;
    if ((rc = read_hparams(m, e)) || (rc = blk_bind_globals(m, e)) || (rc = read_swa_pattern(m, e))) return rc;
    for (int il = 0; il < m->hp.n_block; il++) {
        layer *L = &m->layers[il];
        if ((rc = llama_bind_attention(m, il, true, e)) ||
            (rc = blk_bind_norm(m, il, "post_attention_norm.weight", &L->post_attention_norm, e)) ||
            (rc = blk_bind_norm(m, il, "ffn_norm.weight", &L->ffn_norm, e)) ||
            (rc = blk_bind_norm(m, il, "post_ffw_norm.weight", &L->post_ffw_norm, e)) ||
            (rc = blk_bind_ffn(m, il, e)))
            return rc;
    }
    return 0;
}

static void gemma3_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int C = hp->n_embd;
    int64_t tc = (int64_t)w->T * C;
    rope_params rope_local = {ROPE_NEOX, hp->n_rot, hp->rope_theta_swa, 1.0f};
    rope_params rope_global = {ROPE_NEOX, hp->n_rot, hp->rope_theta, hp->rope_freq_scale};
    op->get_rows(x, &m->token_embd, w->ids, w->x, w->T);
    op->scale(x, w->x, sqrtf((float)C), tc);
    for (int il = 0; il < hp->n_layer; il++) {
        const layer *L = &m->layers[il];
        op->rms_norm(x, w->x, &L->attn_norm, w->h, w->T, C, hp->eps);
        if (L->is_swa)
            llama_attention(m, c, il, spans, n_spans, &rope_local, hp->n_swa);
        else
            llama_attention(m, c, il, spans, n_spans, &rope_global, ATTN_NO_WINDOW);
        op->rms_norm(x, w->y, &L->post_attention_norm, w->y, w->T, C, hp->eps);
        op->add(x, w->x, w->y, tc);
        op->rms_norm(x, w->x, &L->ffn_norm, w->h, w->T, C, hp->eps);
        blk_ffn(m, c, L, hp->n_ff, ACT_GELU_TANH);
        op->rms_norm(x, w->y, &L->post_ffw_norm, w->y, w->T, C, hp->eps);
        op->add(x, w->x, w->y, tc);
    }
}

static int gemma3_block_state(const model *m, int il, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    (void)il;
    return blk_attention_state(m, sp, out);
}

const arch_def arch_gemma3 = {ARCH_GEMMA3, "gemma3", gemma3_load, gemma3_forward, gemma3_block_state, NULL};
