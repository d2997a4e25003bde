/* sampler: turns a row of logits into the next token.
 *
 * The chain, in llama.cpp's order: repetition / presence / frequency penalties over the last
 * penalty_last_n accepted tokens -> top-k -> top-p -> min-p -> temperature -> a draw from the seeded
 * generator. temperature <= 0 means greedy (argmax of the penalised logits; ties to the lowest id).
 * Candidates are ordered by logit, ties to the lowest id, but never the whole vocabulary when it need not
 * be: only as long a sorted prefix as the filters and the draw reach is selected (a heap pass for the top
 * j, doubled when more is needed), so top-k 40 costs a scan, not a sort of 150k-260k entries. The
 * distribution and the token chosen for a given draw are those of a full sort (tests/engine/
 * test_sampler_select.c holds the full-sort implementation and checks this on random logits).
 * Ownership: a sampler owns its scratch and history; it never keeps the logits pointer. */
#ifndef LLM170_ENGINE_SAMPLER_H
#define LLM170_ENGINE_SAMPLER_H

#include <stdint.h>

#include "base/err.h"

typedef struct sampler_params {
    float temperature;       /* <= 0: greedy */
    int top_k;               /* <= 0: off */
    float top_p;             /* >= 1: off */
    float min_p;             /* <= 0: off */
    float repeat_penalty;    /* 1: off; > 1 divides positive / multiplies negative logits of seen tokens */
    float presence_penalty;  /* 0: off; subtracted once from each seen token */
    float frequency_penalty; /* 0: off; subtracted per occurrence */
    int penalty_last_n;      /* how many recent tokens the penalties look at */
    uint64_t seed;
} sampler_params;

/* Defaults: greedy, no filters, no penalties, last 64 tokens, seed 0. */
sampler_params sampler_defaults(void);

typedef struct sampler sampler;

/* Validates p (names the bad field) and allocates. */
int sampler_new(sampler **out, const sampler_params *p, int n_vocab, err *e);
void sampler_free(sampler *s);

/* Records a token of the sequence (prompt or generated) for the penalties. */
void sampler_accept(sampler *s, int32_t token);

/* Picks the next token from logits[n_vocab] (not modified); at temperature > 0 one draw of the seeded
 * generator is used. */
int32_t sampler_sample(sampler *s, const float *logits);

/* The same choice with the draw given: u uniform in [0, 1) picks the first candidate (in the order above)
 * whose cumulative probability exceeds u. Consumes no random numbers (for tests against a reference). */
int32_t sampler_pick(sampler *s, const float *logits, double u);

#endif
