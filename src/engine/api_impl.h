/* api_impl (internal to src/engine/): the structs behind include/llm170.h's handles, shared by api.c (the
 * API) and spec.c (speculative decoding, which drives a context's sequence and its model's MTP block). */
#ifndef LLM170_ENGINE_API_IMPL_H
#define LLM170_ENGINE_API_IMPL_H

#include "engine/forward.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"
#include "llm170.h"

struct llm170_model {
    backend *be;
    int n_threads;        /* per context executor */
    model *m;
    tokenizer *tok;       /* NULL if the file has no (supported) tokenizer; tok_err says why */
    char tok_err[1024];
};

struct llm170_detok {
    tok_stream *s;
};

struct llm170_context {
    llm170_model *model;
    llm170_context_params p;
    fwd_ctx fc;         /* executor, sequence state, activation arena */
    kv_state *kv;       /* == fc.kv */
    fwd_span *spans, *chunk; /* [n_seq]: a decode call's batch and one pass of it */
    int *off;           /* [n_seq] */
    float *logits;      /* n_out rows of n_vocab */
    float *hidden;      /* n_out rows of n_embd */
    int n_out, cap_out; /* rows held / allocated */
    bool out_pinned;    /* logits and hidden from backend_host_alloc (else malloc): api.c reserve_out */
};

struct llm170_sampler {
    sampler *s;
};

/* Copies e into the thread's last error (llm170_last_error) and returns its code. */
int api_fail(const err *e);

#endif
