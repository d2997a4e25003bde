/* forward: a context's plan and arena, batch validation, the pass's inputs and the shared output head;
 * the trunk of each architecture comes from its registry entry (arch_def.forward). */
#include "engine/forward.h"

#include <stdlib.h>
#include <string.h>

#include "base/fpenv.h"

int fwd_n_out(const fwd_span *spans, int n_spans) {
    int n = 0;
    for (int s = 0; s < n_spans; s++) n += fwd_span_rows(&spans[s]);
    return n;
}

/* widest projection of any block: the width of the wide arena slots */
/* PLE n-gram heads (0: no PLE) */
static int64_t ple_n_heads(const hparams *hp) {
    return hp->ple_dim > 0 ? (int64_t)(hp->ple_hash.n - 1) * hp->ple_hash.heads_per : 0;
}

static int64_t wide_width(const hparams *hp) {
    int64_t dc = 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv;
    int64_t widths[] = {hp->n_embd * 2LL, 2LL * hp->n_head * hp->head_dim, dc, hp->n_ff, hp->n_ff_exp,
                        hp->n_ff_shexp, hp->n_expert + 1LL /* router logits + the shared gate (blk_moe) */,
                        (int64_t)hp->hc_count * hp->n_embd,
                        (int64_t)hp->idx_heads * hp->idx_dim, ple_n_heads(hp) * (int64_t)hp->ple_dim};
    int64_t w = 1;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) w = widths[i] > w ? widths[i] : w;
    return w;
}

exec_plan fwd_plan(const model *m, int n_batch, int n_seq, int n_ctx, int n_threads) {
    const hparams *hp = &m->hp;
    int out = n_seq > 128 ? n_seq : 128;
    return (exec_plan){.max_tokens = n_batch, .max_out = out < n_batch ? out : n_batch, .n_ctx = n_ctx,
                       .attn_d = hp->head_dim, .attn_hq = hp->n_head, .gdn_dk = hp->ssm_dk, .gdn_dv = hp->ssm_dv,
                       .gdn_hv = hp->ssm_hv,
                       .moe_k = hp->n_expert_used, .n_threads = n_threads,
                       .qsa_keys = hp->idx_ratio ? hp->idx_budget + hp->idx_ratio - 1 : 0,
                       .qsa_heads = hp->idx_ratio ? hp->n_head : 0};
}

/* Lays the arena out (base NULL: only sizes it); returns its bytes. */
static size_t carve(fwd_work *w, const hparams *hp, int n_ctx, char *base) {
    size_t off = 0;
#define SLOT(ptr, type, count)                                                                                  \
    do {                                                                                                      \
        if (base) w->ptr = (void *)(base + off);                                                               \
        off += (sizeof(type) * (size_t)(count) + 63) & ~(size_t)63;                                           \
    } while (0)
    const int64_t T = w->max_tokens, C = hp->n_embd, TK = T * (hp->n_expert_used > 0 ? hp->n_expert_used : 0);
    SLOT(x, float, T * C);
    SLOT(h, float, T * C);
    SLOT(y, float, T * C);
    SLOT(a, float, T * w->wmax);
    SLOT(b, float, T * w->wmax);
    SLOT(c, float, T * w->wmax);
    SLOT(d, float, T * w->wmax);
    SLOT(f, float, T * w->wmax);
    SLOT(u, float, T * w->wmax);
    SLOT(g, float, T * (hp->ssm_hv > 0 ? hp->ssm_hv : 1));
    SLOT(beta, float, T * (hp->ssm_hv > 0 ? hp->ssm_hv : 1));
    SLOT(logits, float, (int64_t)w->out_rows * hp->n_vocab);
    SLOT(moe_g, float, TK * hp->n_ff_exp);
    SLOT(moe_u, float, TK * hp->n_ff_exp);
    SLOT(moe_y, float, TK * C);
    SLOT(moe_w, float, TK);
    SLOT(moe_sel, int32_t, TK);
    const int64_t n_sel = hp->idx_ratio ? hp->idx_budget / hp->idx_ratio : 0, n_p = ple_n_heads(hp);
    SLOT(xw, float, T * C * hp->hc_count);
    SLOT(hc_inj, float, T * hp->hc_count);
    SLOT(isel, int32_t, T * (n_sel > n_p ? n_sel : n_p));
    SLOT(ids, int32_t, T);
    SLOT(pos, int32_t, T);
    SLOT(out_idx, int32_t, T);
    SLOT(kpos, int32_t, n_ctx);
#undef SLOT
    return off;
}

int fwd_ctx_init(fwd_ctx *c, model *m, int n_batch, int n_seq, const state_plan *sp, int n_threads, err *e) {
    const int n_ctx = sp->n_ctx;
    memset(c, 0, sizeof *c);
    backend *be = m->be;
    exec_plan plan = fwd_plan(m, n_batch, n_seq, n_ctx, n_threads);
    if (!(c->x = be->ops->exec_new(be, &plan, e))) return e->code ? e->code : ERR_NOMEM;
    int rc = kv_new(&c->kv, m, c->x, n_seq, sp, e);
    if (rc) goto fail;
    fwd_work *w = &c->w;
    w->max_tokens = n_batch;
    w->max_spans = n_seq;
    w->out_rows = plan.max_out;
    w->wmax = wide_width(&m->hp);
    size_t bytes = carve(w, &m->hp, n_ctx, NULL);
    w->arena = be->ops->alloc(be, bytes);
    w->h_ids = malloc(sizeof(int32_t) * 3 * (size_t)n_batch);
    w->pass = malloc(sizeof(pass_span) * (size_t)n_seq);
    if (!w->arena || !w->h_ids || !w->pass) {
        rc = err_set(e, ERR_NOMEM, "cannot allocate the activations of %d-token passes: %.1f MiB", n_batch,
                     (double)bytes / (1 << 20));
        goto fail;
    }
    carve(w, &m->hp, n_ctx, w->arena);
    w->h_pos = w->h_ids + n_batch;
    w->h_out_idx = w->h_pos + n_batch;
    int32_t *kpos = malloc(sizeof(int32_t) * (size_t)n_ctx);
    if (!kpos) {
        rc = err_set(e, ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n_ctx; i++) kpos[i] = i;
    c->x->ops->upload(c->x, w->kpos, kpos, sizeof(int32_t) * (size_t)n_ctx);
    free(kpos);
    return 0;
fail:
    fwd_ctx_free(c, m);
    return rc;
}

void fwd_ctx_free(fwd_ctx *c, model *m) {
    if (c->w.arena) m->be->ops->free(m->be, c->w.arena);
    free(c->w.h_ids);
    free(c->w.pass);
    kv_free(c->kv);
    exec_free(c->x);
    memset(c, 0, sizeof *c);
}

void fwd_begin(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans, const int *past0) {
    (void)m;
    fwd_work *w = &c->w;
    exec *x = c->x;
    int T = 0, n_out = 0;
    for (int s = 0; s < n_spans; s++) {
        const int past = past0 ? past0[s] : c->kv->seqs[spans[s].seq].n_past, rows = fwd_span_rows(&spans[s]);
        for (int i = 0; i < spans[s].n; i++) {
            w->h_ids[T + i] = spans[s].tokens[i];
            w->h_pos[T + i] = past + i;
        }
        for (int i = spans[s].n - rows; i < spans[s].n; i++) w->h_out_idx[n_out++] = T + i;
        w->pass[s] = (pass_span){spans[s].n, rows};
        T += spans[s].n;
    }
    w->T = T;
    w->n_out = n_out;
    /* begin_pass first: the pass's uploads belong to it (a GPU executor may record them with its ops) */
    x->ops->begin_pass(x, w->pass, n_spans);
    x->ops->upload(x, w->ids, w->h_ids, sizeof(int32_t) * (size_t)T);
    x->ops->upload(x, w->pos, w->h_pos, sizeof(int32_t) * (size_t)T);
    x->ops->upload(x, w->out_idx, w->h_out_idx, sizeof(int32_t) * (size_t)n_out);
}

void fwd_head(model *m, fwd_ctx *c, const float *hn, int n, float *logits, float *hidden) {
    const hparams *hp = &m->hp;
    exec *x = c->x;
    fwd_work *w = &c->w;
    for (int r0 = 0; logits && r0 < n; r0 += w->out_rows) {
        const int k = n - r0 < w->out_rows ? n - r0 : w->out_rows;
        x->ops->matmul(x, &m->output, 0, hn + (int64_t)r0 * hp->n_embd, w->logits, k, (mm_rows){MM_OUT, r0});
        if (m->output_bias.data) x->ops->add_bias(x, w->logits, &m->output_bias, k, hp->n_vocab);
        /* the last rows' wait is the hidden rows' download below, when there is one */
        const bool start = x->ops->download_start && hidden && n && r0 + k >= n;
        (start ? x->ops->download_start : x->ops->download)(x, logits + (size_t)r0 * (size_t)hp->n_vocab, w->logits,
                                                            sizeof(float) * (size_t)k * (size_t)hp->n_vocab);
    }
    /* after the head (which leaves hn as it is): a pass's first download ends a recorded pass (CUDA graphs),
     * so the head belongs to it */
    if (hidden && n) x->ops->download(x, hidden, hn, sizeof(float) * (size_t)n * (size_t)hp->n_embd);
}

void fwd_output(model *m, fwd_ctx *c, const weight *norm, float *logits, float *hidden) {
    fwd_work *w = &c->w;
    exec *x = c->x;
    const int C = m->hp.n_embd;
    if (!w->n_out) return;
    x->ops->gather_rows(x, w->h, w->x, w->out_idx, w->n_out, C);
    if (!norm->data) { /* the trunk normed w.x itself (qwen4exp's final hyper-connection mixer) */
        fwd_head(m, c, w->h, w->n_out, logits, hidden);
        return;
    }
    x->ops->rms_norm(x, w->h, norm, w->y, w->n_out, C, m->hp.eps);
    fwd_head(m, c, w->y, w->n_out, logits, hidden);
}

int model_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans, float *logits, float *hidden, err *e) {
    kv_state *kv = c->kv;
    if (n_spans <= 0) return err_set(e, ERR_ARG, "empty batch");
    if (n_spans > c->w.max_spans)
        return err_set(e, ERR_RANGE, "a batch of %d sequences: the context was made for %d", n_spans, c->w.max_spans);
    int T = 0;
    for (int s = 0; s < n_spans; s++) {
        const fwd_span *sp = &spans[s];
        if (sp->seq < 0 || sp->seq >= kv->n_seq)
            return err_set(e, ERR_ARG, "sequence %d out of range (the context has %d)", sp->seq, kv->n_seq);
        if (sp->n <= 0) return err_set(e, ERR_ARG, "span %d of sequence %d is empty", s, sp->seq);
        for (int q = 0; q < s; q++)
            if (spans[q].seq == sp->seq) return err_set(e, ERR_ARG, "sequence %d appears twice in one batch", sp->seq);
        int past = kv->seqs[sp->seq].n_past;
        if (past + sp->n > kv->n_ctx)
            return err_set(e, ERR_RANGE, "sequence %d: %d cached + %d new tokens exceed the context size %d", sp->seq,
                           past, sp->n, kv->n_ctx);
        for (int i = 0; i < sp->n; i++)
            if (sp->tokens[i] < 0 || sp->tokens[i] >= m->hp.n_vocab)
                return err_set(e, ERR_RANGE, "token id %d at position %d is outside the vocabulary (0..%d)",
                               sp->tokens[i], past + i, m->hp.n_vocab - 1);
        T += sp->n;
    }
    if (T > c->w.max_tokens)
        return err_set(e, ERR_RANGE, "a pass of %d tokens: the context's batch size is %d", T, c->w.max_tokens);
    const unsigned fp = fpenv_enter(); /* subnormals flushed (base/fpenv.h) */
    fwd_begin(m, c, spans, n_spans, NULL);
    m->def->forward(m, c, spans, n_spans);
    fwd_output(m, c, &m->output_norm, logits, hidden);
    fpenv_leave(fp);
    int rc = exec_status(c->x, e);
    if (rc) {
        for (int s = 0; s < n_spans; s++) kv_reset(kv, spans[s].seq);
        err_wrap(e, "decode failed; the batch's sequences were reset");
        return rc;
    }
    for (int s = 0; s < n_spans; s++) kv->seqs[spans[s].seq].n_past += spans[s].n;
    return 0;
}
