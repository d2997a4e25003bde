/* spec (internal to src/engine/): the drafters of speculative decoding behind llm170_spec (spec.c runs the
 * loop: draft, verify, accept, roll back; spec_draft.c holds the drafters).
 *
 * A drafter sees the sequence's history hist[0..n): every token of the sequence, the last of which (the
 * pending token) the target has sampled but not yet decoded. It proposes tokens for positions n, n+1, ...
 * After each pass of the target it learns which history is final (spec_drafter.kept) and, if it asked
 * for them (wants_hidden), the target's final-normed hidden rows of the kept positions (observe).
 * Ownership: a drafter is owned by its llm170_spec; it does not own the target context or the draft
 * model. */
#ifndef LLM170_ENGINE_SPEC_H
#define LLM170_ENGINE_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "llm170.h"

typedef struct spec_drafter spec_drafter;
struct spec_drafter {
    const char *name;
    bool wants_hidden; /* the loop decodes with hidden rows for every position and calls observe */
    /* Up to k tokens after hist[0..n) into out; returns how many (0: no proposal) or a negative error. */
    int (*draft)(spec_drafter *d, const int32_t *hist, int n, int k, int32_t *out, err *e);
    /* Positions >= n_valid of the history are about to change (rejected drafts, a new prompt). */
    void (*kept)(spec_drafter *d, int n_valid);
    /* Hidden rows of the target for positions pos .. pos+n-1 (n_embd floats each, kept tokens only). */
    int (*observe)(spec_drafter *d, int pos, const float *hidden, int n, err *e);
    void (*destroy)(spec_drafter *d);
    /* NULL or: the prompt hist[0..n) was decoded (a draft model decodes it too, as part of the prompt) */
    int (*prefill)(spec_drafter *d, const int32_t *hist, int n, err *e);
};

/* n-gram lookup over the history: the continuation of the latest earlier occurrence of its last
 * ngram_max .. ngram_min tokens (longest first). */
int spec_ngram_new(int ngram_min, int ngram_max, spec_drafter **out, err *e);
/* A draft model's greedy continuation, in its own context of n_ctx positions (one sequence). Fails if the
 * vocabularies differ (size or any token's text) or the draft model has recurrent state. */
int spec_draft_model_new(llm170_model *draft, const llm170_model *target, int n_ctx, int n_batch,
                         spec_drafter **out, err *e);
/* The target's MTP block on sequence seq of c, chained for k tokens (each chained row reads the block's
 * own output as the next hidden). Fails if the model has no MTP block. */
int spec_mtp_new(llm170_context *c, int seq, spec_drafter **out, err *e);

/* Replaces the drafter of s (taking ownership of d; the old one is destroyed): tests drive the loop with
 * drafts of their choosing. */
void spec_set_drafter(llm170_spec *s, spec_drafter *d);

#endif
