/* srv sched token: a generating slot's tokens after a step (sched_impl.h): each picked from its logits row as
 * without speculation (the sampler's draw; constrained jobs through the JSON automaton and its mask),
 * emitted through the detokenizer and the stop-string holdback, checked against max_tokens, the context and
 * end-of-generation; a speculating slot goes on to the next row while its pick equals the next draft. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/sched_impl.h"

/* The log-softmax of the sampled token and the n most likely tokens, from the raw logits. */
static void fill_logprobs(const float *l, int n_vocab, int32_t tok, int n, srv_lp *out) {
    float mx = l[0];
    for (int v = 1; v < n_vocab; v++) mx = l[v] > mx ? l[v] : mx;
    double sum = 0;
    for (int v = 0; v < n_vocab; v++) sum += exp((double)(l[v] - mx));
    /* sum >= 1 (the largest logit contributes exp(0)); the clamp only spells that out */
    float lse = mx + (float)log(sum < 1 ? 1 : sum);
    out->token = tok;
    out->logprob = l[tok] - lse;
    out->n_top = 0;
    for (int v = 0; v < n_vocab && n > 0; v++) {
        int k = out->n_top;
        if (k == n && l[v] <= l[out->top_tok[k - 1]]) continue;
        if (k < n) out->n_top++;
        else k--;
        while (k > 0 && l[out->top_tok[k - 1]] < l[v]) {
            out->top_tok[k] = out->top_tok[k - 1];
            k--;
        }
        out->top_tok[k] = v;
    }
    for (int k = 0; k < out->n_top; k++) out->top_lp[k] = l[out->top_tok[k]] - lse;
}

/* Adds detokenized bytes to the slot's text and emits what no stop string can claim. Returns 1 if a stop
 * string ended the job. */
static int slot_text(srv_sched *s, int i, const char *bytes, size_t n, const srv_lp *lp, int n_gen, bool final) {
    slot *sl = &s->slots[i];
    srv_job *j = sl->job;
    if (sl->gen_len + n + 1 > sl->gen_cap) {
        size_t cap = (sl->gen_len + n + 1) * 2;
        char *t = realloc(sl->gen, cap);
        if (!t) return 0;
        sl->gen = t, sl->gen_cap = cap;
    }
    if (n) memcpy(sl->gen + sl->gen_len, bytes, n);
    sl->gen_len += n;
    int hit;
    size_t safe = srv_stop_scan(sl->gen, sl->gen_len, sl->emitted, j->g.stop, j->g.n_stop, &hit);
    if (final && hit < 0) safe = sl->gen_len;
    srv_job_emit(j, sl->gen + sl->emitted, safe - sl->emitted, lp, n_gen);
    sl->emitted = safe;
    if (hit >= 0) {
        srv_slot_end(s, i, SRV_FIN_STOP, hit, NULL);
        return 1;
    }
    return 0;
}

/* A constrained job's next token: the usual draw if the automaton takes it, else a draw from the masked
 * logits. budget: tokens that may still be generated, this one included. -1: no token can continue. */
static int32_t pick_constrained(srv_sched *s, slot *sl, const float *l, int budget) {
    int32_t tok = llm170_sample(sl->smp, l);
    bool ok = srv_jc_token_ok(&sl->jc, s->vocab, budget, tok);
    pthread_mutex_lock(&s->mt->mu);
    s->mt->jc_tokens++;
    s->mt->jc_masks += !ok;
    pthread_mutex_unlock(&s->mt->mu);
    if (ok) return tok;
    if (srv_jc_mask(&sl->jc, s->vocab, budget, sl->allowed) == 0) return -1;
    for (int v = 0; v < s->n_vocab; v++) sl->masked[v] = sl->allowed[v] ? l[v] : -INFINITY;
    tok = llm170_sample(sl->smp, sl->masked);
    if (tok >= 0 && tok < s->n_vocab && sl->allowed[tok]) return tok;
    int best = -1; /* a sampler that ignored the mask (it never should): the most likely allowed token */
    for (int v = 0; v < s->n_vocab; v++)
        if (sl->allowed[v] && (best < 0 || l[v] > l[best])) best = v;
    return best;
}

/* Picks slot i's token at position pos from logits row `row`, emits it and decides whether the job goes
 * on (else the slot is ended: sl->job is NULL). Returns the token, or -1 if none could be picked (the job
 * failed and the slot's sequence was reset). */
static int32_t slot_generate(srv_sched *s, int i, int row, int pos) {
    slot *sl = &s->slots[i];
    srv_job *j = sl->job;
    const float *l = llm170_logits(s->ctx, row);
    int n_gen;
    pthread_mutex_lock(&j->mu);
    n_gen = j->n_gen;
    pthread_mutex_unlock(&j->mu);
    int32_t tok;
    if (j->g.schema) {
        int by_len = j->g.max_tokens - n_gen, by_ctx = s->p.n_ctx - pos + 1;
        tok = pick_constrained(s, sl, l, by_len < by_ctx ? by_len : by_ctx);
        if (tok < 0) {
            srv_slot_end(s, i, SRV_FIN_ERROR, -1, "no token of the vocabulary can continue the JSON");
            return -1;
        }
        srv_jc_feed(&sl->jc, s->vocab->blob + s->vocab->off[tok], s->vocab->len[tok]);
    } else {
        tok = llm170_sample(sl->smp, l);
    }
    llm170_sampler_accept(sl->smp, tok);
    if (!sl->first_token_seen) {
        sl->first_token_seen = true;
        srv_metrics_ttft(s->mt, srv_now() - j->t_submit);
    }
    pthread_mutex_lock(&s->mt->mu);
    s->mt->gen_tokens++;
    pthread_mutex_unlock(&s->mt->mu);
    const char *out;
    size_t n = 0;
    if (!j->g.ignore_eos && llm170_token_is_eog(s->m, tok)) {
        llm170_detok_flush(sl->detok, &out, &n);
        if (!slot_text(s, i, out, n, NULL, n_gen, true)) srv_slot_end(s, i, SRV_FIN_EOG, -1, NULL);
        return tok;
    }
    n_gen++;
    srv_lp lp;
    if (j->g.n_probs >= 0) fill_logprobs(l, s->n_vocab, tok, j->g.n_probs, &lp);
    if (llm170_detok_push(sl->detok, tok, &out, &n)) n = 0;
    bool at_end = n_gen >= j->g.max_tokens || pos + 1 > s->p.n_ctx;
    if (at_end) {
        /* the last token's bytes, then whatever the detokenizer still holds */
        if (slot_text(s, i, out, n, j->g.n_probs >= 0 ? &lp : NULL, n_gen, false)) return tok;
        llm170_detok_flush(sl->detok, &out, &n);
        bool closed = j->g.schema && srv_jc_done(&sl->jc); /* the JSON closed on the last token: a whole reply */
        if (!slot_text(s, i, out, n, NULL, n_gen, true)) srv_slot_end(s, i, closed ? SRV_FIN_EOG : SRV_FIN_LENGTH, -1, NULL);
        return tok;
    }
    if (slot_text(s, i, out, n, j->g.n_probs >= 0 ? &lp : NULL, n_gen, false)) return tok;
    if (j->g.schema && srv_jc_done(&sl->jc)) { /* the JSON value is closed: the reply is complete */
        llm170_detok_flush(sl->detok, &out, &n);
        if (!slot_text(s, i, out, n, NULL, n_gen, true)) srv_slot_end(s, i, SRV_FIN_EOG, -1, NULL);
    }
    return tok;
}

void srv_slot_round(srv_sched *s, int i, double seconds) {
    slot *sl = &s->slots[i];
    const int owed = sl->n_span - sl->n_draft;
    const int pos = sl->base_len + owed; /* the position of the token the pending token's row predicts */
    int32_t picked[LLM170_SPEC_MAX_SPAN];
    int n = 0;
    /* row by row while the pick equals the next draft and the job goes on: exactly the tokens plain
     * decoding gives, each drawn as it would be there */
    for (;;) {
        int32_t tok = slot_generate(s, i, sl->row + n, pos + n);
        if (tok < 0) return; /* the job failed, its sequence was reset: no round to commit */
        picked[n++] = tok;
        if (!sl->job || n > sl->n_draft || tok != sl->span[owed + n - 1]) break;
    }
    sl->pending = picked[n - 1];
    if (!sl->spec) return;
    /* the generator cuts the sequence back to what it keeps (a recurrent model: to its checkpoint, the kept
     * tokens then owed to the next span); the slot's token list follows */
    if (llm170_spec_commit(sl->spec, picked, n, seconds)) {
        char msg[256];
        snprintf(msg, sizeof msg, "speculative decoding: %s", llm170_last_error());
        if (sl->job) srv_slot_end(s, i, SRV_FIN_ERROR, -1, msg);
        else llm170_seq_reset(s->ctx, i), sl->n_cache = 0, sl->ckpt_pos = -1;
        return;
    }
    sl->n_cache = llm170_seq_len(s->ctx, i);
    if (sl->n_draft > 0) {
        pthread_mutex_lock(&s->mt->mu);
        s->mt->spec_rounds++;
        s->mt->spec_drafted += (uint64_t)sl->n_draft;
        s->mt->spec_accepted += (uint64_t)(n - 1);
        pthread_mutex_unlock(&s->mt->mu);
    }
}
