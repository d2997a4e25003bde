/* qwen4exp: Qwen's experimental hybrid ("Flash-Next", HF qwen4_exp): Gated DeltaNet and QSA blocks with a
 * MoE in every block, wired by hyper-connections, plus a per-layer n-gram embedding (PLE) on one GDN block.
 * The math is /work/shared/specs/qwen4exp.md §2 (section numbers below refer to it; docs/qwen4exp.md lists
 * where the spec proved wrong).
 *
 *   X = [e, e, .., e]                       e = token_embd[token]; X [T][S*C] the S-stream wide residual
 *   for each block il:
 *       if il is the PLE block:  X += PLE(X, tokens)                                  (§2.7)
 *       (h, a) = hc_read_attn(X);  X_s += 2 sigmoid(a_s / S) * mixer(h)             (§2.3; GDN or QSA)
 *       (h, a) = hc_read_ffn(X);   X_s += 2 sigmoid(a_s / S) * moe(h)
 *   logits = output(hc_read_final(X))                                               (no final norm)
 *
 * hc_read: xn = grouped rms_norm(X) * w; h = mean_s sigmoid(up(silu(down(xn) / S)))_s * xn_s; a = inject(xn).
 * QSA (§2.5): gated attention whose queries each read only the n_sel = budget / c best compressed key blocks
 * (the lightning indexer's scores over mean-pooled, normed, rotated indexer keys) plus their incomplete block;
 * dense while a query sees at most n_sel complete blocks.
 * GGUF specifics: zero-centred norms hold the +1 (plain rms_norm * w), except ssm_norm; value heads tiled. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/blocks.h"
#include "models/registry.h"

/* ---------------------------------------------------------------- loading */

/* "{arch}.key" as an array of integers (any integer or bool element type) into out[0..n), n <= cap. */
static int get_int_arr(model *m, const char *key, uint64_t *out, int cap, int *n, err *e) {
    char full[160];
    snprintf(full, sizeof full, "qwen4exp.%s", key);
    gguf_array a;
    int rc = gguf_get_arr(m->gguf, full, -1, &a, e);
    if (rc) return rc;
    static const int size[] = {[GGUF_UINT8] = 1, [GGUF_INT8] = 1, [GGUF_UINT16] = 2, [GGUF_INT16] = 2,
                               [GGUF_UINT32] = 4, [GGUF_INT32] = 4, [GGUF_BOOL] = 1, [GGUF_UINT64] = 8,
                               [GGUF_INT64] = 8};
    if (a.type >= (int)(sizeof size / sizeof size[0]) || !size[a.type])
        return err_set(e, ERR_FORMAT, "%s: expected an array of integers, found %s elements", full,
                       gguf_vtype_name(a.type));
    if (a.n > (uint64_t)cap) return err_set(e, ERR_FORMAT, "%s has %llu entries, at most %d expected", full,
                                            (unsigned long long)a.n, cap);
    for (uint64_t i = 0; i < a.n; i++) {
        const unsigned char *p = (const unsigned char *)a.data + i * (uint64_t)size[a.type];
        uint64_t v = 0;
        memcpy(&v, p, (size_t)size[a.type]); /* little-endian */
        bool neg = (a.type == GGUF_INT8 && (int8_t)v < 0) || (a.type == GGUF_INT16 && (int16_t)v < 0) ||
                   (a.type == GGUF_INT32 && (int32_t)v < 0) || (a.type == GGUF_INT64 && (int64_t)v < 0);
        if (neg) return err_set(e, ERR_FORMAT, "%s[%llu] is negative", full, (unsigned long long)i);
        out[i] = v;
    }
    *n = (int)a.n;
    return 0;
}

static int read_hparams(model *m, err *e) {
    hparams *hp = &m->hp;
    int rc = blk_read_hybrid_hparams(m, e), n;
    if (rc || (rc = model_get_u32(m, "expert_count", &hp->n_expert, e)) ||
        (rc = model_get_u32(m, "expert_used_count", &hp->n_expert_used, e)) ||
        (rc = model_get_u32(m, "expert_feed_forward_length", &hp->n_ff_exp, e)) ||
        (rc = model_get_u32(m, "expert_shared_feed_forward_length", &hp->n_ff_shexp, e)) ||
        (rc = model_get_u32(m, "hyper_connection.count", &hp->hc_count, e)) ||
        (rc = model_get_u32(m, "hyper_connection.low_rank", &hp->hc_rank, e)) ||
        (rc = model_get_u32(m, "attention.indexer.head_count", &hp->idx_heads, e)) ||
        (rc = model_get_u32(m, "attention.indexer.key_length", &hp->idx_dim, e)) ||
        (rc = model_get_u32(m, "attention.indexer.top_k", &hp->idx_budget, e)))
        return rc;
    hp->n_layer = hp->n_block; /* MTP blocks are not supported yet: refused below */
    if (gguf_find_kv(m->gguf, "qwen4exp.nextn_predict_layers")) {
        int nn = 0;
        if ((rc = model_get_u32(m, "nextn_predict_layers", &nn, e))) return rc;
        /* refused, not guessed: docs/qwen4exp.md ("The MTP block") lists what was checked */
        if (nn)
            return err_set(e, ERR_UNSUPPORTED, "qwen4exp MTP blocks (nextn_predict_layers = %d) are not supported: "
                           "transformers drops mtp.* weights and llama.cpp 0.3.36 has no qwen4exp nextn graph, so there "
                           "is nothing to test one against. HINT: convert without it (--no-nextn), as the published "
                           "GGUF is", nn);
    }
    if (hp->n_rot > hp->idx_dim)
        return err_set(e, ERR_FORMAT, "rope.dimension_count %d exceeds the indexer key length %d (the indexer reuses "
                       "the attention's rotary dims)", hp->n_rot, hp->idx_dim);
    if (hp->n_layer <= 0 || hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert || hp->hc_count < 2 ||
        hp->hc_rank <= 0 || hp->idx_heads <= 0 || hp->idx_dim <= 0 || hp->idx_dim > hp->n_embd)
        return err_set(e, ERR_FORMAT, "block_count %d, experts %d of %d, hyper-connections %d rank %d, indexer %d x %d",
                       hp->n_block, hp->n_expert_used, hp->n_expert, hp->hc_count, hp->hc_rank, hp->idx_heads,
                       hp->idx_dim);
    /* layer kinds and the compression ratio: compress_ratios[il] > 0 marks a QSA block (all equal) */
    uint64_t v[256];
    if ((rc = get_int_arr(m, "attention.compress_ratios", v, 256, &n, e))) return rc;
    if (n != hp->n_layer) return err_set(e, ERR_FORMAT, "attention.compress_ratios has %d entries, expected %d", n, hp->n_layer);
    hp->idx_ratio = 0;
    for (int il = 0; il < n; il++) {
        if (v[il] && hp->idx_ratio && v[il] != (uint64_t)hp->idx_ratio)
            return err_set(e, ERR_UNSUPPORTED, "attention.compress_ratios: blocks with ratios %d and %llu", hp->idx_ratio,
                           (unsigned long long)v[il]);
        if (v[il]) hp->idx_ratio = (int)v[il];
    }
    if (!hp->idx_ratio || hp->idx_budget % hp->idx_ratio || hp->idx_budget <= 0 || hp->idx_ratio > 64)
        return err_set(e, ERR_FORMAT, "indexer budget %d is not a positive multiple of the compression ratio %d",
                       hp->idx_budget, hp->idx_ratio);
    m->layers = calloc((size_t)hp->n_block, sizeof *m->layers);
    if (!m->layers) return err_set(e, ERR_NOMEM, "out of memory");
    for (int il = 0; il < n; il++) m->layers[il].is_gdn = v[il] == 0;
    /* PLE (§2.7): one GDN block with the hash constants of the file */
    hp->ple_dim = 0;
    if (!gguf_find_kv(m->gguf, "qwen4exp.ple.layers")) return 0;
    ngram_hash *h = &hp->ple_hash;
    int n_mult, n_off, n_size, eos;
    if ((rc = get_int_arr(m, "ple.layers", v, 256, &n, e))) return rc;
    if (n != 1 || v[0] >= (uint64_t)hp->n_layer || !m->layers[v[0]].is_gdn)
        return err_set(e, ERR_UNSUPPORTED, "ple.layers: exactly one GDN block is supported (found %d entries, first %llu)",
                       n, (unsigned long long)v[0]);
    hp->ple_layer = (int)v[0];
    if ((rc = model_get_u32(m, "ple.ngram_size", &h->n, e)) ||
        (rc = model_get_u32(m, "ple.heads_per_ngram", &h->heads_per, e)) ||
        (rc = model_get_u32(m, "ple.conv_kernel", &hp->ple_conv, e)) ||
        (rc = model_get_u32(m, "ple.eos_token_id", &eos, e)) ||
        (rc = model_get_u32(m, "embedding_length_per_layer_input", &hp->ple_dim, e)) ||
        (rc = get_int_arr(m, "ple.layer_multipliers", h->mult, NGRAM_MAX_N, &n_mult, e)) ||
        (rc = get_int_arr(m, "ple.head_offsets", h->offset, NGRAM_MAX_HEADS, &n_off, e)) ||
        (rc = get_int_arr(m, "ple.head_vocab_sizes", h->size, NGRAM_MAX_HEADS, &n_size, e)))
        return rc;
    h->eos = eos;
    const int n_p = (h->n - 1) * h->heads_per;
    if (h->n < 2 || h->n > NGRAM_MAX_N || h->heads_per <= 0 || n_p > NGRAM_MAX_HEADS || n_mult != h->n ||
        n_off != n_p || n_size != n_p || hp->ple_conv < 1 || hp->ple_dim <= 0)
        return err_set(e, ERR_FORMAT, "ple: ngram size %d, %d heads per ngram, %d multipliers, %d offsets, %d sizes, "
                       "conv %d, row width %d are inconsistent", h->n, h->heads_per, n_mult, n_off, n_size,
                       hp->ple_conv, hp->ple_dim);
    /* token * multiplier must not wrap (the hash is int64 arithmetic in the reference) */
    for (int j = 0; j < h->n; j++)
        if (h->mult[j] == 0 || h->mult[j] > (uint64_t)INT64_MAX / (uint64_t)(eos > 1 ? eos : 1))
            return err_set(e, ERR_FORMAT, "ple.layer_multipliers[%d] = %llu is out of range", j,
                           (unsigned long long)h->mult[j]);
    for (int g = 0; g < n_p; g++)
        if (h->size[g] == 0 || h->offset[g] + h->size[g] > (uint64_t)INT32_MAX)
            return err_set(e, ERR_FORMAT, "ple head %d: rows [%llu, +%llu) do not fit an int32 row index", g,
                           (unsigned long long)h->offset[g], (unsigned long long)h->size[g]);
    return 0;
}

/* A block's tensors: GGUF suffix, the layer field, which blocks have it, and its shape. */
enum { ALL, GDN, QSA, PLE };
typedef struct tensor_def {
    const char *suffix;
    size_t field;
    int kind, nd;
    char dims[3]; /* C: n_embd, W: S*C, R: rank, E: experts, I/J: expert / shared width, S: streams, K: GDN conv,
                   * X: GDN conv channels, V: Hv*Dv, H: Hv, v: Dv, Q: 2*Hq*D, k: Hkv*D, O: Hq*D, D: head dim,
                   * i: Hi*Di, d: Di, P: PLE input (n_p*d_p), p: PLE conv kernel */
    enum { ANY_TYPE, F32, F32W } f32; /* 0: any type; F32W: F32, or F16 / BF16 widened at load (model_bind_f32) */
} tensor_def;

#define F(x) offsetof(layer, x)
static const tensor_def tensors[] = {
    {"hc_attn_norm.weight", F(hc_attn_norm), ALL, 1, "W", F32},  {"hc_attn_down.weight", F(hc_attn_down), ALL, 2, "WR", 0},
    {"hc_attn_up.weight", F(hc_attn_up), ALL, 2, "RW", 0},       {"hc_attn_inject.weight", F(hc_attn_inject), ALL, 2, "WS", 0},
    {"hc_ffn_norm.weight", F(hc_ffn_norm), ALL, 1, "W", F32},    {"hc_ffn_down.weight", F(hc_ffn_down), ALL, 2, "WR", 0},
    {"hc_ffn_up.weight", F(hc_ffn_up), ALL, 2, "RW", 0},         {"hc_ffn_inject.weight", F(hc_ffn_inject), ALL, 2, "WS", 0},
    {"ffn_gate_inp.weight", F(ffn_gate_inp), ALL, 2, "CE", 0},   {"ffn_gate_exps.weight", F(ffn_gate_exps), ALL, 3, "CIE", 0},
    {"ffn_up_exps.weight", F(ffn_up_exps), ALL, 3, "CIE", 0},    {"ffn_down_exps.weight", F(ffn_down_exps), ALL, 3, "ICE", 0},
    {"ffn_gate_inp_shexp.weight", F(ffn_gate_inp_shexp), ALL, 1, "C", 0},
    {"ffn_gate_shexp.weight", F(ffn_gate_shexp), ALL, 2, "CJ", 0}, {"ffn_up_shexp.weight", F(ffn_up_shexp), ALL, 2, "CJ", 0},
    {"ffn_down_shexp.weight", F(ffn_down_shexp), ALL, 2, "JC", 0},
    {"attn_qkv.weight", F(attn_qkv), GDN, 2, "CX", 0},           {"attn_gate.weight", F(attn_gate), GDN, 2, "CV", 0},
    {"ssm_conv1d.weight", F(ssm_conv1d), GDN, 2, "KX", F32},     {"ssm_dt.bias", F(ssm_dt), GDN, 1, "H", F32},
    {"ssm_a", F(ssm_a), GDN, 1, "H", F32},                       {"ssm_beta.weight", F(ssm_beta), GDN, 2, "CH", 0},
    {"ssm_alpha.weight", F(ssm_alpha), GDN, 2, "CH", 0},         {"ssm_norm.weight", F(ssm_norm), GDN, 1, "v", F32},
    {"ssm_out.weight", F(ssm_out), GDN, 2, "VC", 0},
    {"attn_q.weight", F(attn_q), QSA, 2, "CQ", 0},               {"attn_k.weight", F(attn_k), QSA, 2, "Ck", 0},
    {"attn_v.weight", F(attn_v), QSA, 2, "Ck", 0},               {"attn_output.weight", F(attn_output), QSA, 2, "OC", 0},
    {"attn_q_norm.weight", F(attn_q_norm), QSA, 1, "D", F32},    {"attn_k_norm.weight", F(attn_k_norm), QSA, 1, "D", F32},
    {"indexer.q_proj.weight", F(idx_q_proj), QSA, 2, "Ci", 0},   {"indexer.k_proj.weight", F(idx_k_proj), QSA, 2, "Cd", 0},
    {"indexer.q_norm.weight", F(idx_q_norm), QSA, 1, "d", F32},  {"indexer.k_norm.weight", F(idx_k_norm), QSA, 1, "d", F32},
    {"ple_key.weight", F(ple_key), PLE, 2, "PW", 0},             {"ple_value.weight", F(ple_value), PLE, 2, "PC", 0},
    {"ple_norm_key.weight", F(ple_norm_key), PLE, 1, "W", F32},  {"ple_norm_query.weight", F(ple_norm_query), PLE, 1, "W", F32},
    {"ple_norm_conv.weight", F(ple_norm_conv), PLE, 1, "W", F32},  {"ple_conv1d.weight", F(ple_conv1d), PLE, 2, "pW", F32W},
};
#undef F

static int64_t dim_of(const hparams *hp, char d) {
    const int64_t C = hp->n_embd, S = hp->hc_count, np = (int64_t)(hp->ple_hash.n - 1) * hp->ple_hash.heads_per;
    switch (d) {
    case 'C': return C;
    case 'W': return S * C;
    case 'R': return hp->hc_rank;
    case 'S': return S;
    case 'E': return hp->n_expert;
    case 'I': return hp->n_ff_exp;
    case 'J': return hp->n_ff_shexp;
    case 'K': return hp->ssm_conv;
    case 'X': return 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv;
    case 'V': return (int64_t)hp->ssm_hv * hp->ssm_dv;
    case 'H': return hp->ssm_hv;
    case 'v': return hp->ssm_dv;
    case 'Q': return 2LL * hp->n_head * hp->head_dim;
    case 'k': return (int64_t)hp->n_head_kv * hp->head_dim;
    case 'O': return (int64_t)hp->n_head * hp->head_dim;
    case 'D': return hp->head_dim;
    case 'i': return (int64_t)hp->idx_heads * hp->idx_dim;
    case 'd': return hp->idx_dim;
    case 'P': return np * hp->ple_dim;
    case 'p': return hp->ple_conv;
    }
    return -1;
}

static int qwen4exp_load(model *m, err *e) {
    int rc = read_hparams(m, e);
    if (rc) return rc;
    hparams *hp = &m->hp;
    const gguf_tensor *te = gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return err_set(e, ERR_NOTFOUND, "tensor 'token_embd.weight' is missing");
    hp->n_vocab = (int)te->ne[1];
    if (hp->ple_dim && hp->ple_hash.eos >= hp->n_vocab)
        return err_set(e, ERR_FORMAT, "ple.eos_token_id %d is outside the vocabulary (%d)", hp->ple_hash.eos, hp->n_vocab);
    const int64_t C = hp->n_embd, W = (int64_t)hp->hc_count * C, R = hp->hc_rank;
    int64_t emb[2] = {C, hp->n_vocab}, wn[1] = {W}, dn[2] = {W, R}, up[2] = {R, W};
    if ((rc = model_bind(m, &m->token_embd, "token_embd.weight", 2, emb, true, e)) ||
        (rc = model_bind(m, &m->output, "output.weight", 2, emb, false, e)) ||
        (rc = model_bind(m, &m->output_hc_norm, "output_hc_norm.weight", 1, wn, true, e)) ||
        (rc = model_bind(m, &m->output_hc_down, "output_hc_down.weight", 2, dn, true, e)) ||
        (rc = model_bind(m, &m->output_hc_up, "output_hc_up.weight", 2, up, true, e)) ||
        (rc = model_require_f32(&m->output_hc_norm, e)))
        return rc;
    m->tied = m->output.data == NULL;
    if (m->tied) m->output = m->token_embd;
    if (hp->ple_dim) {
        const gguf_tensor *pt = gguf_find_tensor(m->gguf, "per_layer_token_embd.weight");
        if (!pt) return err_set(e, ERR_NOTFOUND, "tensor 'per_layer_token_embd.weight' is missing (the file has PLE keys)");
        int64_t need = 0;
        for (int g = 0; g < (hp->ple_hash.n - 1) * hp->ple_hash.heads_per; g++)
            if ((int64_t)(hp->ple_hash.offset[g] + hp->ple_hash.size[g]) > need)
                need = (int64_t)(hp->ple_hash.offset[g] + hp->ple_hash.size[g]);
        if (pt->ne[1] < need)
            return err_set(e, ERR_FORMAT, "per_layer_token_embd has %lld rows, the PLE heads index up to %lld",
                           (long long)pt->ne[1], (long long)need);
        int64_t ne[2] = {hp->ple_dim, pt->ne[1]};
        if ((rc = model_bind(m, &m->per_layer_token_embd, "per_layer_token_embd.weight", 2, ne, true, e))) return rc;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        layer *L = &m->layers[il];
        const bool ple = hp->ple_dim && il == hp->ple_layer;
        for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
            const tensor_def *t = &tensors[i];
            if ((t->kind == GDN && !L->is_gdn) || (t->kind == QSA && L->is_gdn) || (t->kind == PLE && !ple)) continue;
            char name[96];
            snprintf(name, sizeof name, "blk.%d.%s", il, t->suffix);
            int64_t ne[3];
            for (int d = 0; d < t->nd; d++) ne[d] = dim_of(hp, t->dims[d]);
            weight *w = (weight *)((char *)L + t->field);
            if (t->f32 == F32W) rc = model_bind_f32(m, w, name, t->nd, ne, true, e);
            else if (!(rc = model_bind(m, w, name, t->nd, ne, true, e)) && t->f32 == F32) rc = model_require_f32(w, e);
            if (rc) return rc;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- forward */

/* hyper-connection read (§2.3) of the wide residual w.xw into h [T][C]; inj [T][S] (when inject is bound).
 * Uses w.a (xn), w.b (low rank), w.c (gate). */
static void hc_read(model *m, fwd_ctx *c, const weight *norm, const weight *down, const weight *up,
                    const weight *inject, float *h, float *inj) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    const int T = w->T, S = hp->hc_count, C = hp->n_embd;
    op->rms_norm_groups(x, w->xw, norm, w->a, T, S, C, hp->eps);
    op->matmul(x, down, 0, w->a, w->b, T, MM_ROWS_PASS);
    op->silu_scaled(x, w->b, w->b, 1.0f / (float)S, (int64_t)T * hp->hc_rank); /* the 1/S comes before the SiLU */
    op->matmul(x, up, 0, w->b, w->c, T, MM_ROWS_PASS);
    op->hc_mix(x, w->a, w->c, h, T, S, C);
    if (inject) op->matmul(x, inject, 0, w->a, inj, T, MM_ROWS_PASS);
}

/* PLE (§2.7) of block il: X += V + silu(dilated conv(grouped norm(V))), V_s = sigmoid(gate_s) * value. */
static void ple_block(model *m, fwd_ctx *c, const layer *L, int il, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    const int T = w->T, S = hp->hc_count, C = hp->n_embd, np = (hp->ple_hash.n - 1) * hp->ple_hash.heads_per;
    const int64_t W = (int64_t)S * C;
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->ngram_rows(x, w->ids + t0, seq_state(&c->kv->seqs[spans[s].seq], il, 3), w->isel + (int64_t)t0 * np,
                       spans[s].n, &hp->ple_hash);
    float *emb = w->f, *key = w->a, *query = w->b, *gated = w->c, *normed = w->d, *conv = w->u, *value = w->h;
    op->get_rows(x, &m->per_layer_token_embd, w->isel, emb, T * np); /* [T][n_p][d_p]: head g at g*d_p */
    op->matmul(x, &L->ple_key, 0, emb, key, T, MM_ROWS_PASS);
    op->rms_norm_groups(x, key, &L->ple_norm_key, key, T, S, C, hp->eps);
    op->matmul(x, &L->ple_value, 0, emb, value, T, MM_ROWS_PASS);
    op->rms_norm_groups(x, w->xw, &L->ple_norm_query, query, T, S, C, hp->eps); /* the streams are the query */
    op->ple_gate(x, key, query, value, gated, T, S, C);
    op->rms_norm_groups(x, gated, &L->ple_norm_conv, normed, T, S, C, hp->eps);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++)
        op->conv1d_dilated_silu(x, normed + t0 * W, seq_state(&c->kv->seqs[spans[s].seq], il, 2), &L->ple_conv1d,
                                conv + t0 * W, spans[s].n, (int)W, hp->ple_conv, hp->ple_hash.n);
    op->add(x, w->xw, gated, T * W); /* the skip path adds the un-normed value */
    op->add(x, w->xw, conv, T * W);
}

/* QSA (§2.5): the indexer caches raw keys, pools each completed block into a normed, rotated block key,
 * selects n_sel blocks per query; gated attention over the selection. Reads w.h, writes w.y. */
static void qsa_block(model *m, fwd_ctx *c, const layer *L, int il, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    const int T = w->T, Hq = hp->n_head, Hkv = hp->n_head_kv, D = hp->head_dim, Hi = hp->idx_heads;
    const int Di = hp->idx_dim, cr = hp->idx_ratio, n_sel = hp->idx_budget / cr;
    const int64_t qrow = (int64_t)Hq * D, kvrow = (int64_t)Hkv * D;
    const rope_params rp = {ROPE_NEOX, hp->n_rot, hp->rope_theta, 1.0f}; /* the attention's tables (§2.5.3) */
    float *iq = w->u, *ik = w->y;
    op->matmul(x, &L->idx_q_proj, 0, w->h, iq, T, MM_ROWS_PASS); /* [T][Hi][Di] */
    op->matmul(x, &L->idx_k_proj, 0, w->h, ik, T, MM_ROWS_PASS); /* [T][Di] raw */
    op->rms_norm_heads(x, iq, &L->idx_q_norm, T, Hi, Di, hp->eps);
    op->rope(x, iq, w->pos, T, Hi, Di, &rp, NULL);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        const seq_cache *sc = &c->kv->seqs[spans[s].seq];
        float *raw = seq_state(sc, il, 2), *blk = seq_state(sc, il, 3);
        const int n = spans[s].n, past = w->h_pos[t0];
        op->store_rows(x, raw + (int64_t)past * Di, QT_F32, ik + (int64_t)t0 * Di, n, Di);
        /* blocks completed by this span (a block key needs its c raw keys: written once, when complete) */
        if ((past + n) / cr > past / cr)
            op->qsa_block_keys(x, raw, blk, past / cr, (past + n) / cr, cr, Di, &L->idx_k_norm, hp->eps, &rp);
        op->qsa_select(x, iq + (int64_t)t0 * Hi * Di, blk, w->pos + t0, w->isel + (int64_t)t0 * n_sel, n, Hi, Di, cr,
                       n_sel);
    }
    float *q = w->b, *gate = w->c, *k = w->d, *v = w->f, *att = w->a;
    blk_gated_qkv(m, c, L, q, gate, k, v);
    const enum qtype tk = c->kv->plan.type_k, tv = c->kv->plan.type_v;
    const size_t krow = qtype_row_bytes(tk, kvrow), vrow = qtype_row_bytes(tv, kvrow);
    for (int s = 0, t0 = 0; s < n_spans; t0 += spans[s].n, s++) {
        const seq_cache *sc = &c->kv->seqs[spans[s].seq];
        char *kc = seq_state(sc, il, 0), *vc = seq_state(sc, il, 1);
        const int n = spans[s].n, past = w->h_pos[t0];
        op->store_rows(x, kc + (size_t)past * krow, tk, k + t0 * kvrow, n, kvrow);
        op->store_rows(x, vc + (size_t)past * vrow, tv, v + t0 * kvrow, n, kvrow);
        op->attention_sparse(x, q + t0 * qrow, kc, vc, tk, tv, att + t0 * qrow, w->pos + t0,
                             w->isel + (int64_t)t0 * n_sel, n, Hq, Hkv, D, 1.0f / sqrtf((float)D), cr, n_sel);
    }
    op->sigmoid_mul(x, att, gate, (int64_t)T * qrow); /* always sigmoid (§2.5.1) */
    op->matmul(x, &L->attn_output, 0, att, w->y, T, MM_ROWS_PASS);
}

static void qwen4exp_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    const exec_ops *op = x->ops;
    fwd_work *w = &c->w;
    const int T = w->T, S = hp->hc_count, C = hp->n_embd;
    if (!op->hc_mix || !op->attention_sparse || !op->ngram_rows) { /* optional ops: the CPU has them */
        exec_fail(x, ERR_UNSUPPORTED, "qwen4exp: the %s device has no hyper-connection / PLE / QSA ops yet (cpu has them)",
                  x->dev->name);
        return;
    }
    op->get_rows(x, &m->token_embd, w->ids, w->x, T);
    for (int s = 0; s < S; s++) op->set_cols(x, w->xw, w->x, T, (int64_t)S * C, (int64_t)s * C, C); /* S copies */
    for (int il = 0; il < hp->n_layer; il++) {
        const layer *L = &m->layers[il];
        if (hp->ple_dim && il == hp->ple_layer) ple_block(m, c, L, il, spans, n_spans);
        hc_read(m, c, &L->hc_attn_norm, &L->hc_attn_down, &L->hc_attn_up, &L->hc_attn_inject, w->h, w->hc_inj);
        if (L->is_gdn)
            blk_gdn(m, c, L, il, spans, n_spans, GDN_GATE_SIGMOID);
        else
            qsa_block(m, c, L, il, spans, n_spans);
        op->hc_add(x, w->xw, w->y, w->hc_inj, T, S, C);
        hc_read(m, c, &L->hc_ffn_norm, &L->hc_ffn_down, &L->hc_ffn_up, &L->hc_ffn_inject, w->h, w->hc_inj);
        blk_moe(m, c, L);
        op->hc_add(x, w->xw, w->y, w->hc_inj, T, S, C);
    }
    /* the final mixer is the output norm (§2.8): its mix goes to the head as it is */
    hc_read(m, c, &m->output_hc_norm, &m->output_hc_down, &m->output_hc_up, NULL, w->x, NULL);
}

/* GDN blocks: conv window [K-1][dc] and S [Hv][Dk][Dv] (recurrent), the PLE block also its conv history
 * [(K_p-1)*N][S*C] and the last N-1 tokens (recurrent: reset and checkpoints carry them); QSA blocks: k, v,
 * the raw indexer keys [n_ctx][Di] and the block keys [n_ctx/c][Di] (position-indexed caches). */
static int qwen4exp_block_state(const model *m, int il, const state_plan *sp, state_buf out[STATE_MAX_BUFS]) {
    const hparams *hp = &m->hp;
    if (!m->layers[il].is_gdn) {
        int n = blk_attention_state(m, sp, out);
        out[n++] = (state_buf){QT_F32, sp->n_ctx, hp->idx_dim, false};
        out[n++] = (state_buf){QT_F32, sp->n_ctx / hp->idx_ratio + 1, hp->idx_dim, false};
        return n;
    }
    int64_t dc = 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv;
    out[0] = (state_buf){QT_F32, hp->ssm_conv - 1, dc, true};
    out[1] = (state_buf){QT_F32, 1, (int64_t)hp->ssm_hv * hp->ssm_dk * hp->ssm_dv, true};
    if (!hp->ple_dim || il != hp->ple_layer) return 2;
    out[2] = (state_buf){QT_F32, (int64_t)(hp->ple_conv - 1) * hp->ple_hash.n, (int64_t)hp->hc_count * hp->n_embd, true};
    out[3] = (state_buf){QT_F32, 1, hp->ple_hash.n - 1, true};
    return 4;
}

const arch_def arch_qwen4exp = {ARCH_QWEN4EXP, "qwen4exp", qwen4exp_load, qwen4exp_forward, qwen4exp_block_state, NULL};
