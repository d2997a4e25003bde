/* kv: per-sequence state buffers as the architecture declares them (arch_def.block_state). */
#include "engine/kv.h"

#include <stdlib.h>

static size_t buf_bytes(const state_buf *sb) { return (size_t)sb->rows * qtype_row_bytes(sb->type, sb->width); }

/* Runs body for every state buffer of one sequence: block il, index i, declaration sb. */
#define FOR_EACH_BUF(m, plan, il, i, sb, body)                                                           \
    for (int il = 0; il < (m)->hp.n_block; il++) {                                                       \
        state_buf sbs_[STATE_MAX_BUFS];                                                                  \
        int nb_ = (m)->def->block_state((m), il, (plan), sbs_);                                          \
        for (int i = 0; i < nb_; i++) {                                                                  \
            const state_buf *sb = &sbs_[i];                                                              \
            body                                                                                         \
        }                                                                                                \
    }

uint64_t kv_bytes(const model *m, int n_seq, const state_plan *sp) {
    uint64_t per = 0;
    FOR_EACH_BUF(m, sp, il, i, sb, { per += buf_bytes(sb); (void)il; (void)i; })
    return per * (uint64_t)n_seq;
}

int kv_new(kv_state **out, const model *m, exec *x, int n_seq, const state_plan *sp, err *e) {
    *out = NULL;
    const enum qtype types[2] = {sp->type_k, sp->type_v};
    for (int i = 0; i < 2; i++)
        if (!backend_cache_type_ok(m->be, types[i], m->hp.head_dim))
            return err_set(e, ERR_UNSUPPORTED, "a %s cache of %s rows of %d values is not supported on %s (f32, f16, "
                           "bf16, q8_0 with a head dim that is a multiple of 32)", i ? "V" : "K",
                           qtype_get((uint32_t)types[i]) ? qtype_get((uint32_t)types[i])->name : "?", m->hp.head_dim,
                           m->be->name);
    kv_state *kv = calloc(1, sizeof *kv);
    if (!kv) return err_set(e, ERR_NOMEM, "out of memory");
    kv->m = m;
    kv->x = x;
    kv->n_seq = n_seq;
    kv->n_ctx = sp->n_ctx;
    kv->plan = *sp;
    kv->seqs = calloc((size_t)n_seq, sizeof *kv->seqs);
    if (!kv->seqs) goto oom;
    backend *be = m->be;
    for (int s = 0; s < n_seq; s++) {
        seq_cache *c = &kv->seqs[s];
        c->buf = calloc((size_t)m->hp.n_block * STATE_MAX_BUFS, sizeof(void *));
        if (!c->buf) goto oom;
        FOR_EACH_BUF(m, sp, il, i, sb, {
            if (!(c->buf[il * STATE_MAX_BUFS + i] = be->ops->alloc(be, buf_bytes(sb)))) goto oom;
        })
    }
    *out = kv;
    return 0;
oom:
    err_set(e, ERR_NOMEM, "cannot allocate the KV cache and recurrent state: %.1f MiB needed for %d sequences of %d "
            "tokens", (double)kv_bytes(m, n_seq, sp) / (1 << 20), n_seq, sp->n_ctx);
    kv_free(kv);
    return ERR_NOMEM;
}

void kv_free(kv_state *kv) {
    if (!kv) return;
    backend *be = kv->m->be;
    for (int s = 0; kv->seqs && s < kv->n_seq; s++) {
        seq_cache *c = &kv->seqs[s];
        for (int i = 0; c->buf && i < kv->m->hp.n_block * STATE_MAX_BUFS; i++)
            if (c->buf[i]) be->ops->free(be, c->buf[i]);
        free(c->buf);
    }
    free(kv->seqs);
    free(kv);
}

void kv_reset(kv_state *kv, int s) {
    seq_cache *c = &kv->seqs[s];
    c->n_past = 0;
    c->mtp_past = 0;
    FOR_EACH_BUF(kv->m, &kv->plan, il, i, sb, {
        if (sb->recurrent) kv->x->ops->zero(kv->x, c->buf[il * STATE_MAX_BUFS + i], sb->rows * sb->width);
    })
}

int64_t kv_rec_floats(const kv_state *kv) {
    int64_t n = 0;
    FOR_EACH_BUF(kv->m, &kv->plan, il, i, sb, { if (sb->recurrent) n += sb->rows * sb->width; (void)il; (void)i; })
    return n;
}

void kv_rec_save(const kv_state *kv, int s, void *buf) {
    const seq_cache *c = &kv->seqs[s];
    float *dst = buf;
    FOR_EACH_BUF(kv->m, &kv->plan, il, i, sb, {
        if (!sb->recurrent) continue;
        kv->x->ops->download(kv->x, dst, c->buf[il * STATE_MAX_BUFS + i], buf_bytes(sb));
        dst += sb->rows * sb->width;
    })
}

void kv_rec_restore(kv_state *kv, int s, const void *buf) {
    seq_cache *c = &kv->seqs[s];
    const float *src = buf;
    FOR_EACH_BUF(kv->m, &kv->plan, il, i, sb, {
        if (!sb->recurrent) continue;
        kv->x->ops->upload(kv->x, c->buf[il * STATE_MAX_BUFS + i], src, buf_bytes(sb));
        src += sb->rows * sb->width;
    })
}
