/* srv: `llm170 serve`, an HTTP server with OpenAI- and Anthropic-compatible endpoints over the public API
 * (include/llm170.h). http.c owns the listener; routes_*.c turn requests into scheduler jobs (sched.c)
 * and jobs' output into responses. srv_serve runs until SIGINT or SIGTERM. */
#ifndef LLM170_SERVER_SERVER_H
#define LLM170_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "llm170.h"

typedef struct srv_config {
    const char *model_path;
    const char *alias;      /* model id reported and accepted; NULL: the file's base name */
    const char *host;       /* "127.0.0.1" unless told otherwise */
    int port;               /* 0: any free port (printed on stderr) */
    int n_ctx;              /* tokens per slot */
    int n_slots;            /* --parallel */
    int n_batch;            /* per-step token budget */
    int prefill_chunk;      /* most prompt tokens a step takes while other slots generate (0: n_batch) */
    const char *device;     /* llm170_model_params.device: "cpu" (NULL), "cuda", "cuda:N" */
    int n_threads;
    int queue_cap;
    size_t max_body;        /* bytes */
    const char *api_key;    /* NULL: no auth */
    const char *chat_template; /* NULL: the file's own; else a built-in's name or a template's text */
    int timeout_s;          /* a request's headers, and then its body, must arrive within this; idle
                               kept-alive connections are closed after it */
    int max_conns;          /* connections served at once (and connections in their header prelude) */
    int cache_type_k, cache_type_v; /* enum llm170_cache_type (-ctk / -ctv); 0: the device's default */
    bool strict_model;      /* refuse (404) a 'model' other than the served one; else any name is taken */
    llm170_spec_params spec; /* speculative decoding per slot (--spec ngram|draft; the draft model loaded by
                                the caller, which frees it after srv_serve); type LLM170_SPEC_NONE: none */
} srv_config;

/* Returns the process exit status (0 after a clean shutdown, 1 if the server could not start). */
int srv_serve(const srv_config *cfg);

#endif
