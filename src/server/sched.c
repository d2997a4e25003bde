/* srv sched: the scheduler thread, its slots and the jobs (see sched.h for the design). Locks: s->mu
 * guards the queue and which job each slot holds; j->mu guards a job's output; the scheduler never holds
 * both at once. Everything about a slot's sequence (KV, checkpoint, sampler, detokenizer) is touched by
 * the scheduler thread only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/sched_impl.h"

double srv_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- jobs ---- */

srv_job *srv_job_new(const int32_t *prompt, int n_prompt, srv_gen *g) {
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->prompt = malloc(sizeof(int32_t) * (size_t)n_prompt);
    if (!j->prompt) {
        free(j);
        return NULL;
    }
    memcpy(j->prompt, prompt, sizeof(int32_t) * (size_t)n_prompt);
    j->n_prompt = n_prompt;
    j->g = *g;
    g->stop = NULL;
    g->n_stop = 0;
    g->schema = NULL;
    atomic_init(&j->refs, 1);
    atomic_init(&j->cancel, false);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->stop_index = -1;
    return j;
}

void srv_job_release(srv_job *j) {
    if (!j || atomic_fetch_sub(&j->refs, 1) != 1) return;
    for (int i = 0; i < j->g.n_stop; i++) free(j->g.stop[i]);
    free(j->g.stop);
    srv_jc_schema_free(j->g.schema);
    free(j->prompt);
    free(j->text);
    free(j->lp);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void srv_job_cancel(srv_job *j) { atomic_store(&j->cancel, true); }

int srv_job_wait(srv_job *j, srv_cursor *cur, int timeout_ms, srv_delta *d) {
    memset(d, 0, sizeof *d);
    pthread_mutex_lock(&j->mu);
    if (j->len == cur->text && j->n_lp == cur->lp && j->finish == SRV_RUNNING) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + (long long)timeout_ms * 1000000LL;
        ts.tv_sec += (time_t)(ns / 1000000000LL);
        ts.tv_nsec = (long)(ns % 1000000000LL);
        while (j->len == cur->text && j->n_lp == cur->lp && j->finish == SRV_RUNNING)
            if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) != 0) break;
    }
    int got = j->len > cur->text || j->n_lp > cur->lp || j->finish != SRV_RUNNING;
    d->len = j->len - cur->text;
    d->text = malloc(d->len + 1);
    if (d->text) {
        if (d->len) memcpy(d->text, j->text + cur->text, d->len);
        d->text[d->len] = 0;
        cur->text = j->len;
    } else {
        d->len = 0;
    }
    d->n_lp = j->n_lp - cur->lp;
    if (d->n_lp > 0 && (d->lp = malloc(sizeof(srv_lp) * (size_t)d->n_lp))) {
        memcpy(d->lp, j->lp + cur->lp, sizeof(srv_lp) * (size_t)d->n_lp);
        cur->lp = j->n_lp;
    } else {
        d->n_lp = 0;
    }
    /* the finish is reported only once everything before it was handed out */
    d->finish = cur->text == j->len && cur->lp == j->n_lp ? j->finish : SRV_RUNNING;
    d->stop_index = j->stop_index;
    d->n_prompt = j->n_prompt;
    d->n_gen = j->n_gen;
    d->n_cached = j->n_cached;
    snprintf(d->err, sizeof d->err, "%s", j->err);
    pthread_mutex_unlock(&j->mu);
    return got;
}

void srv_delta_free(srv_delta *d) {
    free(d->text);
    free(d->lp);
    memset(d, 0, sizeof *d);
}

void srv_job_emit(srv_job *j, const char *text, size_t n, const srv_lp *lp, int n_gen) {
    pthread_mutex_lock(&j->mu);
    if (n && j->len + n + 1 > j->cap) {
        size_t cap = (j->len + n + 1) * 2;
        char *t = realloc(j->text, cap);
        if (t) j->text = t, j->cap = cap;
    }
    if (n && j->len + n + 1 <= j->cap) {
        memcpy(j->text + j->len, text, n);
        j->len += n;
    }
    if (lp) {
        if (j->n_lp == j->cap_lp) {
            int cap = j->cap_lp ? 2 * j->cap_lp : 16;
            srv_lp *t = realloc(j->lp, sizeof(srv_lp) * (size_t)cap);
            if (t) j->lp = t, j->cap_lp = cap;
        }
        if (j->n_lp < j->cap_lp) j->lp[j->n_lp++] = *lp;
    }
    j->n_gen = n_gen;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void job_finish(srv_job *j, int finish, int stop_index, const char *err) {
    pthread_mutex_lock(&j->mu);
    j->finish = finish;
    j->stop_index = stop_index;
    if (err) snprintf(j->err, sizeof j->err, "%s", err);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* ---- slots ---- */

static void slot_free_request(slot *sl) {
    llm170_sampler_free(sl->smp);
    llm170_detok_free(sl->detok);
    sl->smp = NULL;
    sl->detok = NULL;
    free(sl->gen);
    sl->gen = NULL;
    sl->gen_len = sl->gen_cap = sl->emitted = 0;
}

/* Forgets the sequence (KV and GDN state zeroed) and its cache. */
static void slot_reset(srv_sched *s, int i) {
    llm170_seq_reset(s->ctx, i);
    s->slots[i].n_cache = 0;
    s->slots[i].ckpt_pos = -1;
}

void srv_slot_end(srv_sched *s, int i, int finish, int stop_index, const char *err) {
    slot *sl = &s->slots[i];
    srv_job *j = sl->job;
    job_finish(j, finish, stop_index, err);
    slot_free_request(sl);
    if (finish == SRV_FIN_CANCELLED || finish == SRV_FIN_ERROR) slot_reset(s, i);
    pthread_mutex_lock(&s->mu);
    sl->job = NULL;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->mt->mu);
    s->mt->slots_busy--;
    if (finish == SRV_FIN_CANCELLED) s->mt->cancelled++;
    pthread_mutex_unlock(&s->mt->mu);
    srv_job_release(j);
}

/* Sets slot i up for its new job: prefix reuse (or a reset), sampler, detokenizer. */
static int slot_start(srv_sched *s, int i) {
    slot *sl = &s->slots[i];
    srv_job *j = sl->job;
    int how;
    int reuse = srv_prefix_reuse(sl->cache, sl->n_cache, sl->ckpt_pos, s->recurrent, j->prompt, j->n_prompt, &how);
    int rc = 0;
    if (how == SRV_REUSE_TRUNCATE) rc = llm170_seq_truncate(s->ctx, i, reuse);
    else if (how == SRV_REUSE_RESTORE) rc = llm170_seq_restore_state(s->ctx, i, sl->ckpt, s->ckpt_size);
    if (rc || how == SRV_REUSE_NONE) {
        slot_reset(s, i);
        reuse = 0;
    }
    sl->n_cache = reuse;
    if (sl->ckpt_pos > reuse) sl->ckpt_pos = -1;
    sl->n_done = reuse;
    sl->pending = -1;
    sl->first_token_seen = false;
    j->n_cached = reuse;
    if (llm170_sampler_new(s->m, &j->g.sp, &sl->smp) || llm170_detok_new(s->m, false, &sl->detok)) return -1;
    if (j->g.schema) {
        if (!s->vocab && srv_jc_vocab_new(s->m, &s->vocab)) return -1;
        if (!sl->allowed) sl->allowed = malloc((size_t)s->n_vocab);
        if (!sl->masked) sl->masked = malloc(sizeof(float) * (size_t)s->n_vocab);
        if (!sl->allowed || !sl->masked) return -1;
        srv_jc_init(&sl->jc, j->g.schema);
    }
    /* the penalties see the whole prompt, as llama-server's sampler does */
    for (int t = 0; t < j->n_prompt; t++) llm170_sampler_accept(sl->smp, j->prompt[t]);
    pthread_mutex_lock(&s->mt->mu);
    s->mt->prompt_tokens += (uint64_t)j->n_prompt;
    s->mt->cached_tokens += (uint64_t)reuse;
    pthread_mutex_unlock(&s->mt->mu);
    return 0;
}

static void cache_append(slot *sl, const int32_t *t, int n) {
    memcpy(sl->cache + sl->n_cache, t, sizeof(int32_t) * (size_t)n);
    sl->n_cache += n;
}

/* A generating slot's span for this step: its pending token, or what its generator proposes (the pending
 * token and up to *left drafts, fewer if the job can emit fewer tokens; or the tokens a rollback left owed),
 * weighing drafts by the step costs beside `others` rows of the n_gen generating slots (srv_spec_costs).
 * Takes the drafts' rows from *left. Returns -1 if the slot failed (it is ended). */
static int slot_span(srv_sched *s, int i, int *left, int others, int n_gen) {
    slot *sl = &s->slots[i];
    srv_job *j = sl->job;
    sl->base_len = sl->n_cache;
    sl->n_draft = 0;
    if (!sl->spec) {
        sl->span[0] = sl->pending;
        sl->n_span = 1;
        return 0;
    }
    if (sl->n_done == j->n_prompt - 1 && llm170_spec_begin(sl->spec, j->prompt, j->n_prompt)) {
        srv_slot_end(s, i, SRV_FIN_ERROR, -1, llm170_last_error());
        return -1;
    }
    pthread_mutex_lock(&j->mu);
    int emit_left = j->g.max_tokens - j->n_gen; /* tokens the job may still emit, the pending token's pick included */
    pthread_mutex_unlock(&j->mu);
    int kmax = emit_left - 1 < *left ? emit_left - 1 : *left;
    if (kmax > LLM170_SPEC_MAX_SPAN - 1) kmax = LLM170_SPEC_MAX_SPAN - 1;
    if (kmax < 0) kmax = 0;
    double costs[LLM170_SPEC_MAX_SPAN];
    bool priced = srv_spec_costs(&s->cost, others, n_gen, kmax, costs);
    int n = llm170_spec_propose(sl->spec, kmax, priced ? costs : NULL, sl->span, &sl->n_draft);
    if (n < 0) {
        srv_slot_end(s, i, SRV_FIN_ERROR, -1, llm170_last_error());
        return -1;
    }
    sl->n_span = n;
    *left -= n - 1;
    return 0;
}


/* ---- the thread ---- */

/* Takes queued jobs, oldest first, into free slots (for each, the free slot sharing the longest prefix
 * with its prompt); stops at the first job that finds no free slot, which stays queued. Under s->mu.
 * Writes the slots that got a job to started[] and returns how many. */
static int admit_locked(srv_sched *s, int *started) {
    int n = 0;
    while (s->q_len > 0) {
        srv_job *j = s->queue[s->q_head];
        int best = -1, best_reuse = -1;
        for (int i = 0; i < s->p.n_slots; i++) {
            if (s->slots[i].job) continue;
            int how, r = srv_prefix_reuse(s->slots[i].cache, s->slots[i].n_cache, s->slots[i].ckpt_pos, s->recurrent,
                                          j->prompt, j->n_prompt, &how);
            if (r > best_reuse) best = i, best_reuse = r;
        }
        if (best < 0) break; /* no free slot: the job stays queued */
        s->q_head = (s->q_head + 1) % s->p.queue_cap;
        s->q_len--;
        s->slots[best].job = j;
        started[n++] = best;
    }
    return n;
}

static void step(srv_sched *s, srv_plan_slot *plan, int *take, llm170_seq_batch *batch, int *bslot) {
    int n = s->p.n_slots;
    /* cancellations first: a gone client's slot is freed before anything is decoded for it */
    for (int i = 0; i < n; i++)
        if (s->slots[i].job && atomic_load(&s->slots[i].job->cancel)) srv_slot_end(s, i, SRV_FIN_CANCELLED, -1, NULL);
    int started[256], n_started;
    pthread_mutex_lock(&s->mu);
    n_started = admit_locked(s, started);
    pthread_mutex_unlock(&s->mu);
    for (int k = 0; k < n_started; k++) {
        pthread_mutex_lock(&s->mt->mu);
        s->mt->slots_busy++;
        s->mt->queue_len--;
        pthread_mutex_unlock(&s->mt->mu);
        if (slot_start(s, started[k])) srv_slot_end(s, started[k], SRV_FIN_ERROR, -1, llm170_last_error());
    }
    /* the generating slots' spans first: drafts take what the budget leaves beside one token per slot, and
     * are priced beside the other slots' rows (those proposed this step, else their last step's span) */
    int left = s->p.n_batch, n_gen = 0, rows_est = 0;
    for (int i = 0; i < n; i++) {
        slot *sl = &s->slots[i];
        if (sl->job && sl->pending < 0 && sl->n_done >= sl->job->n_prompt - 1) sl->pending = sl->job->prompt[sl->n_done];
        if (!sl->job || sl->pending < 0) continue;
        if (sl->n_span < 1) sl->n_span = 1;
        n_gen++, left--, rows_est += sl->n_span;
    }
    for (int i = 0; i < n; i++) {
        slot *sl = &s->slots[i];
        if (sl->job && sl->pending >= 0) {
            rows_est -= sl->n_span;
            if (slot_span(s, i, &left, rows_est, n_gen)) sl->pending = -1; /* failed: ended */
            else rows_est += sl->n_span;
        }
        plan[i] = (srv_plan_slot){sl->job && sl->pending >= 0, sl->job && sl->pending < 0 ? sl->job->n_prompt - 1 - sl->n_done : 0,
                                  sl->job ? sl->job->order : 0, sl->job && sl->pending >= 0 ? sl->n_span : 0};
    }
    int total = srv_plan_step(plan, n, s->p.n_batch, s->p.prefill_chunk, take);
    if (total == 0) return;
    /* the batch in srv_plan_order's order: the generating slots' spans side by side, then the prompt pieces */
    for (int i = 0; i < n; i++) s->slots[i].row = -1;
    int nb = srv_plan_order(take, n, bslot), rows = 0;
    bool prefill = false;
    for (int b = 0; b < nb; b++) {
        int i = bslot[b];
        slot *sl = &s->slots[i];
        const bool gen = plan[i].generating, all = gen && sl->n_draft > 0;
        batch[b] = (llm170_seq_batch){i, take[i], gen ? sl->span : sl->job->prompt + sl->n_done, all};
        /* rows in batch order: every row of a span with drafts, else its last; the pending token's row */
        if (gen) sl->row = all ? rows + sl->n_span - sl->n_draft - 1 : rows;
        rows += all ? take[i] : 1;
        prefill |= !gen;
    }
    double t0 = srv_now();
    int rc = llm170_decode(s->ctx, batch, nb);
    double dt = srv_now() - t0;
    if (!prefill) srv_step_cost_add(&s->cost, total, dt);
    pthread_mutex_lock(&s->mt->mu);
    s->mt->steps++;
    s->mt->decode_seconds += dt;
    s->mt->last_step_tps = dt > 0 ? total / dt : 0;
    pthread_mutex_unlock(&s->mt->mu);
    if (rc) {
        char msg[256];
        snprintf(msg, sizeof msg, "decode failed: %s", llm170_last_error());
        for (int b = 0; b < nb; b++) srv_slot_end(s, bslot[b], SRV_FIN_ERROR, -1, msg);
        return;
    }
    for (int b = 0; b < nb; b++) {
        int i = bslot[b];
        slot *sl = &s->slots[i];
        cache_append(sl, batch[b].tokens, batch[b].n_tokens);
        if (!plan[i].generating) {
            sl->n_done += batch[b].n_tokens;
            /* prefill reached the prompt's last token: checkpoint the recurrent state for reuse */
            if (s->recurrent && sl->n_done == sl->job->n_prompt - 1 &&
                llm170_seq_save_state(s->ctx, i, sl->ckpt, s->ckpt_size) == 0)
                sl->ckpt_pos = sl->n_done;
        } else {
            if (sl->n_done < sl->job->n_prompt) sl->n_done++;
            /* a step that also prefilled says nothing about what a span costs */
            srv_slot_round(s, i, prefill ? 0 : dt);
        }
    }
}

static void *sched_main(void *arg) {
    srv_sched *s = arg;
    int n = s->p.n_slots;
    srv_plan_slot *plan = calloc((size_t)n, sizeof *plan);
    int *take = calloc((size_t)n, sizeof *take), *bslot = calloc((size_t)n, sizeof *bslot);
    llm170_seq_batch *batch = calloc((size_t)n, sizeof *batch);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        for (;;) {
            bool busy = s->q_len > 0;
            for (int i = 0; i < n && !busy; i++) busy = s->slots[i].job != NULL;
            if (s->stop || busy) break;
            pthread_cond_wait(&s->cv, &s->mu);
        }
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        if (plan && take && bslot && batch) step(s, plan, take, batch, bslot);
    }
    for (int i = 0; i < n; i++)
        if (s->slots[i].job) srv_slot_end(s, i, SRV_FIN_CANCELLED, -1, NULL);
    pthread_mutex_lock(&s->mu);
    while (s->q_len > 0) {
        srv_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->p.queue_cap;
        s->q_len--;
        job_finish(j, SRV_FIN_CANCELLED, -1, "the server is shutting down");
        srv_job_release(j);
    }
    pthread_mutex_unlock(&s->mu);
    free(plan), free(take), free(bslot), free(batch);
    return NULL;
}

int srv_sched_new(llm170_model *m, llm170_context *ctx, const srv_sched_params *p, srv_metrics *mt, srv_sched **out) {
    *out = NULL;
    if (p->n_slots < 1 || p->n_slots > 256 || p->queue_cap < 1 || p->n_batch < 1 || p->spec.type == LLM170_SPEC_MTP)
        return -1;
    srv_sched *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->m = m;
    s->ctx = ctx;
    s->p = *p;
    s->mt = mt;
    s->n_vocab = llm170_model_n_vocab(m);
    s->ckpt_size = llm170_seq_state_size(ctx);
    s->recurrent = s->ckpt_size > 16; /* more than the checkpoint header: the model has GDN state */
    s->queue = calloc((size_t)p->queue_cap, sizeof *s->queue);
    s->slots = calloc((size_t)p->n_slots, sizeof *s->slots);
    s->cost.n = p->n_slots * LLM170_SPEC_MAX_SPAN + 1;
    s->cost.t = calloc((size_t)s->cost.n, sizeof *s->cost.t);
    bool ok = s->queue && s->slots && s->cost.t;
    for (int i = 0; ok && i < p->n_slots; i++) {
        s->slots[i].ckpt_pos = -1;
        ok = (s->slots[i].cache = malloc(sizeof(int32_t) * (size_t)p->n_ctx)) != NULL;
        if (ok && s->recurrent) ok = (s->slots[i].ckpt = malloc(s->ckpt_size)) != NULL;
    }
    int rc = ok ? 0 : -1;
    for (int i = 0; !rc && p->spec.type != LLM170_SPEC_NONE && i < p->n_slots; i++)
        if (llm170_spec_new(ctx, i, &p->spec, &s->slots[i].spec)) rc = SRV_SCHED_ESPEC;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (rc || pthread_create(&s->thread, NULL, sched_main, s) != 0) {
        for (int i = 0; s->slots && i < p->n_slots; i++)
            free(s->slots[i].cache), free(s->slots[i].ckpt), llm170_spec_free(s->slots[i].spec);
        free(s->slots);
        free(s->queue);
        free(s->cost.t);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
        return rc ? rc : -1;
    }
    *out = s;
    return 0;
}

void srv_sched_stop(srv_sched *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    bool joined = s->joined;
    s->stop = true;
    s->joined = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!joined) pthread_join(s->thread, NULL);
}

void srv_sched_free(srv_sched *s) {
    if (!s) return;
    srv_sched_stop(s);
    for (int i = 0; i < s->p.n_slots; i++) {
        slot *sl = &s->slots[i];
        free(sl->cache), free(sl->ckpt), free(sl->allowed), free(sl->masked);
        llm170_spec_free(sl->spec);
    }
    srv_jc_vocab_free(s->vocab);
    free(s->cost.t);
    free(s->slots);
    free(s->queue);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

int srv_sched_submit(srv_sched *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    if (s->q_len == s->p.queue_cap || s->stop) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    atomic_fetch_add(&j->refs, 1);
    j->order = s->next_order++;
    j->t_submit = srv_now();
    s->queue[(s->q_head + s->q_len) % s->p.queue_cap] = j;
    s->q_len++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->mt->mu);
    s->mt->queue_len++;
    pthread_mutex_unlock(&s->mt->mu);
    return 0;
}
