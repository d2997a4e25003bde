#include "engine/kv.h"

#include <stdlib.h>

static int64_t conv_width(const hparams *hp) { return 2LL * hp->ssm_hk * hp->ssm_dk + (int64_t)hp->ssm_hv * hp->ssm_dv; }
static int64_t kv_floats(const hparams *hp, int n_ctx) { return (int64_t)n_ctx * hp->n_head_kv * hp->head_dim; }
static int64_t conv_floats(const hparams *hp) { return (int64_t)(hp->ssm_conv - 1) * conv_width(hp); }
static int64_t ssm_floats(const hparams *hp) { return (int64_t)hp->ssm_hv * hp->ssm_dk * hp->ssm_dv; }

uint64_t kv_bytes(const model *m, int n_seq, int n_ctx) {
    uint64_t per = 0;
    for (int il = 0; il < m->hp.n_block; il++)
        per += m->layers[il].is_gdn ? (uint64_t)(conv_floats(&m->hp) + ssm_floats(&m->hp))
                                    : 2ull * (uint64_t)kv_floats(&m->hp, n_ctx);
    return per * sizeof(float) * (uint64_t)n_seq;
}

int kv_new(kv_state **out, const model *m, int n_seq, int n_ctx, err *e) {
    *out = NULL;
    kv_state *kv = calloc(1, sizeof *kv);
    if (!kv) return err_set(e, ERR_NOMEM, "out of memory");
    kv->m = m;
    kv->n_seq = n_seq;
    kv->n_ctx = n_ctx;
    kv->seqs = calloc((size_t)n_seq, sizeof *kv->seqs);
    if (!kv->seqs) goto oom;
    backend *be = m->be;
    int nb = m->hp.n_block;
    for (int s = 0; s < n_seq; s++) {
        seq_cache *c = &kv->seqs[s];
        c->k = calloc((size_t)nb, sizeof(float *));
        c->v = calloc((size_t)nb, sizeof(float *));
        c->conv = calloc((size_t)nb, sizeof(float *));
        c->ssm = calloc((size_t)nb, sizeof(float *));
        if (!c->k || !c->v || !c->conv || !c->ssm) goto oom;
        for (int il = 0; il < nb; il++) {
            if (m->layers[il].is_gdn) {
                c->conv[il] = be->ops->alloc(be, conv_floats(&m->hp));
                c->ssm[il] = be->ops->alloc(be, ssm_floats(&m->hp));
                if (!c->conv[il] || !c->ssm[il]) goto oom;
            } else {
                c->k[il] = be->ops->alloc(be, kv_floats(&m->hp, n_ctx));
                c->v[il] = be->ops->alloc(be, kv_floats(&m->hp, n_ctx));
                if (!c->k[il] || !c->v[il]) goto oom;
            }
        }
    }
    *out = kv;
    return 0;
oom:
    err_set(e, ERR_NOMEM, "cannot allocate the KV cache and recurrent state: %.1f MiB for %d sequences of %d tokens",
            (double)kv_bytes(m, n_seq, n_ctx) / (1 << 20), n_seq, n_ctx);
    kv_free(kv);
    return ERR_NOMEM;
}

void kv_free(kv_state *kv) {
    if (!kv) return;
    backend *be = kv->m->be;
    for (int s = 0; kv->seqs && s < kv->n_seq; s++) {
        seq_cache *c = &kv->seqs[s];
        for (int il = 0; il < kv->m->hp.n_block; il++) {
            if (c->k) be->ops->free(be, c->k[il]);
            if (c->v) be->ops->free(be, c->v[il]);
            if (c->conv) be->ops->free(be, c->conv[il]);
            if (c->ssm) be->ops->free(be, c->ssm[il]);
        }
        free(c->k);
        free(c->v);
        free(c->conv);
        free(c->ssm);
    }
    free(kv->seqs);
    free(kv);
}

void kv_reset(kv_state *kv, int s) {
    seq_cache *c = &kv->seqs[s];
    backend *be = kv->m->be;
    c->n_past = 0;
    c->mtp_past = 0;
    for (int il = 0; il < kv->m->hp.n_block; il++) {
        if (c->conv[il]) be->ops->zero(be, c->conv[il], conv_floats(&kv->m->hp));
        if (c->ssm[il]) be->ops->zero(be, c->ssm[il], ssm_floats(&kv->m->hp));
    }
}

/* Recurrent state of one sequence, in floats: every GDN block's conv window and S matrix (0 for models
 * with attention blocks only, whose KV entries below n_past stay valid when n_past shrinks). */
int64_t kv_rec_floats(const kv_state *kv) {
    int64_t n = 0;
    for (int il = 0; il < kv->m->hp.n_block; il++)
        if (kv->m->layers[il].is_gdn) n += conv_floats(&kv->m->hp) + ssm_floats(&kv->m->hp);
    return n;
}

void kv_rec_save(const kv_state *kv, int s, void *buf) {
    const seq_cache *c = &kv->seqs[s];
    float *dst = buf;
    backend *be = kv->m->be;
    for (int il = 0; il < kv->m->hp.n_block; il++) {
        if (!c->conv[il]) continue;
        be->ops->download(be, dst, c->conv[il], conv_floats(&kv->m->hp));
        dst += conv_floats(&kv->m->hp);
        be->ops->download(be, dst, c->ssm[il], ssm_floats(&kv->m->hp));
        dst += ssm_floats(&kv->m->hp);
    }
}

void kv_rec_restore(kv_state *kv, int s, const void *buf) {
    seq_cache *c = &kv->seqs[s];
    const float *src = buf;
    backend *be = kv->m->be;
    for (int il = 0; il < kv->m->hp.n_block; il++) {
        if (!c->conv[il]) continue;
        be->ops->upload(be, c->conv[il], src, conv_floats(&kv->m->hp));
        src += conv_floats(&kv->m->hp);
        be->ops->upload(be, c->ssm[il], src, ssm_floats(&kv->m->hp));
        src += ssm_floats(&kv->m->hp);
    }
}
