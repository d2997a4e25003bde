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

#include "engine/forward.h"

/* ---------------------------------------------------------------- loading */

static int read_hparams(model *m, err *e) {
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
        (rc = model_get_u32(m, "full_attention_interval", &hp->full_attn_interval, e)))
        return rc;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", model_arch_name(m->arch));
    if ((rc = gguf_get_f32(m->gguf, key, &hp->eps, e))) return rc;
    snprintf(key, sizeof key, "%s.rope.freq_base", model_arch_name(m->arch));
    if ((rc = gguf_get_f32(m->gguf, key, &hp->rope_theta, e))) return rc;
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
    hp->head_dim = key_len;
    hp->n_layer = hp->n_block - hp->n_nextn;
    /* consistency checks that would otherwise surface as out-of-bounds reads */
    if (key_len != val_len) return err_set(e, ERR_UNSUPPORTED, "attention key_length %d != value_length %d", key_len, val_len);
    if (hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv)
        return err_set(e, ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d", hp->n_head, hp->n_head_kv);
    if (hp->n_rot <= 0 || hp->n_rot > hp->head_dim || hp->n_rot % 2)
        return err_set(e, ERR_FORMAT, "rope.dimension_count %d must be even and <= head dim %d", hp->n_rot, hp->head_dim);
    if (hp->ssm_hk <= 0 || hp->ssm_hv <= 0 || hp->ssm_hv % hp->ssm_hk || inner % hp->ssm_hv)
        return err_set(e, ERR_FORMAT, "ssm heads: group_count %d, time_step_rank %d, inner_size %d are inconsistent",
                       hp->ssm_hk, hp->ssm_hv, inner);
    if (hp->n_layer <= 0 || hp->n_nextn < 0 || hp->full_attn_interval <= 0 || hp->ssm_conv < 2)
        return err_set(e, ERR_FORMAT, "block_count %d, nextn_predict_layers %d, full_attention_interval %d, conv %d",
                       hp->n_block, hp->n_nextn, hp->full_attn_interval, hp->ssm_conv);
    if (m->arch == ARCH_QWEN35MOE && (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert))
        return err_set(e, ERR_FORMAT, "expert_used_count %d of expert_count %d", hp->n_expert_used, hp->n_expert);
    hp->ssm_dv = inner / hp->ssm_hv;
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

int qwen35_load(model *m, err *e) {
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

/* Activation buffers for one batch of T tokens (backend memory). */
typedef struct work {
    float *x, *h, *y;          /* [T][C]: residual, normed input, block output */
    float *a, *b, *c, *d, *f;  /* [T][wmax]: projections */
    float *g, *beta;           /* [T][Hv] gates */
    int64_t wmax;
    int32_t *pos;              /* host: position of each token */
    int32_t *kpos;             /* host: 0 .. n_ctx-1 (key positions of a cache) */
    uint8_t *bulk, *out_bulk;  /* host [T]: bulk rows of the batch and of its output (fwd_bulk_rows) */
    uint8_t *ebulk;            /* host [T]: the flags of one expert's gathered rows */
} work;

static void work_free(backend *be, work *w) {
    float *bufs[] = {w->x, w->h, w->y, w->a, w->b, w->c, w->d, w->f, w->g, w->beta};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->ops->free(be, bufs[i]);
    free(w->pos);
    free(w->kpos);
    free(w->bulk);
    free(w->out_bulk);
    free(w->ebulk);
}

static int work_new(model *m, work *w, int T, int n_ctx, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    int64_t dc = 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv;
    int64_t widths[] = {hp->n_embd * 2LL, 2LL * hp->n_head * hp->head_dim, dc, hp->n_ff, hp->n_ff_exp, hp->n_ff_shexp,
                        hp->n_expert};
    memset(w, 0, sizeof *w);
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        if (widths[i] > w->wmax) w->wmax = widths[i];
    int64_t tc = (int64_t)T * hp->n_embd, tw = (int64_t)T * w->wmax, th = (int64_t)T * (hp->ssm_hv > 0 ? hp->ssm_hv : 1);
    w->x = be->ops->alloc(be, tc);
    w->h = be->ops->alloc(be, tc);
    w->y = be->ops->alloc(be, tc);
    w->a = be->ops->alloc(be, tw);
    w->b = be->ops->alloc(be, tw);
    w->c = be->ops->alloc(be, tw);
    w->d = be->ops->alloc(be, tw);
    w->f = be->ops->alloc(be, tw);
    w->g = be->ops->alloc(be, th);
    w->beta = be->ops->alloc(be, th);
    w->pos = malloc(sizeof(int32_t) * (size_t)T);
    w->kpos = malloc(sizeof(int32_t) * (size_t)n_ctx);
    w->bulk = malloc((size_t)T);
    w->out_bulk = malloc((size_t)T);
    w->ebulk = malloc((size_t)T);
    if (!w->x || !w->h || !w->y || !w->a || !w->b || !w->c || !w->d || !w->f || !w->g || !w->beta || !w->pos ||
        !w->kpos || !w->bulk || !w->out_bulk || !w->ebulk) {
        work_free(be, w);
        return err_set(e, ERR_NOMEM, "cannot allocate activations for a batch of %d tokens (%.1f MiB)", T,
                       (double)(3 * tc + 5 * tw + 2 * th) * 4 / (1 << 20));
    }
    for (int i = 0; i < n_ctx; i++) w->kpos[i] = i;
    return 0;
}

/* Gated full attention (spec §2.4) over every span; reads w->h, writes w->y. */
static void attention_block(model *m, const layer *L, int il, kv_state *kv, const fwd_span *spans, int n_spans,
                            int T, work *w) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim;
    float *qg = w->a, *q = w->b, *gate = w->c, *k = w->d, *v = w->f;
    op->matmul(be, &L->attn_q, 0, w->h, qg, T, w->bulk);                     /* [T][Hq][q | gate] */
    op->copy_cols(be, q, qg, (int64_t)T * Hq, 2LL * D, 0, D);
    op->copy_cols(be, gate, qg, (int64_t)T * Hq, 2LL * D, D, D);
    op->matmul(be, &L->attn_k, 0, w->h, k, T, w->bulk);
    op->matmul(be, &L->attn_v, 0, w->h, v, T, w->bulk);
    op->rms_norm_heads(be, q, &L->attn_q_norm, T, Hq, D, hp->eps);
    op->rms_norm_heads(be, k, &L->attn_k_norm, T, Hkv, D, hp->eps);
    rope_params rp = {ROPE_NEOX, hp->n_rot, hp->rope_theta, 1.0f};
    op->rope(be, q, w->pos, T, Hq, D, &rp, NULL);
    op->rope(be, k, w->pos, T, Hkv, D, &rp, NULL);
    float *att = qg; /* q and gate were copied out: reuse */
    int64_t kvrow = (int64_t)Hkv * D, qrow = (int64_t)Hq * D;
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        seq_cache *c = &kv->seqs[spans[s].seq];
        int n = spans[s].n, past = w->pos[t0]; /* spans are contiguous from their cache length */
        op->copy(be, c->k[il] + past * kvrow, k + t0 * kvrow, n * kvrow);
        op->copy(be, c->v[il] + past * kvrow, v + t0 * kvrow, n * kvrow);
        op->attention(be, q + t0 * qrow, c->k[il], c->v[il], att + t0 * qrow, w->pos + t0, w->kpos, n, past + n, Hq,
                      Hkv, D, 1.0f / sqrtf((float)D), ATTN_NO_WINDOW);
    }
    op->sigmoid_mul(be, att, gate, (int64_t)T * qrow);
    op->matmul(be, &L->attn_output, 0, att, w->y, T, w->bulk);
}

/* Gated DeltaNet (spec §2.3) over every span; reads w->h, writes w->y. */
static void gdn_block(model *m, const layer *L, int il, kv_state *kv, const fwd_span *spans, int n_spans, int T,
                      work *w) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int Hk = hp->ssm_hk, Hv = hp->ssm_hv, Dk = hp->ssm_dk, Dv = hp->ssm_dv;
    int64_t qk = (int64_t)Hk * Dk, vw = (int64_t)Hv * Dv, dc = 2 * qk + vw;
    float *qkv = w->a, *conv = w->b, *z = w->c, *o = w->d, *q = w->f;
    /* q, k and v live in one buffer after the conv: split them into f (q | k | v contiguous per part) */
    float *k = q + (int64_t)T * qk, *v = k + (int64_t)T * qk;
    op->matmul(be, &L->attn_qkv, 0, w->h, qkv, T, w->bulk);
    op->matmul(be, &L->attn_gate, 0, w->h, z, T, w->bulk);
    op->matmul(be, &L->ssm_alpha, 0, w->h, w->g, T, w->bulk);
    op->matmul(be, &L->ssm_beta, 0, w->h, w->beta, T, w->bulk);
    op->gdn_gates(be, w->g, w->beta, &L->ssm_a, &L->ssm_dt, T, Hv);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->conv1d_silu(be, qkv + t0 * dc, kv->seqs[spans[s].seq].conv[il], &L->ssm_conv1d, conv + t0 * dc,
                        spans[s].n, (int)dc, hp->ssm_conv);
    op->copy_cols(be, q, conv, T, dc, 0, qk);
    op->copy_cols(be, k, conv, T, dc, qk, qk);
    op->copy_cols(be, v, conv, T, dc, 2 * qk, vw);
    op->l2_norm(be, q, T, Hk, Dk, hp->eps, 1.0f / sqrtf((float)Dk));
    op->l2_norm(be, k, T, Hk, Dk, hp->eps, 1.0f);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->gdn(be, kv->seqs[spans[s].seq].ssm[il], q + t0 * qk, k + t0 * qk, v + t0 * vw, w->g + (int64_t)t0 * Hv,
                w->beta + (int64_t)t0 * Hv, o + t0 * vw, spans[s].n, Hk, Hv, Dk, Dv, GDN_HEADS_TILED);
    op->gated_norm(be, o, z, &L->ssm_norm, T, Hv, Dv, hp->eps);
    op->matmul(be, &L->ssm_out, 0, o, w->y, T, w->bulk);
}

/* Dense SwiGLU (spec §2.5); reads w->h, writes w->y. */
static void ffn_block(model *m, const layer *L, int T, work *w) {
    backend *be = m->be;
    const backend_ops *op = be->ops;
    op->matmul(be, &L->ffn_gate, 0, w->h, w->a, T, w->bulk);
    op->matmul(be, &L->ffn_up, 0, w->h, w->b, T, w->bulk);
    op->swiglu(be, w->a, w->b, w->a, (int64_t)T * m->hp.n_ff);
    op->matmul(be, &L->ffn_down, 0, w->a, w->y, T, w->bulk);
}

/* MoE (spec §2.5): softmax router over all experts, top-k, renormalised; only the selected experts run;
 * plus the shared expert scaled by sigmoid(gate . x). Reads w->h, writes w->y. Routing is decided on the
 * host from the downloaded router logits. */
static int moe_block(model *m, const layer *L, const fwd_span *spans, int n_spans, int T, work *w, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int E = hp->n_expert, K = hp->n_expert_used, C = hp->n_embd, Ie = hp->n_ff_exp;
    float *host = malloc(sizeof(float) * (size_t)T * (size_t)(E > 1 ? E : 1));
    int *sel = malloc(sizeof(int) * (size_t)T * (size_t)K);
    float *wsel = malloc(sizeof(float) * (size_t)T * (size_t)K);
    int *rows = malloc(sizeof(int) * (size_t)T);
    int *span_of = malloc(sizeof(int) * (size_t)T), *count = calloc((size_t)n_spans, sizeof(int));
    if (!host || !sel || !wsel || !rows || !span_of || !count) {
        free(host), free(sel), free(wsel), free(rows), free(span_of), free(count);
        return err_set(e, ERR_NOMEM, "out of memory routing %d tokens", T);
    }
    for (int s = 0, t = 0; s < n_spans; s++)
        for (int i = 0; i < spans[s].n; i++) span_of[t++] = s;
    op->matmul(be, &L->ffn_gate_inp, 0, w->h, w->a, T, w->bulk);
    op->download(be, host, w->a, (int64_t)T * E);
    for (int t = 0; t < T; t++) {
        float *p = host + (int64_t)t * E, mx = -INFINITY;
        double sum = 0;
        for (int i = 0; i < E; i++) mx = p[i] > mx ? p[i] : mx;
        for (int i = 0; i < E; i++) sum += (p[i] = expf(p[i] - mx));
        for (int i = 0; i < E; i++) p[i] = (float)(p[i] / sum);
        float tot = 0;
        for (int j = 0; j < K; j++) { /* top-k by selection; ties go to the lower expert id */
            int best = -1;
            for (int i = 0; i < E; i++) {
                bool taken = false;
                for (int q = 0; q < j; q++) taken |= sel[t * K + q] == i;
                if (!taken && (best < 0 || p[i] > p[best])) best = i;
            }
            sel[t * K + j] = best;
            tot += wsel[t * K + j] = p[best];
        }
        for (int j = 0; j < K; j++) wsel[t * K + j] /= tot;
    }
    op->zero(be, w->y, (int64_t)T * C);
    float *xe = w->b, *ge = w->c, *ue = w->d, *ye = w->f; /* gathered rows of one expert */
    for (int ex = 0; ex < E; ex++) {
        int n = 0;
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++)
                if (sel[t * K + j] == ex) rows[n++] = t;
        if (!n) continue;
        /* an expert's rows are bulk where their sequence sends it enough rows: a few rows of a long prompt
         * would pay a panel unpacking each; the count depends on the sequence alone, not on the batch */
        memset(count, 0, sizeof(int) * (size_t)n_spans);
        for (int r = 0; r < n; r++) count[span_of[rows[r]]]++;
        for (int r = 0; r < n; r++) {
            op->copy(be, xe + (int64_t)r * C, w->h + (int64_t)rows[r] * C, C);
            w->ebulk[r] = count[span_of[rows[r]]] >= BULK_MIN_ROWS;
        }
        op->matmul(be, &L->ffn_gate_exps, ex, xe, ge, n, w->ebulk);
        op->matmul(be, &L->ffn_up_exps, ex, xe, ue, n, w->ebulk);
        op->swiglu(be, ge, ue, ge, (int64_t)n * Ie);
        op->matmul(be, &L->ffn_down_exps, ex, ge, ye, n, w->ebulk);
        for (int r = 0; r < n; r++) {
            float wt = 0;
            for (int j = 0; j < K; j++)
                if (sel[rows[r] * K + j] == ex) wt = wsel[rows[r] * K + j];
            op->add_scaled(be, w->y + (int64_t)rows[r] * C, ye + (int64_t)r * C, wt, C);
        }
    }
    /* shared expert */
    op->matmul(be, &L->ffn_gate_shexp, 0, w->h, w->b, T, w->bulk);
    op->matmul(be, &L->ffn_up_shexp, 0, w->h, w->c, T, w->bulk);
    op->swiglu(be, w->b, w->c, w->b, (int64_t)T * hp->n_ff_shexp);
    op->matmul(be, &L->ffn_down_shexp, 0, w->b, w->d, T, w->bulk);
    op->matmul(be, &L->ffn_gate_inp_shexp, 0, w->h, w->a, T, w->bulk);
    op->download(be, host, w->a, T);
    for (int t = 0; t < T; t++)
        op->add_scaled(be, w->y + (int64_t)t * C, w->d + (int64_t)t * C, 1.0f / (1.0f + expf(-host[t])), C);
    free(host), free(sel), free(wsel), free(rows), free(span_of), free(count);
    return 0;
}

/* One decoder block (trunk or MTP): x += mixer(norm(x)); x += ffn(norm(x)). */
static int block(model *m, int il, kv_state *kv, const fwd_span *spans, int n_spans, int T, work *w, err *e) {
    const layer *L = &m->layers[il];
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int64_t tc = (int64_t)T * m->hp.n_embd;
    op->rms_norm(be, w->x, &L->attn_norm, w->h, T, m->hp.n_embd, m->hp.eps);
    if (L->is_gdn)
        gdn_block(m, L, il, kv, spans, n_spans, T, w);
    else
        attention_block(m, L, il, kv, spans, n_spans, T, w);
    op->add(be, w->x, w->y, tc);
    op->rms_norm(be, w->x, &L->post_attention_norm, w->h, T, m->hp.n_embd, m->hp.eps);
    if (m->arch == ARCH_QWEN35MOE) {
        int rc = moe_block(m, L, spans, n_spans, T, w, e);
        if (rc) return rc;
    } else {
        ffn_block(m, L, T, w);
    }
    op->add(be, w->x, w->y, tc);
    return 0;
}

int qwen35_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    int T = 0;
    for (int s = 0; s < n_spans; s++) T += spans[s].n;
    work w;
    int rc = work_new(m, &w, T, kv->n_ctx, e);
    if (rc) return rc;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
    if (!ids) {
        work_free(be, &w);
        return err_set(e, ERR_NOMEM, "out of memory");
    }
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        for (int i = 0; i < spans[s].n; i++) {
            ids[t0 + i] = spans[s].tokens[i];
            w.pos[t0 + i] = kv->seqs[spans[s].seq].n_past + i;
        }
    fwd_bulk_rows(spans, n_spans, w.bulk, w.out_bulk);
    op->get_rows(be, &m->token_embd, ids, w.x, T);
    for (int il = 0; il < hp->n_layer && !rc; il++) rc = block(m, il, kv, spans, n_spans, T, &w, e);
    if (!rc) {
        /* gather the rows that want logits, then final norm and head */
        int n_out = 0;
        for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
            int first = spans[s].n - fwd_span_rows(&spans[s]);
            for (int i = first; i < spans[s].n; i++, n_out++)
                op->copy(be, w.h + (int64_t)n_out * hp->n_embd, w.x + (int64_t)(t0 + i) * hp->n_embd, hp->n_embd);
        }
        if (n_out) op->rms_norm(be, w.h, &m->output_norm, w.y, n_out, hp->n_embd, hp->eps);
        if (hidden && n_out) op->download(be, hidden, w.y, (int64_t)n_out * hp->n_embd);
        if (logits && n_out) {
            float *lg = be->ops->alloc(be, (int64_t)n_out * hp->n_vocab);
            if (!lg) {
                rc = err_set(e, ERR_NOMEM, "cannot allocate logits for %d rows", n_out);
            } else {
                op->matmul(be, &m->output, 0, w.y, lg, n_out, w.out_bulk);
                op->download(be, logits, lg, (int64_t)n_out * hp->n_vocab);
                be->ops->free(be, lg);
            }
        }
        for (int s = 0; s < n_spans; s++) kv->seqs[spans[s].seq].n_past += spans[s].n;
    }
    free(ids);
    work_free(be, &w);
    return rc;
}

/* ---------------------------------------------------------------- MTP (spec §3.2) */

int qwen35_mtp_forward(model *m, kv_state *kv, int seq, const float *hidden, const int32_t *next, int T,
                       float *logits, float *hidden_out, err *e) {
    const hparams *hp = &m->hp;
    backend *be = m->be;
    const backend_ops *op = be->ops;
    if (hp->n_nextn < 1) return err_set(e, ERR_UNSUPPORTED, "this model has no MTP block (nextn_predict_layers = 0)");
    if (seq < 0 || seq >= kv->n_seq || T < 1) return err_set(e, ERR_ARG, "bad MTP batch: sequence %d, %d rows", seq, T);
    seq_cache *c = &kv->seqs[seq];
    if (c->mtp_past + T > kv->n_ctx)
        return err_set(e, ERR_RANGE, "MTP cache of sequence %d: %d + %d rows exceed the context size %d", seq,
                       c->mtp_past, T, kv->n_ctx);
    for (int i = 0; i < T; i++)
        if (next[i] < 0 || next[i] >= hp->n_vocab)
            return err_set(e, ERR_RANGE, "token id %d is outside the vocabulary (0..%d)", next[i], hp->n_vocab - 1);
    int il = hp->n_layer; /* the (first) MTP block */
    const layer *L = &m->layers[il];
    int64_t C = hp->n_embd;
    work w;
    int rc = work_new(m, &w, T, kv->n_ctx, e);
    if (rc) return rc;
    for (int i = 0; i < T; i++) w.pos[i] = c->mtp_past + i;
    memset(w.bulk, T >= BULK_MIN_ROWS, (size_t)T); /* the rows of one sequence */
    /* [enorm(embed(next)) ; hnorm(hidden)] -> eh_proj */
    float *emb = w.a, *hid = w.b, *cat = w.c;
    op->get_rows(be, &m->token_embd, next, emb, T);
    op->rms_norm(be, emb, &L->nextn_enorm, emb, T, (int)C, hp->eps);
    op->upload(be, hid, hidden, (int64_t)T * C);
    op->rms_norm(be, hid, &L->nextn_hnorm, hid, T, (int)C, hp->eps);
    for (int t = 0; t < T; t++) {
        op->copy(be, cat + (int64_t)t * 2 * C, emb + (int64_t)t * C, C);
        op->copy(be, cat + (int64_t)t * 2 * C + C, hid + (int64_t)t * C, C);
    }
    op->matmul(be, &L->nextn_eh_proj, 0, cat, w.x, T, w.bulk);
    fwd_span span = {.seq = seq, .n = T, .tokens = next, .out = FWD_OUT_ALL};
    rc = block(m, il, kv, &span, 1, T, &w, e);
    if (!rc) {
        op->rms_norm(be, w.x, &L->nextn_shared_head_norm, w.y, T, (int)C, hp->eps);
        if (hidden_out) op->download(be, hidden_out, w.y, (int64_t)T * C);
        if (logits) {
            float *lg = op->alloc(be, (int64_t)T * hp->n_vocab);
            if (!lg) {
                rc = err_set(e, ERR_NOMEM, "cannot allocate MTP logits for %d rows", T);
            } else {
                op->matmul(be, &m->output, 0, w.y, lg, T, w.bulk);
                op->download(be, logits, lg, (int64_t)T * hp->n_vocab);
                op->free(be, lg);
            }
        }
        c->mtp_past += T;
    }
    work_free(be, &w);
    return rc;
}
