/* srv sched: the scheduler. One thread owns the llm170 context and makes every llm170_decode; HTTP threads
 * only submit jobs and read their output.
 *
 * Slots: the context has N sequences, one per slot. A job is taken from the bounded FIFO queue only when
 * a slot is free (never dequeued into nowhere). Each step decodes, in ONE llm170_decode, the next token of
 * every generating slot plus prompt chunks of prefilling slots in arrival order, up to a per-step token
 * budget and, while slots generate, a prefill cap (srv_plan_step; the decode rows first in the batch,
 * srv_plan_order) (continuous batching: jobs join and leave between steps).
 * Prefix reuse: a free slot keeps the tokens its sequence holds. A new job picks the free slot sharing the
 * longest prefix with its prompt and skips decoding that prefix: attention-only models truncate the
 * sequence to it; hybrid (GDN) models, whose state cannot be rolled back, reuse either the slot's whole
 * cached sequence (a conversation that continues) or a checkpoint of the recurrent state saved when the
 * prompt's prefill reached its last token (the same prompt again, or one extending it). Prefill therefore
 * stops one token short of the prompt; that last token is decoded with the generation batch.
 * A slot that is not reused is llm170_seq_reset (KV and GDN state zeroed) before the next job.
 * Cancellation: a job flagged by srv_job_cancel (client gone) is finished at the start of the next step
 * and its slot reset and freed.
 * Constrained jobs (g.schema): each token is drawn as usual and kept if the JSON automaton takes it; else
 * the logits are masked to the tokens it takes (and that leave room to close the value within the budget)
 * and the token drawn again (jsonc.h says why this is exact for greedy and plain temperature sampling).
 * Output: text comes out of the streaming detokenizer (whole UTF-8 characters only) and is held back
 * while it could be the start of a stop string, so no part of a stop string is ever emitted.
 * Speculative decoding (srv_sched_params.spec, `serve --spec ngram|draft`): each slot has an llm170_spec
 * generator on its sequence. A generating slot's share of the step is then the span that generator
 * proposes: its pending token and 0..k drafts (k its own adaptive choice, within the step's budget and the
 * job's max_tokens), logits for every row; after the pass the slot picks a token from each row in turn,
 * exactly as it picks one token without speculation (the same sampler draw, the same constrained masking,
 * logprobs, stop strings and limits per token), going on while the pick equals the next draft, and commits
 * the round (rejected drafts cut from the KV cache; a recurrent model's state restored to its checkpoint
 * and the kept tokens decoded again in the slot's next span). So a constrained slot speculates too: its
 * automaton only ever sees emitted tokens, each drawn through the mask as without speculation, and a
 * draft the masked draw does not give is simply rejected. The output is the one plain decoding gives.
 * k is each slot's own (llm170_spec's cost model): its acceptance rate against what its drafts cost the
 * step (srv_spec_costs: decode-only step times by rows, a token's price the step's time over its tokens,
 * k drafts the time k more rows add, which every token of the step waits for), so a slot whose drafts are
 * not kept stops drafting by itself while the others go on, and drafts beside many streams must be kept
 * more often to pay than drafts of a lone stream.
 *
 * Ownership: srv_sched_submit takes a job reference; the submitter keeps its own and drops it with
 * srv_job_release. A job is freed when both references are gone. */
#ifndef LLM170_SERVER_SCHED_H
#define LLM170_SERVER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm170.h"
#include "server/jsonc.h"
#include "server/metrics.h"

enum srv_finish {
    SRV_RUNNING = 0,
    SRV_FIN_EOG,       /* the model ended its turn */
    SRV_FIN_STOP,      /* a stop string (stop_index says which) */
    SRV_FIN_LENGTH,    /* max_tokens or the context ran out */
    SRV_FIN_CANCELLED, /* the client went away */
    SRV_FIN_ERROR,     /* the engine failed; err says why */
};

#define SRV_TOP_MAX 20

/* One generated token's log-probability and its most likely alternatives (if asked for). */
typedef struct srv_lp {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top_tok[SRV_TOP_MAX];
    float top_lp[SRV_TOP_MAX];
} srv_lp;

typedef struct srv_gen {
    int max_tokens;               /* > 0 */
    llm170_sampler_params sp;
    char **stop;                  /* n_stop strings, owned by the job once submitted */
    int n_stop;
    int n_probs;                  /* -1: no logprobs */
    bool ignore_eos;
    srv_jc_schema *schema;        /* constrained to this JSON schema (owned by the job once submitted); the
                                     job ends when the value is closed */
} srv_gen;

typedef struct srv_job srv_job;

/* A new job for prompt (n_prompt >= 1 tokens, copied) and g (its stop strings are taken over). NULL if
 * out of memory. The caller holds one reference. */
srv_job *srv_job_new(const int32_t *prompt, int n_prompt, srv_gen *g);
void srv_job_release(srv_job *j);
/* Asks the scheduler to stop the job (the client went away); safe from any thread, any number of times. */
void srv_job_cancel(srv_job *j);

/* A reader's position in a job's output, and what it got in one srv_job_wait. */
typedef struct srv_cursor {
    size_t text;
    int lp;
} srv_cursor;

typedef struct srv_delta {
    char *text;       /* new text (malloc'd, NUL-terminated; caller frees) */
    size_t len;
    srv_lp *lp;       /* new logprob entries (malloc'd or NULL; caller frees) */
    int n_lp;
    int finish;       /* enum srv_finish */
    int stop_index;   /* with SRV_FIN_STOP */
    int n_prompt, n_gen, n_cached; /* tokens: prompt, generated, prompt tokens reused from a slot's cache */
    char err[256];
} srv_delta;

/* Waits up to timeout_ms for output past *cur or the job's end; fills d with what is new and advances
 * *cur. Returns 1 if d has text, entries or the finish, 0 on timeout. */
int srv_job_wait(srv_job *j, srv_cursor *cur, int timeout_ms, srv_delta *d);
void srv_delta_free(srv_delta *d);

typedef struct srv_sched srv_sched;

typedef struct srv_sched_params {
    int n_slots;    /* == the context's n_seq */
    int n_ctx;      /* tokens per slot */
    int n_batch;    /* per-step token budget */
    int queue_cap;  /* jobs waiting for a slot before 429 */
    int prefill_chunk; /* prompt tokens a step takes while slots are generating (<= 0: up to n_batch) */
    llm170_spec_params spec; /* type LLM170_SPEC_NONE: no speculation; not LLM170_SPEC_MTP */
} srv_sched_params;

/* Starts the scheduler thread on ctx (which it then owns until srv_sched_free; the caller frees ctx after).
 * Returns 0, -1 (out of memory, bad parameters), or SRV_SCHED_ESPEC: a slot's speculative generator could
 * not be made (llm170_last_error() says why, e.g. a draft model of another vocabulary). */
#define SRV_SCHED_ESPEC (-2)
int srv_sched_new(llm170_model *m, llm170_context *ctx, const srv_sched_params *p, srv_metrics *mt, srv_sched **out);
/* Stops the thread: running and queued jobs end as cancelled, later submits fail. The scheduler stays
 * valid (HTTP threads may still hold it) until srv_sched_free, which stops it first if needed. */
void srv_sched_stop(srv_sched *s);
void srv_sched_free(srv_sched *s);
/* Queues j. Returns 0, or -1 if the queue is full (the caller answers 429). */
int srv_sched_submit(srv_sched *s, srv_job *j);

/* ---- pure pieces, unit-tested in tests/server/test_server_sched.c ---- */

/* One slot as the step planner sees it. */
typedef struct srv_plan_slot {
    bool generating;   /* decodes its span this step */
    int prefill_left;  /* prompt tokens still to prefill (before the last one) */
    uint64_t order;    /* arrival order of its job: earlier jobs prefill first */
    int span;          /* a generating slot's tokens: its pending token, drafts, tokens a rollback left (0: 1) */
} srv_plan_slot;

/* Fills take[i] (tokens slot i decodes this step): its span per generating slot, then prefill chunks in arrival
 * order within what is left of budget, and at most `chunk` prefill tokens while any slot is generating
 * (chunk <= 0: no such cap), so that a new prompt delays the running streams by a chunk's time, not a
 * whole prompt's. A prompt longer than the step's cap is cut into even pieces (as few steps as the cap
 * allows, the pieces differing by at most one token: the same passes, a shorter longest step). While
 * slots generate under a cap of >= 2 * SRV_PLAN_MIN_PIECE, a piece that does not finish its prompt is at
 * least SRV_PLAN_MIN_PIECE tokens, else that prompt waits for the next step (a shorter one would run row
 * by row on the CPU, several times a full piece's cost per token). A generating slot always gets its
 * span, even past the budget, so decoding never starves (the scheduler sizes drafts to what the budget
 * leaves). Returns the total. */
#define SRV_PLAN_MIN_PIECE 16
int srv_plan_step(const srv_plan_slot *s, int n, int budget, int chunk, int *take);

/* The batch order of a step: writes the slots with take[i] > 0 to order[] by span length, shortest first
 * (slot order among equals), and returns how many. Every generating slot's one token then comes first,
 * side by side: a backend that runs short spans row by row (the CPU: spans of < 16 tokens) takes the
 * decode rows as one run of consecutive rows, which share each pass over a weight row, where a prompt
 * piece placed between them would split the run in two (a second pass over every weight row: ~15 ms a step on
 * the 0.5B model, docs/benchmarks.md, "Server: where the inter-token latency tail came from"). A row's
 * bits do not depend on its place in the batch. */
int srv_plan_order(const int *take, int n, int *order);

enum srv_reuse { SRV_REUSE_NONE, SRV_REUSE_KEEP, SRV_REUSE_TRUNCATE, SRV_REUSE_RESTORE };

/* How many leading prompt tokens a slot holding cache[0..n_cache) (and a state checkpoint at ckpt_pos
 * tokens, or -1) can skip, and how (*how); always leaves at least one prompt token to decode. */
int srv_prefix_reuse(const int32_t *cache, int n_cache, int ckpt_pos, bool recurrent, const int32_t *prompt,
                     int n_prompt, int *how);

/* Step times by the rows a step decodes, for speculation's costs (decode-only steps: a step that also
 * prefills is not measured). t[R]: a moving average of the seconds of steps of R rows, 0 = not measured. */
typedef struct srv_step_cost {
    double *t;
    int n;     /* rows 0..n-1 */
} srv_step_cost;

void srv_step_cost_add(srv_step_cost *c, int rows, double seconds);
/* A step of R rows: measured, else interpolated between the nearest measured, else from the largest
 * measured below, R_m, plus 10% of it per R_m more rows (optimistic, so longer steps get tried and then
 * measured), else the smallest measured above; -1 if nothing is measured. */
double srv_step_cost_at(const srv_step_cost *c, int rows);
/* A speculating slot's round costs (llm170_spec_propose's costs) beside `others` rows of the other slots in
 * a step that emits about `tokens` tokens: costs[0] = t(others + 1) / tokens (the step's time per token) and
 * costs[k] = costs[0] + t(others + 1 + k) - t(others + 1) (the time k drafts add to the step, which every
 * token of it waits for). So drafts pay where (tokens - 1 + kept + 1) / t(others + 1 + k) beats
 * tokens / t(others + 1): the step's throughput, not the slot's alone. One slot alone: t(1) and t(1 + k), as
 * llm170_spec_next weighs them. Returns false (costs unset) while nothing is measured. */
bool srv_spec_costs(const srv_step_cost *c, int others, int tokens, int kmax, double *costs);

/* Stop strings over generated text[0..len) of which [0..emitted) is out: returns the length that may be
 * emitted now. *hit = index of the earliest stop string found (the text ends before it), else -1. */
size_t srv_stop_scan(const char *text, size_t len, size_t emitted, char *const *stop, int n_stop, int *hit);

#endif
