/* sampler: turns a row of logits into the next token.
 *
 * The chain, in llama.cpp's order: repetition / presence / frequency penalties over the last
 * penalty_last_n accepted tokens -> top-k -> top-p -> min-p -> temperature -> a draw from the seeded
 * generator. temperature <= 0 means greedy (argmax of the penalised logits; ties to the lowest id).
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

/* Picks the next token from logits[n_vocab] (not modified). */
int32_t sampler_sample(sampler *s, const float *logits);

#endif
