/* srv sched impl (private to sched.c and sched_token.c): the job, slot and scheduler structs, and what the
 * two files share. sched.c owns the jobs, the slots' life (start, end, reset), the thread and its steps;
 * sched_token.c what happens to a generating slot's logits rows after a step: picking tokens (constrained
 * or not, one draw per token), logprobs, text and stop strings, and the speculative round's commit. */
#ifndef LLM170_SERVER_SCHED_IMPL_H
#define LLM170_SERVER_SCHED_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/sched.h"

struct srv_job {
    /* input, fixed at submit */
    int32_t *prompt;
    int n_prompt;
    srv_gen g;
    uint64_t order;
    double t_submit;
    atomic_int refs;
    atomic_bool cancel;
    /* output, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *text;       /* emitted text (never part of a stop string) */
    size_t len, cap;
    srv_lp *lp;
    int n_lp, cap_lp;
    int finish, stop_index, n_gen, n_cached;
    char err[256];
};

typedef struct slot {
    srv_job *job;           /* NULL: free */
    int32_t *cache;         /* the tokens the sequence holds, in order (n_cache == llm170_seq_len) */
    int n_cache;
    void *ckpt;             /* recurrent-state checkpoint at ckpt_pos tokens (hybrids), or ckpt_pos -1 */
    int ckpt_pos;
    int n_done;             /* prompt tokens in the sequence */
    int32_t pending;        /* generating: the last token picked (the pending one); -1 while prefilling */
    llm170_spec *spec;      /* the slot's speculative generator on its sequence, or NULL (no --spec) */
    int32_t span[LLM170_SPEC_MAX_SPAN]; /* this step's tokens of a generating slot: owed tokens, then drafts */
    int n_span, n_draft;
    int base_len;           /* the sequence's length before this step's span */
    llm170_sampler *smp;
    llm170_detok *detok;
    char *gen;              /* all generated text so far (stop strings are searched here) */
    size_t gen_len, gen_cap, emitted;
    int row;                /* this step's logits row of the pending token (drafts' rows follow), or -1 */
    bool first_token_seen;
    srv_jc_state jc;        /* constrained jobs: the JSON so far */
    uint8_t *allowed;       /* constrained jobs: the mask (n_vocab), and the masked logits */
    float *masked;
} slot;

struct srv_sched {
    llm170_model *m;
    llm170_context *ctx;
    srv_sched_params p;
    srv_metrics *mt;
    bool recurrent;
    size_t ckpt_size;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, joined;
    srv_job **queue;        /* ring of queue_cap */
    int q_head, q_len;
    uint64_t next_order;
    slot *slots;
    int n_vocab;
    srv_jc_vocab *vocab;    /* token texts for constrained decoding, built at the first such job */
    srv_step_cost cost;     /* decode-only step times by rows: what speculating slots' drafts are priced at */
};

/* Seconds on the monotonic clock. */
double srv_now(void);
/* Appends output to j under its lock (text, a logprob entry or NULL, the generated count) and wakes its reader. */
void srv_job_emit(srv_job *j, const char *text, size_t n, const srv_lp *lp, int n_gen);
/* Ends slot i's job and frees the slot (keeping its sequence for reuse unless the job was cancelled or failed:
 * then the sequence is reset). */
void srv_slot_end(srv_sched *s, int i, int finish, int stop_index, const char *err);
/* After a step's pass: slot i (generating; its span decoded, its pending token's logits at row sl->row)
 * picks its tokens, emits them and, when it speculates, commits the round (seconds: the pass's time, <= 0
 * if not to be measured). */
void srv_slot_round(srv_sched *s, int i, double seconds);

#endif
