/* forward: one batched forward pass of a model over spans of tokens, each span continuing one sequence.
 *
 * All spans' tokens go through every matmul together; attention, conv and the delta rule run per span
 * over that span's sequence memory. A span's tokens take positions n_past .. n_past+n-1 of its sequence,
 * and n_past advances. Two spans of one batch must belong to different sequences. */
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

/* The bulk flags (backend_ops.matmul) of a batch's T rows: 1 for the rows of spans of >= BULK_MIN_ROWS
 * tokens. out_bulk (may be NULL) gets the flags of the fwd_n_out output rows: a span's output rows are
 * bulk when it outputs all of them and is long enough, never for a single last row. */
void fwd_bulk_rows(const fwd_span *spans, int n_spans, uint8_t *bulk, uint8_t *out_bulk);

/* Runs the batch. logits (host, may be NULL) receives fwd_n_out rows of n_vocab floats, span by span;
 * hidden (host, may be NULL) the same rows of the final-normed hidden state (n_embd floats; what the MTP
 * block reads). Errors (bad token id, context overflow, duplicate sequence) leave the caches untouched. */
int model_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden,
                  err *e);

/* The MTP (multi-token prediction) block of qwen35 models, spec §3.2: for T rows, hidden[t] (host, the
 * trunk's final-normed hidden state at position p) and next[t] (the token at p+1) give the logits of a
 * draft for p+2. Rows take positions mtp_past .. mtp_past+T-1 of the sequence's MTP cache. hidden_out
 * (host, may be NULL) receives the block's normed output, the hidden that chains into a further draft. */
int qwen35_mtp_forward(model *m, kv_state *kv, int seq, const float *hidden, const int32_t *next, int T,
                       float *logits, float *hidden_out, err *e);

/* Architecture forwards (model_forward dispatches). */
int qwen35_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden,
                   err *e);
int llama_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden,
                  err *e);
int gemma3_forward(model *m, kv_state *kv, const fwd_span *spans, int n_spans, float *logits, float *hidden,
                   err *e);

#endif
