/* qwen35: the Qwen3.5 hybrids (GGUF archs qwen35 and qwen35moe): Gated DeltaNet blocks interleaved with
 * gated full-attention blocks, a SwiGLU or MoE feed-forward in every block, and an optional MTP block.
 * The math is /work/shared/specs/qwen35.md §2 (spec section numbers below refer to it).
 *
 *   x = token_embd[tokens]
 *   for each trunk block:  x += mixer(rms_norm(x) * attn_norm);  x += ffn(rms_norm(x) * post_attention_norm)
 *   logits = output(rms_norm(x) * output_norm)
 *
 * GGUF specifics handled here: norm weights are stored with the +1 already added (plain rms_norm * w),
 * except ssm_norm; ssm_a holds -exp(A_log); value heads are tiled (value head j reads key head j mod Hk);
 * block_count includes the MTP blocks (trunk = block_count - nextn_predict_layers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/blocks.h"
#include "models/registry.h"

/* ---------------------------------------------------------------- loading */

static int read_hparams(model *m, err *e) {
    hparams *hp = &m->hp;
    int rc = blk_read_hybrid_hparams(m, e);
    if (rc || (rc = model_get_u32(m, "full_attention_interval", &hp->full_attn_interval, e))) return rc;
    char key[128];
    snprintf(key, sizeof key, "%s.nextn_predict_layers", model_arch_name(m->arch));
    hp->n_nextn = 0;
    if (gguf_find_kv(m->gguf, key) && (rc = model_get_u32(m, "nextn_predict_layers", &hp->n_nextn, e))) return rc;
    if (m->arch == ARCH_QWEN35MOE) {
        if ((rc = model_get_u32(m, "expert_count", &hp->n_expert, e)) ||
            (rc = model_get_u32(m, "expert_used_count", &hp->n_expert_used, e)) ||
            (rc = model_get_u32(m, "expert_feed_forward_length", &hp->n_ff_exp, e)) ||
            (rc = model_get_u32(m, "expert_shared_feed_forward_length", &hp->n_ff_shexp, e)))
            return rc;
    } else if ((rc = model_get_u32(m, "feed_forward_length", &hp->n_ff, e))) {
        return rc;
    }
    hp->n_layer = hp->n_block - hp->n_nextn;
    if (hp->n_layer <= 0 || hp->n_nextn < 0 || hp->full_attn_interval <= 0)
        return err_set(e, ERR_FORMAT, "block_count %d, nextn_predict_layers %d, full_attention_interval %d",
                       hp->n_block, hp->n_nextn, hp->full_attn_interval);
    if (m->arch == ARCH_QWEN35MOE && (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert))
        return err_set(e, ERR_FORMAT, "expert_used_count %d of expert_count %d", hp->n_expert_used, hp->n_expert);
    return 0;
}

#define BIND(w, req, nd, ...)                                                              \
    do {                                                                                   \
        snprintf(name, sizeof name, "blk.%d.%s", il, suffix_##w);                          \
        int64_t ne_[] = {__VA_ARGS__};                                                     \
        if ((rc = model_bind(m, &L->w, name, nd, ne_, req, e))) return rc;                 \
    } while (0)

static const char *suffix_attn_norm = "attn_norm.weight", *suffix_post_attention_norm = "post_attention_norm.weight",
                  *suffix_attn_q = "attn_q.weight", *suffix_attn_k = "attn_k.weight", *suffix_attn_v = "attn_v.weight",
                  *suffix_attn_output = "attn_output.weight", *suffix_attn_q_norm = "attn_q_norm.weight",
                  *suffix_attn_k_norm = "attn_k_norm.weight", *suffix_attn_qkv = "attn_qkv.weight",
                  *suffix_attn_gate = "attn_gate.weight", *suffix_ssm_conv1d = "ssm_conv1d.weight",
                  *suffix_ssm_dt = "ssm_dt.bias", *suffix_ssm_a = "ssm_a", *suffix_ssm_beta = "ssm_beta.weight",
                  *suffix_ssm_alpha = "ssm_alpha.weight", *suffix_ssm_norm = "ssm_norm.weight",
                  *suffix_ssm_out = "ssm_out.weight", *suffix_ffn_gate = "ffn_gate.weight",
                  *suffix_ffn_up = "ffn_up.weight", *suffix_ffn_down = "ffn_down.weight",
                  *suffix_ffn_gate_inp = "ffn_gate_inp.weight", *suffix_ffn_gate_exps = "ffn_gate_exps.weight",
                  *suffix_ffn_up_exps = "ffn_up_exps.weight", *suffix_ffn_down_exps = "ffn_down_exps.weight",
                  *suffix_ffn_gate_inp_shexp = "ffn_gate_inp_shexp.weight",
                  *suffix_ffn_gate_shexp = "ffn_gate_shexp.weight", *suffix_ffn_up_shexp = "ffn_up_shexp.weight",
                  *suffix_ffn_down_shexp = "ffn_down_shexp.weight", *suffix_nextn_eh_proj = "nextn.eh_proj.weight",
                  *suffix_nextn_enorm = "nextn.enorm.weight", *suffix_nextn_hnorm = "nextn.hnorm.weight",
                  *suffix_nextn_shared_head_norm = "nextn.shared_head_norm.weight";

static int load_block(model *m, int il, err *e) {
    const hparams *hp = &m->hp;
    layer *L = &m->layers[il];
    char name[96];
    int rc;
    int64_t C = hp->n_embd, D = hp->head_dim, Hq = hp->n_head, Hkv = hp->n_head_kv;
    int64_t Dk = hp->ssm_dk, Hk = hp->ssm_hk, Hv = hp->ssm_hv, Dv = hp->ssm_dv;
    int64_t Dc = 2 * Hk * Dk + Hv * Dv;
    bool mtp = il >= hp->n_layer;
    L->is_gdn = !mtp && (il + 1) % hp->full_attn_interval != 0;
    BIND(attn_norm, true, 1, C);
    BIND(post_attention_norm, true, 1, C);
    if (L->is_gdn) {
        BIND(attn_qkv, true, 2, C, Dc);
        BIND(attn_gate, true, 2, C, Hv * Dv);
        BIND(ssm_conv1d, true, 2, hp->ssm_conv, Dc);
        BIND(ssm_dt, true, 1, Hv);
        BIND(ssm_a, true, 1, Hv);
        BIND(ssm_beta, true, 2, C, Hv);
        BIND(ssm_alpha, true, 2, C, Hv);
        BIND(ssm_norm, true, 1, Dv);
        BIND(ssm_out, true, 2, Hv * Dv, C);
        if ((rc = model_require_f32(&L->ssm_conv1d, e)) || (rc = model_require_f32(&L->ssm_dt, e)) ||
            (rc = model_require_f32(&L->ssm_a, e)) || (rc = model_require_f32(&L->ssm_norm, e)))
            return rc;
    } else {
        BIND(attn_q, true, 2, C, 2 * Hq * D);
        BIND(attn_k, true, 2, C, Hkv * D);
        BIND(attn_v, true, 2, C, Hkv * D);
        BIND(attn_output, true, 2, Hq * D, C);
        BIND(attn_q_norm, true, 1, D);
        BIND(attn_k_norm, true, 1, D);
        if ((rc = model_require_f32(&L->attn_q_norm, e)) || (rc = model_require_f32(&L->attn_k_norm, e))) return rc;
    }
    if (m->arch == ARCH_QWEN35MOE) {
        int64_t E = hp->n_expert, Ie = hp->n_ff_exp, Is = hp->n_ff_shexp;
        BIND(ffn_gate_inp, true, 2, C, E);
        BIND(ffn_gate_exps, true, 3, C, Ie, E);
        BIND(ffn_up_exps, true, 3, C, Ie, E);
        BIND(ffn_down_exps, true, 3, Ie, C, E);
        BIND(ffn_gate_inp_shexp, true, 1, C);
        BIND(ffn_gate_shexp, true, 2, C, Is);
        BIND(ffn_up_shexp, true, 2, C, Is);
        BIND(ffn_down_shexp, true, 2, Is, C);
    } else {
        BIND(ffn_gate, true, 2, C, hp->n_ff);
        BIND(ffn_up, true, 2, C, hp->n_ff);
        BIND(ffn_down, true, 2, hp->n_ff, C);
    }
    if (mtp) {
        BIND(nextn_eh_proj, true, 2, 2 * C, C);
        BIND(nextn_enorm, true, 1, C);
        BIND(nextn_hnorm, true, 1, C);
        BIND(nextn_shared_head_norm, true, 1, C);
        if ((rc = model_require_f32(&L->nextn_enorm, e)) || (rc = model_require_f32(&L->nextn_hnorm, e)) ||
            (rc = model_require_f32(&L->nextn_shared_head_norm, e)))
            return rc;
    }
    if ((rc = model_require_f32(&L->attn_norm, e)) || (rc = model_require_f32(&L->post_attention_norm, e))) return rc;
    return 0;
}

static int qwen35_load(model *m, err *e) {
    int rc = read_hparams(m, e);
    if (rc) return rc;
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return err_set(e, ERR_NOTFOUND, "tensor 'token_embd.weight' is missing");
    m->hp.n_vocab = (int)te->ne[1];
    int64_t C = m->hp.n_embd, V = m->hp.n_vocab;
    int64_t ne[2] = {C, V};
    if ((rc = model_bind(m, &m->token_embd, "token_embd.weight", 2, ne, true, e)) ||
        (rc = model_bind(m, &m->output_norm, "output_norm.weight", 1, ne, true, e)) ||
        (rc = model_bind(m, &m->output, "output.weight", 2, ne, false, e)) ||
        (rc = model_require_f32(&m->output_norm, e)))
        return rc;
    m->tied = m->output.data == NULL;
    if (m->tied) m->output = m->token_embd;
    m->layers = calloc((size_t)m->hp.n_block, sizeof *m->layers);
    if (!m->layers) return err_set(e, ERR_NOMEM, "out of memory");
    for (int il = 0; il < m->hp.n_block; il++)
        if ((rc = load_block(m, il, e))) return rc;
    return 0;
}

/* ---------------------------------------------------------------- forward */

/* Gated full attention (spec §2.4) over every span; reads w.h, writes w.y. */
static void attention_block(model *m, fwd_ctx *c, const layer *L, int il, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int T = w->T, Hq = hp->n_head, D = hp->head_dim;
    float *q = w->b, *gate = w->c, *k = w->d, *v = w->f, *att = w->a;
    blk_gated_qkv(m, c, L, q, gate, k, v);
    blk_attend_cache(m, c, il, spans, n_spans, q, k, v, att, 1.0f / sqrtf((float)D), ATTN_NO_WINDOW);
    op->sigmoid_mul(x, att, gate, (int64_t)T * Hq * D);
    op->matmul(x, &L->attn_output, 0, att, w->y, T, MM_ROWS_PASS);
}

/* One decoder block (trunk or MTP): x += mixer(norm(x)); x += ffn(norm(x)). */
static void block(model *m, fwd_ctx *c, int il, const fwd_span *spans, int n_spans) {
    const layer *L = &m->layers[il];
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    int64_t tc = (int64_t)w->T * m->hp.n_embd;
    op->rms_norm(x, w->x, &L->attn_norm, w->h, w->T, m->hp.n_embd, m->hp.eps);
    if (L->is_gdn)
        blk_gdn(m, c, L, il, spans, n_spans, GDN_GATE_SILU);
    else
        attention_block(m, c, L, il, spans, n_spans);
    op->add(x, w->x, w->y, tc);
    op->rms_norm(x, w->x, &L->post_attention_norm, w->h, w->T, m->hp.n_embd, m->hp.eps);
    if (m->arch == ARCH_QWEN35MOE)
        blk_moe(m, c, L);
    else
        blk_ffn(m, c, L, m->hp.n_ff, ACT_SILU);
    op->add(x, w->x, w->y, tc);
}

static void qwen35_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans) {
    exec *x = c->x;
    fwd_work *w = &c->w;
    x->ops->get_rows(x, &m->token_embd, w->ids, w->x, w->T);
    for (int il = 0; il < m->hp.n_layer; il++) block(m, c, il, spans, n_spans);
}

/* GDN blocks: conv window [K-1][dc] and S [Hv][Dk][Dv], both recurrent; attention (and MTP) blocks: KV. */
static int qwen35_block_state(const model *m, int il, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    const hparams *hp = &m->hp;
    if (!m->layers[il].is_gdn) return blk_attention_state(m, sp, out);
    int64_t dc = 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv;
    out[0] = (state_buf){QT_F32, hp->ssm_conv - 1, dc, true};
    out[1] = (state_buf){QT_F32, 1, (int64_t)hp->ssm_hv * hp->ssm_dk * hp->ssm_dv, true};
    return 2;
}

/* ---------------------------------------------------------------- MTP (spec §3.2) */

int qwen35_mtp_forward(model *m, fwd_ctx *c, int seq, const float *hidden, const int32_t *next, int T,
                       bool last_only, float *logits, float *hidden_out, err *e) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    kv_state *kv = c->kv;
    if (hp->n_nextn < 1) return err_set(e, ERR_UNSUPPORTED, "this model has no MTP block (nextn_predict_layers = 0)");
    if (seq < 0 || seq >= kv->n_seq || T < 1) return err_set(e, ERR_ARG, "bad MTP batch: sequence %d, %d rows", seq, T);
    if (T > w->max_tokens)
        return err_set(e, ERR_RANGE, "an MTP batch of %d rows: the context's batch size is %d", T, w->max_tokens);
    seq_cache *sc = &kv->seqs[seq];
    if (sc->mtp_past + T > kv->n_ctx)
        return err_set(e, ERR_RANGE, "MTP cache of sequence %d: %d + %d rows exceed the context size %d", seq,
                       sc->mtp_past, T, kv->n_ctx);
    for (int i = 0; i < T; i++)
        if (next[i] < 0 || next[i] >= hp->n_vocab)
            return err_set(e, ERR_RANGE, "token id %d is outside the vocabulary (0..%d)", next[i], hp->n_vocab - 1);
    int il = hp->n_layer; /* the (first) MTP block */
    const layer *L = &m->layers[il];
    int64_t C = hp->n_embd;
    /* one span at the MTP cache's positions */
    fwd_span span = {.seq = seq, .n = T, .tokens = next, .out = last_only ? FWD_OUT_LAST : FWD_OUT_ALL};
    fwd_begin(m, c, &span, 1, &sc->mtp_past);
    /* [enorm(embed(next)) ; hnorm(hidden)] -> eh_proj */
    float *emb = w->a, *hid = w->b, *cat = w->c;
    op->get_rows(x, &m->token_embd, w->ids, emb, T);
    op->rms_norm(x, emb, &L->nextn_enorm, emb, T, (int)C, hp->eps);
    op->upload(x, hid, hidden, sizeof(float) * (size_t)T * (size_t)C);
    op->rms_norm(x, hid, &L->nextn_hnorm, hid, T, (int)C, hp->eps);
    op->set_cols(x, cat, emb, T, 2 * C, 0, C);
    op->set_cols(x, cat, hid, T, 2 * C, C, C);
    op->matmul(x, &L->nextn_eh_proj, 0, cat, w->x, T, MM_ROWS_PASS);
    block(m, c, il, &span, 1);
    const int r0 = last_only ? T - 1 : 0; /* the rows the head runs on: r0 .. T-1 */
    op->rms_norm(x, w->x + r0 * C, &L->nextn_shared_head_norm, w->y, T - r0, (int)C, hp->eps);
    fwd_head(m, c, w->y, T - r0, logits, hidden_out);
    int rc = exec_status(x, e);
    if (rc) return rc;
    sc->mtp_past += T;
    return 0;
}

const arch_def arch_qwen35 = {ARCH_QWEN35, "qwen35", qwen35_load, qwen35_forward, qwen35_block_state,
                              qwen35_mtp_forward};
const arch_def arch_qwen35moe = {ARCH_QWEN35MOE, "qwen35moe", qwen35_load, qwen35_forward, qwen35_block_state,
                                 qwen35_mtp_forward};
