/* spec_draft: the three drafters of speculative decoding (engine/spec.h): n-gram lookup over the history,
 * a draft model's greedy continuation, the target's MTP block. Their proposals only decide how much work
 * a verification saves, never what is generated (spec.c keeps a draft only where the target agrees). */
#include <stdlib.h>
#include <string.h>

#include "base/fpenv.h"
#include "engine/api_impl.h"
#include "engine/spec.h"

static int argmax(const float *row, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (row[i] > row[best]) best = i;
    return best;
}

/* ---------------------------------------------------------------- n-gram lookup */

typedef struct ngram_drafter {
    spec_drafter base;
    int nmin, nmax;
} ngram_drafter;

/* The latest i < n - len with hist[i .. i+len) == the last len tokens; the continuation starts at i+len.
 * A linear scan from the end: the history is thousands of tokens, a decode step tens of milliseconds. */
static int ngram_find(const int32_t *hist, int n, int len) {
    const int32_t *key = hist + n - len;
    for (int i = n - len - 1; i >= 0; i--)
        if (hist[i] == key[0] && !memcmp(hist + i, key, sizeof(int32_t) * (size_t)len)) return i;
    return -1;
}

static int ngram_draft(spec_drafter *d, const int32_t *hist, int n, int k, int32_t *out, err *e) {
    (void)e;
    const ngram_drafter *g = (const ngram_drafter *)d;
    for (int len = g->nmax; len >= g->nmin; len--) {
        if (len >= n) continue;
        int i = ngram_find(hist, n, len);
        if (i < 0) continue;
        /* the continuation may run into the key itself (a repeating pattern): copy token by token from
         * the history extended by what was already proposed */
        int m = 0;
        for (int src = i + len; m < k; src++, m++) out[m] = src < n ? hist[src] : out[src - n];
        return m;
    }
    return 0;
}

static void no_kept(spec_drafter *d, int n_valid) { (void)d, (void)n_valid; }
static void plain_destroy(spec_drafter *d) { free(d); }

int spec_ngram_new(int ngram_min, int ngram_max, spec_drafter **out, err *e) {
    *out = NULL;
    if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > 64)
        return err_set(e, ERR_ARG, "n-gram lengths must satisfy 1 <= min <= max <= 64 (got %d..%d)", ngram_min, ngram_max);
    ngram_drafter *g = calloc(1, sizeof *g);
    if (!g) return err_set(e, ERR_NOMEM, "out of memory");
    g->base = (spec_drafter){"ngram", false, ngram_draft, no_kept, NULL, plain_destroy, NULL};
    g->nmin = ngram_min, g->nmax = ngram_max;
    *out = &g->base;
    return 0;
}

/* ---------------------------------------------------------------- draft model */

/* After speculation was off for a while the draft's cache lags far behind; instead of decoding the whole
 * gap it restarts on the last DRAFT_WINDOW tokens (at positions from 0: a draft needs recent context,
 * not exact positions), so a probe costs a bounded prefill of the small model. */
#define DRAFT_CATCHUP_MAX 16
#define DRAFT_WINDOW 16

typedef struct model_drafter {
    spec_drafter base;
    llm170_context *ctx; /* owned: one sequence on the draft model */
    int n_ctx;
    int h0, dn;          /* the draft's cache holds hist[h0 .. dn) */
} model_drafter;

/* window: a long gap restarts on the last DRAFT_WINDOW tokens (not for a prompt, decoded whole) */
static int model_catch_up(model_drafter *md, const int32_t *hist, int n, bool window, err *e) {
    if (window && n - md->dn > DRAFT_CATCHUP_MAX && md->dn > 0) {
        llm170_seq_reset(md->ctx, 0);
        md->h0 = md->dn = n - DRAFT_WINDOW;
    }
    if (n == md->dn) return 0;
    llm170_seq_batch b = {0, n - md->dn, hist + md->dn, false};
    int rc = llm170_decode(md->ctx, &b, 1);
    if (rc) return err_set(e, rc, "draft model: %s", llm170_last_error());
    md->dn = n;
    return 0;
}

static int model_draft(spec_drafter *d, const int32_t *hist, int n, int k, int32_t *out, err *e) {
    model_drafter *md = (model_drafter *)d;
    if (n - md->h0 + k > md->n_ctx) k = md->n_ctx - (n - md->h0);
    if (k <= 0) return 0;
    const int V = md->ctx->model->m->hp.n_vocab;
    /* catch up with the history (the pending token at least), then one token at a time */
    if (model_catch_up(md, hist, n, true, e)) return e->code;
    for (int m = 0;; m++) {
        out[m] = argmax(llm170_logits(md->ctx, 0), V);
        if (m + 1 == k) return k;
        llm170_seq_batch b = {0, 1, &out[m], false};
        int rc = llm170_decode(md->ctx, &b, 1);
        if (rc) return err_set(e, rc, "draft model: %s", llm170_last_error());
        md->dn++;
    }
}

static int model_prefill(spec_drafter *d, const int32_t *hist, int n, err *e) {
    return model_catch_up((model_drafter *)d, hist, n, false, e);
}

static void model_kept(spec_drafter *d, int n_valid) {
    model_drafter *md = (model_drafter *)d;
    if (md->dn <= n_valid) return;
    /* a KV-only model (checked at creation): truncation cannot fail */
    if (n_valid <= md->h0) {
        llm170_seq_reset(md->ctx, 0);
        md->h0 = md->dn = 0;
    } else {
        llm170_seq_truncate(md->ctx, 0, n_valid - md->h0);
        md->dn = n_valid;
    }
}

static void model_destroy(spec_drafter *d) {
    llm170_context_free(((model_drafter *)d)->ctx);
    free(d);
}

/* Same logit rows and the same text for every token: a draft token id must mean the target's token. */
static int check_vocab(const llm170_model *draft, const llm170_model *target, err *e) {
    const int vd = draft->m->hp.n_vocab, vt = target->m->hp.n_vocab;
    if (vd != vt)
        return err_set(e, ERR_ARG, "the draft model's vocabulary has %d tokens, the target's %d: a draft model must "
                       "share the target's vocabulary (e.g. a smaller model of the same family)", vd, vt);
    if (!draft->tok || !target->tok) return 0; /* token-id models (synth files without a tokenizer) */
    if (tok_n_tokens(draft->tok) != tok_n_tokens(target->tok))
        return err_set(e, ERR_ARG, "the draft model's tokenizer has %u tokens, the target's %u",
                       tok_n_tokens(draft->tok), tok_n_tokens(target->tok));
    for (uint32_t id = 0; id < tok_n_tokens(target->tok); id++) {
        size_t la, lb;
        const char *a = tok_token_text(draft->tok, (int32_t)id, &la), *b = tok_token_text(target->tok, (int32_t)id, &lb);
        if (la != lb || memcmp(a, b, la))
            return err_set(e, ERR_ARG, "vocabulary mismatch at token %u: the draft model has '%.*s', the target "
                           "'%.*s'", id, (int)(la < 40 ? la : 40), a, (int)(lb < 40 ? lb : 40), b);
    }
    return 0;
}

int spec_draft_model_new(llm170_model *draft, const llm170_model *target, int n_ctx, int n_batch,
                         spec_drafter **out, err *e) {
    *out = NULL;
    if (!draft) return err_set(e, ERR_ARG, "--spec draft needs a draft model (--model-draft FILE)");
    if (check_vocab(draft, target, e)) return e->code;
    model_drafter *md = calloc(1, sizeof *md);
    if (!md) return err_set(e, ERR_NOMEM, "out of memory");
    llm170_context_params cp = llm170_context_default_params();
    cp.n_ctx = n_ctx, cp.n_batch = n_batch;
    int rc = llm170_context_new(draft, &cp, &md->ctx);
    if (rc) {
        err_set(e, rc, "draft model context: %s", llm170_last_error());
        free(md);
        return e->code;
    }
    if (kv_rec_floats(md->ctx->kv) > 0) {
        model_destroy(&md->base);
        return err_set(e, ERR_UNSUPPORTED, "a draft model with recurrent state (%s) is not supported: its rejected "
                       "drafts could not be rolled back; use a KV-only model (llama, qwen2, qwen3, gemma3)",
                       model_arch_name(draft->m->arch));
    }
    md->base = (spec_drafter){"draft", false, model_draft, model_kept, NULL, model_destroy, model_prefill};
    md->n_ctx = n_ctx;
    *out = &md->base;
    return 0;
}

/* ---------------------------------------------------------------- MTP */

/* The MTP block's row p reads (h_p, x_{p+1}): the target's hidden state at p and the token after it, and
 * predicts x_{p+2}. Rows 0 .. fed-1 are in the block's cache (mtp_past == fed); hidden rows of later
 * positions wait in hbuf until their next token is known, which is at the next draft. */
typedef struct mtp_drafter {
    spec_drafter base;
    llm170_context *c;
    int seq, C, V, max_rows;
    int fed;            /* MTP rows of the sequence in the block's cache */
    int h0, nh, cap_h;  /* hbuf holds hidden rows of positions h0 .. h0+nh-1 */
    float *hbuf;        /* [cap_h][C] */
    float *logits;      /* [V]: the last row's of a run */
    float *hout;        /* [C]: the last row's normed output, the next chained row's hidden */
    int32_t *next;      /* [max_rows] */
} mtp_drafter;

/* n rows through the block; logits and hout of the last row only (rows 0 of t->logits, t->hout) */
static int mtp_run(mtp_drafter *t, const float *hidden, const int32_t *next, int n, err *e) {
    model *m = t->c->model->m;
    const unsigned fp = fpenv_enter();
    const int rc = m->def->mtp(m, &t->c->fc, t->seq, hidden, next, n, true, t->logits, t->hout, e);
    fpenv_leave(fp);
    return rc;
}

static int mtp_draft(spec_drafter *d, const int32_t *hist, int n, int k, int32_t *out, err *e) {
    mtp_drafter *t = (mtp_drafter *)d;
    seq_cache *sc = &t->c->kv->seqs[t->seq];
    /* rows fed .. n-2 are real: their hidden rows are in hbuf, their next tokens in hist */
    if (t->h0 != t->fed || t->h0 + t->nh != n - 1) return 0; /* out of step (a reset): no draft */
    if (n - 1 + k > t->c->kv->n_ctx) k = t->c->kv->n_ctx - (n - 1);
    if (k <= 0) return 0;
    sc->mtp_past = t->fed;
    for (int r0 = 0; r0 < t->nh;) {
        int m = t->nh - r0 < t->max_rows ? t->nh - r0 : t->max_rows;
        for (int i = 0; i < m; i++) t->next[i] = hist[t->h0 + r0 + i + 1];
        if (mtp_run(t, t->hbuf + (int64_t)r0 * t->C, t->next, m, e)) return e->code;
        r0 += m;
        if (r0 == t->nh) out[0] = argmax(t->logits, t->V); /* the last real row predicts the first draft */
    }
    t->fed = n - 1, t->h0 = n - 1, t->nh = 0;
    /* chain: the block's own output stands in for the trunk's hidden state of the drafted position */
    for (int i = 1; i < k; i++) {
        if (mtp_run(t, t->hout, &out[i - 1], 1, e)) return e->code;
        out[i] = argmax(t->logits, t->V);
    }
    sc->mtp_past = t->fed; /* the chained rows were speculative */
    return k;
}

static void mtp_kept(spec_drafter *d, int n_valid) {
    mtp_drafter *t = (mtp_drafter *)d;
    if (n_valid == 0) t->fed = 0, t->h0 = 0, t->nh = 0;
    if (t->h0 + t->nh > n_valid) t->nh = n_valid > t->h0 ? n_valid - t->h0 : 0;
}

static int mtp_observe(spec_drafter *d, int pos, const float *hidden, int n, err *e) {
    mtp_drafter *t = (mtp_drafter *)d;
    if (pos != t->h0 + t->nh) return err_set(e, ERR_ARG, "MTP drafter: hidden rows of position %d after %d", pos, t->h0 + t->nh);
    if (t->nh + n > t->cap_h) {
        int cap = (t->nh + n) * 2;
        float *h = realloc(t->hbuf, sizeof(float) * (size_t)cap * (size_t)t->C);
        if (!h) return err_set(e, ERR_NOMEM, "out of memory");
        t->hbuf = h, t->cap_h = cap;
    }
    memcpy(t->hbuf + (int64_t)t->nh * t->C, hidden, sizeof(float) * (size_t)n * (size_t)t->C);
    t->nh += n;
    return 0;
}

static void mtp_destroy(spec_drafter *d) {
    mtp_drafter *t = (mtp_drafter *)d;
    free(t->hbuf);
    free(t->logits);
    free(t->hout);
    free(t->next);
    free(t);
}

int spec_mtp_new(llm170_context *c, int seq, spec_drafter **out, err *e) {
    *out = NULL;
    const model *m = c->model->m;
    if (!m->def->mtp || m->hp.n_nextn < 1)
        return err_set(e, ERR_UNSUPPORTED, "--spec mtp: this %s model has no MTP block (nextn_predict_layers = 0); use "
                       "--spec ngram or --spec draft", model_arch_name(m->arch));
    mtp_drafter *t = calloc(1, sizeof *t);
    if (!t) return err_set(e, ERR_NOMEM, "out of memory");
    t->base = (spec_drafter){"mtp", true, mtp_draft, mtp_kept, mtp_observe, mtp_destroy, NULL};
    t->c = c, t->seq = seq, t->C = m->hp.n_embd, t->V = m->hp.n_vocab;
    t->max_rows = c->p.n_batch < 64 ? c->p.n_batch : 64;
    t->logits = malloc(sizeof(float) * (size_t)t->V);
    t->hout = malloc(sizeof(float) * (size_t)t->C);
    t->next = malloc(sizeof(int32_t) * (size_t)t->max_rows);
    if (!t->logits || !t->hout || !t->next) {
        mtp_destroy(&t->base);
        return err_set(e, ERR_NOMEM, "out of memory");
    }
    *out = &t->base;
    return 0;
}
