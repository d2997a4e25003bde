/* forward: one batched forward pass of a model over spans of tokens, each span continuing one sequence.
 *
 * All spans' tokens go through every matmul together; attention, conv and the delta rule run per span
 * over that span's sequence memory. A span's tokens take positions n_past .. n_past+n-1 of its sequence,
 * and n_past advances. Two spans of one batch must belong to different sequences.
 *
 * A context owns a fwd_ctx: its executor, its sequence state and its activation arena (fwd_work), all
 * sized once at creation from the worst pass (fwd_plan); a pass allocates nothing. */
#ifndef LLM170_ENGINE_FORWARD_H
#define LLM170_ENGINE_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "engine/kv.h"
#include "engine/model.h"

typedef struct fwd_span {
    int seq;               /* sequence index in the kv_state */
    int n;                 /* tokens in this span (>= 1) */
    const int32_t *tokens; /* n token ids */
    enum fwd_out { FWD_OUT_LAST, FWD_OUT_ALL, FWD_OUT_NONE } out; /* which tokens yield logits */
} fwd_span;

/* Output rows of one span: n, 1 or 0. */
static inline int fwd_span_rows(const fwd_span *s) { return s->out == FWD_OUT_ALL ? s->n : s->out == FWD_OUT_LAST; }

/* Number of logit rows a batch produces. */
int fwd_n_out(const fwd_span *spans, int n_spans);

/* A context's activation arena (device memory unless marked host), carved from one allocation. Every
 * architecture uses the same slots (widths from the model's hparams); T <= max_tokens. */
typedef struct fwd_work {
    int max_tokens, max_spans, out_rows; /* out_rows: logits rows per output-head call */
    int64_t wmax;                        /* width of the wide slots */
    float *x, *h, *y;                    /* [T][C]: residual, normed input, block output */
    float *a, *b, *c, *d, *f, *u;        /* [T][wmax] projections */
    float *g, *beta;                     /* [T][Hv] gates */
    float *logits;                       /* [out_rows][V] */
    float *moe_g, *moe_u, *moe_y, *moe_w; /* [T*K][Ie], [T*K][Ie], [T*K][C], [T*K] */
    int32_t *moe_sel;                    /* [T*K] */
    float *xw, *hc_inj;                  /* qwen4exp: [T][S*C] the wide residual, [T][S] inject weights */
    int32_t *isel;                       /* qwen4exp: [T][max(n_sel, n_p)] QSA selections / PLE table rows */
    int32_t *ids, *pos, *kpos, *out_idx; /* [T], [T], [n_ctx] (0..n_ctx-1), [T] */
    void *arena;
    /* host */
    int32_t *h_ids, *h_pos, *h_out_idx;  /* [T] staging of one pass's inputs */
    pass_span *pass;                     /* [max_spans] */
    int T, n_out;                        /* the current pass */
} fwd_work;

typedef struct fwd_ctx {
    exec *x;
    kv_state *kv;
    fwd_work w;
} fwd_ctx;

/* The worst pass of a context (n_batch tokens, n_seq sequences, n_ctx positions) as an executor plan. */
exec_plan fwd_plan(const model *m, int n_batch, int n_seq, int n_ctx, int n_threads);

/* Creates the executor, the sequence state (n_ctx positions, KV cache types) and the arena; everything a
 * context's passes need. */
int fwd_ctx_init(fwd_ctx *c, model *m, int n_batch, int n_seq, const state_plan *sp, int n_threads, err *e);
void fwd_ctx_free(fwd_ctx *c, model *m);

/* Runs the batch. logits (host, may be NULL) receives fwd_n_out rows of n_vocab floats, span by span;
 * hidden (host, may be NULL) the same rows of the final-normed hidden state (n_embd floats; what the MTP
 * block reads). Errors (bad token id, context overflow, duplicate sequence, a batch over the plan) leave
 * the caches untouched; an executor failure during the pass (out of memory, a device error) comes back
 * with its message and resets the batch's sequences, whose recurrent state may have advanced. */
int model_forward(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans, float *logits, float *hidden, err *e);

/* ---- shared by the architecture forwards ---- */
/* Gives the executor the pass's structure (begin_pass), then uploads its token ids, positions and
 * output-row indices. Span s starts at position past0[s] (NULL: its sequence's n_past). */
void fwd_begin(model *m, fwd_ctx *c, const fwd_span *spans, int n_spans, const int *past0);
/* Gathers the output rows of w.x, applies the final norm (none when norm has no data: the trunk left
 * normed rows in w.x), and downloads the LM head's logits (+ output.bias) in pieces of out_rows and
 * the hidden rows. */
void fwd_output(model *m, fwd_ctx *c, const weight *norm, float *logits, float *hidden);
/* The LM head of n rows of normed hidden states hn (device): logits downloaded in pieces, then the hidden
 * rows (after the head, so a recorded pass ends at the logits: docs/architecture.md). */
void fwd_head(model *m, fwd_ctx *c, const float *hn, int n, float *logits, float *hidden);

/* The MTP (multi-token prediction) block of qwen35 models, spec §3.2: for T rows, hidden[t] (host, the
 * trunk's final-normed hidden state at position p) and next[t] (the token at p+1) give the logits of a
 * draft for p+2. Rows take positions mtp_past .. mtp_past+T-1 of the sequence's MTP cache. hidden_out
 * (host, may be NULL) receives the block's normed output, the hidden that chains into a further draft. */
int qwen35_mtp_forward(model *m, fwd_ctx *c, int seq, const float *hidden, const int32_t *next, int T,
                       bool last_only, float *logits, float *hidden_out, err *e);

#endif
