/* spec: speculative decoding behind include/llm170.h (llm170_spec_*): the round (propose, verify, commit),
 * its rollback and its choice of k. The drafters are in spec_draft.c.
 *
 * The history hist[0..n_hist) is every token of the generation; the sequence holds its first
 * llm170_seq_len tokens and owes the rest: always the pending token (sampled, not yet decoded), and after
 * a rollback on a recurrent model also the kept tokens that must be decoded again. One round:
 *   1. propose: the drafter proposes d1..dk after the history (only when just the pending token is owed);
 *      the span to decode is [owed tokens, d1..dk];
 *   2. the target decodes the span in one pass, logits for every row (the row of the pending token and
 *      every later one: row i predicts the token after span[i]);
 *   3. from the pending token's row on: x = the sampler's pick; emit x; go on while x == the next draft.
 *      The first disagreement x (or the bonus token after dk) is the new pending token;
 *   4. commit: the caches keep the owed tokens and the accepted drafts: KV caches are cut
 *      (llm170_seq_truncate); models with recurrent state (GDN) restore the checkpoint taken before the
 *      pass, so the kept tokens are owed again and decoded once more (honest first version: this re-runs
 *      the accepted prefix; the CPU's GDN runs a short span token by token, so the state is bit-exact to
 *      decoding them one at a time). llm170_spec_next decodes them at once; a caller that drives the
 *      rounds itself (llm170 serve) lets them ride in the sequence's next span, which then has no drafts.
 * llm170_spec_next runs 1-4 with its own passes; llm170_spec_propose / _commit are 1 and 4 for a caller that
 * batches many sequences in one llm170_decode and picks tokens with its own sampling (constraints, stops).
 * The sampler sees exactly the tokens plain decoding gives it, one draw per emitted token, and the
 * target's verify rows are bit-identical to one-token passes on the CPU (backends/cpu: spans under
 * BULK_MIN_ROWS take the row-by-row kernels, and an attention score does not depend on how many keys its
 * block holds: cpu_blas.h dots), so the output equals plain decoding for any sampler
 * (scripts/diag/span_vs_steps.c checks it on a real file).
 *
 * k: the chance a be that a draft token is kept (decayed counts, prior 1/2); a round of k drafts yields
 * (1 - a^(k+1)) / (1 - a) tokens for cost(k) = verify(k+1) + k * draft + rollback, all measured here
 * (moving averages; unmeasured span costs are guessed optimistically so they get tried). The best k
 * must beat one plain step per token, else speculation is off and re-probed (k = draft-min) after 16, 64,
 * 256, 512 plain steps, or later when a failed probe costs more: a probe's excess over plain decoding (its
 * drafting, a draft model's catch-up, the pass, less the tokens it gave at a plain step's price) is spread
 * over enough plain steps that a failed probe costs at most SPEC_PROBE_SHARE of plain decoding, less as the
 * back-off grows: a failed n-gram probe (half a step) waits ~50 steps, one of a 0.5B draft model that catches
 * up on 16 tokens before drafting for the 1.5B (~2 steps) ~200, where 16 then 64 cost it 2-7% of a
 * random-token stream (docs/benchmarks.md, "never slower"). A generation starts with a plain step (the unit
 * of cost) and a probe. A caller that batches may price the rounds itself (llm170_spec_propose's costs: what
 * k drafts add to a step that many sequences share); drafting and rollback times are still this generator's
 * measurements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/timer.h"
#include "engine/api_impl.h"
#include "engine/spec.h"

#define SPEC_MAX_DRAFT 32
#define SPEC_MAX_SPAN LLM170_SPEC_MAX_SPAN /* owed tokens + drafts of one round */
#define SPEC_EMA 0.25       /* weight of a new time measurement */
#define SPEC_DECAY 0.9      /* per round, on the acceptance counts */
#define SPEC_PROBE_MIN 16
#define SPEC_PROBE_MAX 512
#define SPEC_PROBE_SHARE 0.01 /* of plain decoding time, spent at most on failed probes */
#define SPEC_PROBE_GAP_MAX 4096
#define SPEC_PROMPT_PIECE 64 /* prompt rows per pass when the drafter reads hidden rows (all logits) */

_Static_assert(SPEC_MAX_SPAN == SPEC_MAX_DRAFT + 1, "a round's span: the pending token and the drafts, or the "
               "tokens a rollback left owed (at most the pending token and draft-max accepted drafts)");

struct llm170_spec {
    llm170_context *c;
    int seq;
    llm170_spec_params p;
    spec_drafter *d;       /* NULL for LLM170_SPEC_NONE */
    int32_t *hist;         /* the generation's tokens: those in the sequence, then the owed ones */
    int n_hist, cap_hist;
    float *row;            /* after llm170_spec_prompt: the logits of its last token */
    bool recurrent;
    void *ckpt;            /* recurrent models: the state before a verification */
    size_t ckpt_size;
    float *hid;            /* [SPEC_MAX_SPAN][n_embd]: kept hidden rows of a pass */
    /* the round in flight: proposed, not yet committed */
    bool in_round;
    int base;              /* the sequence's length at the proposal (the checkpoint's) */
    int n_span, nd;        /* span: the owed tokens then nd drafts */
    int32_t span[SPEC_MAX_SPAN];
    double t_ckpt;         /* seconds the checkpoint took (part of the round's cost) */
    double ext[SPEC_MAX_DRAFT + 1]; /* the caller's round costs (llm170_spec_propose), ext[0..n_ext) */
    int n_ext;             /* 0: the generator's own pass measurements */
    /* the cost model */
    double t_span[SPEC_MAX_SPAN + 1]; /* seconds of a pass of T tokens (0: not measured) */
    double t_draft_tok, t_rollback;
    double t_round_draft;  /* seconds the round in flight spent drafting */
    double probe_excess;   /* a failed probe's cost over plain decoding, seconds (moving average) */
    double acc_hit, acc_try;
    int off_left, probe_every;
    bool off;
    llm170_spec_stats st;
};

llm170_spec_params llm170_spec_default_params(void) {
    return (llm170_spec_params){.type = LLM170_SPEC_NONE, .draft_max = 8, .draft_min = 1, .ngram_min = 2,
                                .ngram_max = 4, .adaptive = true, .draft_model = NULL};
}

static const char *const spec_names[] = {"none", "ngram", "draft", "mtp"};

int llm170_spec_type_from_name(const char *name) {
    for (int i = 0; i < (int)(sizeof spec_names / sizeof spec_names[0]); i++)
        if (!strcmp(name, spec_names[i])) return i;
    err e;
    err_set(&e, ERR_ARG, "speculative decoding type '%s' is not one of none, ngram, draft, mtp", name);
    api_fail(&e);
    return -1;
}

void llm170_spec_free(llm170_spec *s) {
    if (!s) return;
    if (s->d) s->d->destroy(s->d);
    free(s->hist);
    free(s->row);
    free(s->ckpt);
    free(s->hid);
    free(s);
}

int llm170_spec_new(llm170_context *c, int seq, const llm170_spec_params *params, llm170_spec **out) {
    err e = {0};
    *out = NULL;
    llm170_spec_params p = params ? *params : llm170_spec_default_params();
    if (seq < 0 || seq >= c->p.n_seq) {
        err_set(&e, ERR_ARG, "sequence %d is outside 0..%d", seq, c->p.n_seq - 1);
        return api_fail(&e);
    }
    if (p.type < LLM170_SPEC_NONE || p.type > LLM170_SPEC_MTP || p.draft_max < 1 || p.draft_max > SPEC_MAX_DRAFT ||
        p.draft_min < 1 || p.draft_min > p.draft_max) {
        err_set(&e, ERR_ARG, "speculative decoding: type %d, draft-min %d, draft-max %d: need a type of enum "
                "llm170_spec_type and 1 <= draft-min <= draft-max <= %d", p.type, p.draft_min, p.draft_max,
                SPEC_MAX_DRAFT);
        return api_fail(&e);
    }
    llm170_spec *s = calloc(1, sizeof *s);
    if (!s) return api_fail(&(err){ERR_NOMEM, "out of memory"});
    s->c = c, s->seq = seq, s->p = p;
    const hparams *hp = &c->model->m->hp;
    int rc = 0;
    if (p.type == LLM170_SPEC_NGRAM) rc = spec_ngram_new(p.ngram_min, p.ngram_max, &s->d, &e);
    else if (p.type == LLM170_SPEC_DRAFT) rc = spec_draft_model_new(p.draft_model, c->model, c->p.n_ctx, c->p.n_batch, &s->d, &e);
    else if (p.type == LLM170_SPEC_MTP) rc = spec_mtp_new(c, seq, &s->d, &e);
    s->recurrent = kv_rec_floats(c->kv) > 0;
    s->ckpt_size = llm170_seq_state_size(c);
    if (!rc && (!(s->row = malloc(sizeof(float) * (size_t)hp->n_vocab)) || !(s->ckpt = malloc(s->ckpt_size)) ||
                !(s->hid = malloc(sizeof(float) * SPEC_MAX_SPAN * (size_t)hp->n_embd))))
        rc = err_set(&e, ERR_NOMEM, "out of memory");
    if (rc) {
        llm170_spec_free(s);
        return api_fail(&e);
    }
    *out = s;
    return 0;
}

static int push_hist(llm170_spec *s, const int32_t *t, int n, err *e) {
    if (s->n_hist + n > s->cap_hist) {
        int cap = (s->n_hist + n) * 2;
        int32_t *h = realloc(s->hist, sizeof(int32_t) * (size_t)cap);
        if (!h) return err_set(e, ERR_NOMEM, "out of memory");
        s->hist = h, s->cap_hist = cap;
    }
    memcpy(s->hist + s->n_hist, t, sizeof(int32_t) * (size_t)n);
    s->n_hist += n;
    return 0;
}

/* Decodes tokens into the sequence; rows: all logits (and hidden rows) or the last only. */
static int target_decode(llm170_spec *s, const int32_t *t, int n, bool all, err *e) {
    llm170_seq_batch b = {s->seq, n, t, all};
    int rc_;
    if ((rc_ = llm170_decode(s->c, &b, 1))) return err_set(e, rc_, "%s", llm170_last_error());
    return 0;
}

/* A generation's start, whoever decodes its prompt: the history becomes prompt[0..n); the drafter keeps
 * its first `valid` tokens. Measured costs and acceptance carry over (same model, same machine); the first
 * round is a probe again (new text may repeat itself where the last did not). */
static int start(llm170_spec *s, const int32_t *prompt, int n, int valid, err *e) {
    s->n_hist = 0;
    s->in_round = false;
    if (s->d) s->d->kept(s->d, valid);
    s->off = true, s->off_left = 1, s->probe_every = SPEC_PROBE_MIN;
    return push_hist(s, prompt, n, e);
}

int llm170_spec_prompt(llm170_spec *s, const int32_t *prompt, int n) {
    err e = {0};
    if (n < 1) {
        err_set(&e, ERR_ARG, "an empty prompt: speculative decoding needs at least one token");
        return api_fail(&e);
    }
    /* reuse what the sequence still holds of this generator's last generation (hist[0..held)), except for
     * a drafter that reads hidden rows (it needs every position's); at least the last token is decoded */
    const bool hid = s->d && s->d->wants_hidden;
    const int held = llm170_seq_len(s->c, s->seq);
    int same = 0;
    if (!hid && held <= s->n_hist)
        while (same < held && same < n - 1 && s->hist[same] == prompt[same]) same++;
    if (same < held && (s->recurrent || same == 0 || llm170_seq_truncate(s->c, s->seq, same))) {
        llm170_seq_reset(s->c, s->seq);
        same = 0;
    }
    if (start(s, prompt, n, same, &e)) return api_fail(&e);
    const int V = s->c->model->m->hp.n_vocab;
    /* a drafter that reads hidden rows gets every position's: pieces with all rows */
    const int piece = hid ? SPEC_PROMPT_PIECE : n - same;
    for (int i = same; i < n; i += piece) {
        const int m = n - i < piece ? n - i : piece;
        if (target_decode(s, prompt + i, m, hid, &e)) return api_fail(&e);
        if (hid && s->d->observe(s->d, i, llm170_hidden(s->c, 0), m, &e)) return api_fail(&e);
        if (i + m == n) memcpy(s->row, llm170_logits(s->c, hid ? m - 1 : 0), sizeof(float) * (size_t)V);
    }
    if (s->d && s->d->prefill && s->d->prefill(s->d, prompt, n, &e)) return api_fail(&e);
    return 0;
}

int llm170_spec_begin(llm170_spec *s, const int32_t *prompt, int n) {
    err e = {0};
    const int held = llm170_seq_len(s->c, s->seq);
    if (n < 1 || held >= n) {
        err_set(&e, ERR_ARG, "llm170_spec_begin: a prompt of %d tokens on a sequence holding %d: the sequence must hold "
                "fewer tokens than the prompt (the caller decodes the rest, at least the last one in the first round)",
                n, held);
        return api_fail(&e);
    }
    if (s->d && s->d->wants_hidden) {
        err_set(&e, ERR_UNSUPPORTED, "the %s drafter reads the target's hidden state at every position, prompt "
                "included, which a caller's own passes do not give it: use llm170_spec_prompt / llm170_spec_next, "
                "or another drafter", s->d->name);
        return api_fail(&e);
    }
    /* the drafter's own state (a draft model's cache) is good for what the old history shares with prompt */
    int same = 0;
    while (same < s->n_hist && same < n && s->hist[same] == prompt[same]) same++;
    if (start(s, prompt, n, same, &e)) return api_fail(&e);
    return 0;
}

/* A pass of T tokens, measured or guessed from the longest measured shorter span: +10% of it per extra
 * token (optimistic, so such spans get tried, then measured). span_cost(1) is always measured. */
static double span_cost(const llm170_spec *s, int T) {
    if (s->t_span[T] > 0) return s->t_span[T];
    int m = T - 1;
    while (s->t_span[m] <= 0) m--;
    return s->t_span[m] * (1.0 + 0.1 * (T - m));
}

/* One plain step's cost: its measurement, or any longer pass measured cheaper (a pass of T tokens costs at
 * least one of a single token). Plain steps stop while speculation is on, so their single measurement could
 * otherwise keep an outlier (a first step slowed by a preemption) for good and speculation with it. */
static double plain_cost(const llm170_spec *s) {
    double c = s->t_span[1];
    for (int T = 2; T <= SPEC_MAX_SPAN; T++)
        if (s->t_span[T] > 0 && s->t_span[T] < c) c = s->t_span[T];
    return c;
}

static void ema(double *v, double x) { *v = *v > 0 ? (1 - SPEC_EMA) * *v + SPEC_EMA * x : x; }

/* A round with k drafts, in the unit of a plain step's token: the caller's costs when it gave them, else
 * this generator's measured passes of k + 1 tokens (k = 0: one plain step). */
static double round_cost(const llm170_spec *s, int k) {
    if (s->n_ext) return s->ext[k];
    return k ? span_cost(s, k + 1) : plain_cost(s);
}

/* The number of draft tokens for the next round (0: a plain step), at most kmax. */
static int choose_k(llm170_spec *s, int kmax) {
    if (!s->d || kmax < s->p.draft_min) return 0;
    int hi = s->p.draft_max < kmax ? s->p.draft_max : kmax;
    if (!s->p.adaptive) return hi;
    if (s->n_ext && hi > s->n_ext - 1) hi = s->n_ext - 1;
    if (!s->n_ext && s->t_span[1] <= 0) return 0; /* a plain step first: the unit every gain is measured in */
    if (s->off) {
        if (--s->off_left > 0) return 0;
        return s->p.draft_min; /* a probe */
    }
    const double a = (s->acc_hit + 1.0) / (s->acc_try + 2.0);
    const double plain = round_cost(s, 0);
    double best = 0;
    int kbest = 0;
    for (int k = s->p.draft_min; k <= hi; k++) {
        const double tokens = (1.0 - pow(a, k + 1)) / (1.0 - a);
        const double cost = round_cost(s, k) + k * s->t_draft_tok + (s->recurrent ? s->t_rollback : 0);
        const double gain = tokens * plain / cost;
        if (gain > best) best = gain, kbest = k;
    }
    if (best < 1.0) { /* does not pay: off, probe later (backing off while probes fail) */
        s->off = true;
        s->off_left = s->probe_every;
        const double gap = s->probe_excess / (SPEC_PROBE_SHARE * plain);
        if (gap > s->off_left) s->off_left = gap < SPEC_PROBE_GAP_MAX ? (int)ceil(gap) : SPEC_PROBE_GAP_MAX;
        s->probe_every = s->probe_every * 4 < SPEC_PROBE_MAX ? s->probe_every * 4 : SPEC_PROBE_MAX;
        return 0;
    }
    return kbest;
}

/* After a round of nd drafts of which acc were kept; excess: what the round cost beyond its tokens at a
 * plain step's price (seconds; <= 0 when it paid). */
static void learn(llm170_spec *s, int nd, int acc, double excess) {
    if (nd == 0) return;
    s->acc_hit = SPEC_DECAY * s->acc_hit + acc;
    s->acc_try = SPEC_DECAY * s->acc_try + acc + (acc < nd);
    if (s->off) { /* a probe: back on if speculation now looks worth it */
        ema(&s->probe_excess, excess > 0 ? excess : 0);
        s->off = false;
        if (choose_k(s, s->p.draft_max) > 0) s->probe_every = SPEC_PROBE_MIN; /* else off again, backed off */
    }
}

/* Step 1 of a round (see the top): writes the span to span[] and returns its length; *n_draft: how many of
 * its last tokens are drafts. kmax: the most drafts the caller can use; costs: NULL or the caller's costs of
 * a round with 0..kmax drafts (llm170_spec_propose). */
static int propose(llm170_spec *s, int kmax, const double *costs, int32_t *span, int *n_draft, err *e) {
    *n_draft = 0;
    s->n_ext = 0;
    if (costs) {
        s->n_ext = (kmax < SPEC_MAX_DRAFT ? kmax : SPEC_MAX_DRAFT) + 1;
        memcpy(s->ext, costs, sizeof(double) * (size_t)s->n_ext);
    }
    if (s->n_hist == 0) return err_set(e, ERR_ARG, "a speculative round before llm170_spec_prompt / llm170_spec_begin");
    const int held = llm170_seq_len(s->c, s->seq), owed = s->n_hist - held;
    if (owed < 1 || owed > SPEC_MAX_SPAN)
        return err_set(e, ERR_ARG, "a speculative round on a sequence holding %d tokens of a history of %d: 1..%d "
                       "owed tokens expected (the sequence was changed behind the generator's back?)", held,
                       s->n_hist, SPEC_MAX_SPAN);
    memcpy(span, s->hist + held, sizeof(int32_t) * (size_t)owed);
    int nd = 0;
    if (owed == 1) { /* after a rollback the kept tokens go first, in a round without drafts */
        const int room = s->c->p.n_ctx - s->n_hist; /* positions after the pending token */
        if (kmax > room) kmax = room;
        if (kmax > SPEC_MAX_DRAFT) kmax = SPEC_MAX_DRAFT;
        const int k = choose_k(s, kmax);
        s->t_round_draft = 0;
        if (k > 0) {
            const double t0 = timer_now();
            nd = s->d->draft(s->d, s->hist, s->n_hist, k, span + 1, e);
            if (nd < 0) return nd;
            const double dt = timer_now() - t0;
            s->st.t_draft += dt;
            s->t_round_draft = dt;
            if (nd > 0) ema(&s->t_draft_tok, dt / nd);
            if (nd < s->p.draft_min) nd = 0;
        }
    }
    s->t_ckpt = 0;
    if (nd > 0 && s->recurrent) {
        const double t0 = timer_now();
        int rc = llm170_seq_save_state(s->c, s->seq, s->ckpt, s->ckpt_size);
        if (rc) return err_set(e, rc, "%s", llm170_last_error());
        s->t_ckpt = timer_now() - t0;
    }
    s->in_round = true;
    s->base = held, s->n_span = owed + nd, s->nd = nd;
    memcpy(s->span, span, sizeof(int32_t) * (size_t)s->n_span);
    *n_draft = nd;
    return s->n_span;
}

int llm170_spec_propose(llm170_spec *s, int kmax, const double *costs, int32_t *span, int *n_draft) {
    err e = {0};
    if (s->in_round) {
        err_set(&e, ERR_ARG, "llm170_spec_propose: the last round was not committed (llm170_spec_commit)");
        return api_fail(&e);
    }
    int n = propose(s, kmax < 0 ? 0 : kmax, costs, span, n_draft, &e);
    return n < 0 ? api_fail(&e) : n;
}

/* Cuts the sequence back to `keep` tokens after a pass that left `have`. A recurrent model goes back to the
 * checkpoint (s->base tokens) and, with redecode, decodes the kept tokens again now; else they stay owed. */
static int rollback(llm170_spec *s, int keep, int have, bool redecode, err *e) {
    if (keep == have) return 0;
    if (!s->recurrent) {
        int rc = llm170_seq_truncate(s->c, s->seq, keep);
        return rc ? err_set(e, rc, "%s", llm170_last_error()) : 0;
    }
    const double t0 = timer_now();
    int rc = llm170_seq_restore_state(s->c, s->seq, s->ckpt, s->ckpt_size);
    if (rc) return err_set(e, rc, "%s", llm170_last_error());
    if (redecode && keep > s->base && target_decode(s, s->span, keep - s->base, false, e)) return e->code;
    ema(&s->t_rollback, timer_now() - t0);
    s->st.t_rollback += timer_now() - t0;
    return 0;
}

/* Step 4 of a round: picked[0..n) are the tokens taken from the span's rows (all but the last equal to the
 * drafts); seconds: the pass's time (<= 0: not measured). Hidden rows (a drafter that reads them) come from
 * rows 0.. of the context's last decode: llm170_spec_next's own pass. */
static int commit(llm170_spec *s, const int32_t *picked, int n, double seconds, bool redecode, err *e) {
    if (!s->in_round) return err_set(e, ERR_ARG, "llm170_spec_commit without a proposed round (llm170_spec_propose)");
    const int owed = s->n_span - s->nd;
    if (n < 1 || n > s->nd + 1)
        return err_set(e, ERR_ARG, "llm170_spec_commit: %d tokens picked from a round of %d drafts: 1..%d expected", n,
                       s->nd, s->nd + 1);
    for (int j = 0; j < n - 1; j++)
        if (picked[j] != s->span[owed + j])
            return err_set(e, ERR_ARG, "llm170_spec_commit: picked token %d is %d where the draft was %d: only the last "
                           "picked token may differ from its draft", j, picked[j], s->span[owed + j]);
    s->in_round = false;
    const int acc = n - 1;
    if (seconds > 0) ema(&s->t_span[s->n_span], seconds + s->t_ckpt);
    s->st.tokens += n;
    if (s->nd > 0) s->st.t_verify += seconds > 0 ? seconds : 0, s->st.rounds++, s->st.drafted += s->nd, s->st.accepted += acc;
    else s->st.t_plain += seconds > 0 ? seconds : 0, s->st.plain_steps++;
    double excess = 0;
    if (s->nd > 0) {
        const double plain = round_cost(s, 0);
        excess = s->t_round_draft + (seconds > 0 ? seconds : 0) + s->t_ckpt +
                 (s->recurrent && acc < s->nd ? s->t_rollback : 0) - n * plain;
    }
    learn(s, s->nd, acc, excess);
    /* the sequence keeps the owed tokens and the accepted drafts; picked's last token is the new pending one */
    const int keep = s->base + owed + acc;
    const bool hid = s->d && s->d->wants_hidden;
    if (hid) {
        const int C = s->c->model->m->hp.n_embd;
        for (int r = 0; r < owed + acc; r++) memcpy(s->hid + (int64_t)r * C, llm170_hidden(s->c, r), sizeof(float) * (size_t)C);
    }
    if (s->d) s->d->kept(s->d, keep);
    if (rollback(s, keep, s->base + s->n_span, redecode, e)) return e->code;
    if (hid && s->d->observe(s->d, s->base, s->hid, owed + acc, e)) return e->code;
    return push_hist(s, picked, n, e);
}

int llm170_spec_commit(llm170_spec *s, const int32_t *picked, int n_picked, double seconds) {
    err e = {0};
    return commit(s, picked, n_picked, seconds, false, &e) ? api_fail(&e) : 0;
}

int llm170_spec_next(llm170_spec *s, llm170_sampler *smp, int32_t *out, int cap) {
    err e = {0};
    llm170_model *lm = s->c->model;
    if (cap < 1) {
        err_set(&e, ERR_ARG, "llm170_spec_next: room for at least one token is needed (cap %d)", cap);
        return api_fail(&e);
    }
    if (s->n_hist == 0) {
        err_set(&e, ERR_ARG, "llm170_spec_next before llm170_spec_prompt");
        return api_fail(&e);
    }
    int n_out = 0;
    if (s->n_hist == llm170_seq_len(s->c, s->seq)) { /* nothing owed: the first token comes from the prompt's logits */
        int32_t t = llm170_sample(smp, s->row);
        llm170_sampler_accept(smp, t);
        out[n_out++] = t;
        s->st.tokens++;
        if (push_hist(s, &t, 1, &e)) return api_fail(&e);
        if (n_out == cap || llm170_token_is_eog(lm, t)) return n_out;
    }
    /* a round: rollbacks re-decode at once (below), so only the pending token is owed and row 0 is its row */
    int32_t span[SPEC_MAX_SPAN];
    int nd;
    const int ns = propose(s, cap - n_out - 1, NULL, span, &nd, &e);
    if (ns < 0) return api_fail(&e);
    const double t0 = timer_now();
    if (target_decode(s, span, ns, nd > 0 || (s->d && s->d->wants_hidden), &e)) return api_fail(&e);
    const double dt = timer_now() - t0;
    const int first = n_out;
    for (int i = 0;; i++) {
        int32_t x = llm170_sample(smp, llm170_logits(s->c, i));
        llm170_sampler_accept(smp, x);
        out[n_out++] = x;
        if (i < nd && x == span[1 + i] && !llm170_token_is_eog(lm, x)) continue;
        break;
    }
    if (commit(s, out + first, n_out - first, dt, true, &e)) return api_fail(&e);
    return n_out;
}

void spec_set_drafter(llm170_spec *s, spec_drafter *d) {
    if (s->d) s->d->destroy(s->d);
    s->d = d;
}

void llm170_spec_get_stats(const llm170_spec *s, llm170_spec_stats *out) { *out = s->st; }
