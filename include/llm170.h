/* llm170.h: the public C API of llm170 — load a GGUF model, create a context with N sequences, decode
 * batches of tokens, read logits, sample.
 *
 * Ownership: every object returned by a *_new / *_load function is owned by the caller and released with
 * its *_free function. A context must be freed before its model; a model owns its file mapping and its
 * weights; pointers returned by accessors (logits, names) stay valid until the next call that mutates
 * their owner (llm170_decode for logits) or until the owner is freed.
 * Errors: functions return 0 on success or a negative code; llm170_last_error() then gives a message for
 * the calling thread (what was expected, what was found, where).
 * Threads: one context is used by one thread at a time; distinct contexts of one model may run in
 * parallel (each context has its own executor: threads or stream, and scratch). */
#ifndef LLM170_H
#define LLM170_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* LLM170_API marks the functions of this API: the only symbols a shared build of the library
 * (libllm170.so, compiled with -fvisibility=hidden) exports. Define it before including this header to
 * override (e.g. empty). */
#ifndef LLM170_API
#if defined(__GNUC__) || defined(__clang__)
#define LLM170_API __attribute__((visibility("default")))
#else
#define LLM170_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct llm170_model llm170_model;
typedef struct llm170_context llm170_context;
typedef struct llm170_sampler llm170_sampler;

/* The message of the last failed call on this thread ("" if none). */
LLM170_API const char *llm170_last_error(void);

typedef struct llm170_model_params {
    int n_threads;   /* CPU threads of each context (>= 1) */
    bool exact;      /* f32 reference matmuls instead of quantized dot products (slow; for checks) */
    const char *device; /* "cpu", "cuda" or "cuda:N" (":nograph" appended: no CUDA graphs, every op its own
                           launch); NULL = "cpu". Unknown or unavailable: an error listing llm170_devices() */
} llm170_model_params;

LLM170_API llm170_model_params llm170_model_default_params(void);
/* The devices this build has, comma-separated ("cpu"). */
LLM170_API const char *llm170_devices(void);

LLM170_API int llm170_model_load(const char *path, const llm170_model_params *params, llm170_model **out);
LLM170_API void llm170_model_free(llm170_model *m);

LLM170_API int llm170_model_n_vocab(const llm170_model *m);
LLM170_API int llm170_model_n_embd(const llm170_model *m);
LLM170_API int llm170_model_n_ctx_train(const llm170_model *m);
LLM170_API const char *llm170_model_arch(const llm170_model *m);
/* Bytes of all tensor data, and the number of parameters (elements of all tensors). */
LLM170_API uint64_t llm170_model_size(const llm170_model *m);
LLM170_API uint64_t llm170_model_n_params(const llm170_model *m);
/* A one-line description like llama.cpp's: "qwen35 0.8B Q4_K - Medium". */
LLM170_API void llm170_model_desc(const llm170_model *m, char *buf, int cap);
/* End-of-generation token ids from the file's metadata (eos, eot, ...); returns how many were written
 * to ids (at most cap). */
LLM170_API int llm170_model_eog_tokens(const llm170_model *m, int32_t *ids, int cap);

/* ---- text: the model file's own tokenizer and chat template ----
 * These fail with a clear error if the file has no tokenizer (or template) metadata. Arrays and strings
 * returned through pointer arguments are malloc'd; free them with free(). */

/* Encodes len bytes of UTF-8 text (invalid bytes become U+FFFD). add_special: BOS/EOS as the vocabulary
 * says; parse_special: control tokens written in the text ("<|im_start|>") become their ids. */
LLM170_API int llm170_tokenize(const llm170_model *m, const char *text, size_t len, bool add_special,
                               bool parse_special, int32_t **ids, size_t *n_ids);
/* Decodes ids to text; special: include the text of control tokens. */
LLM170_API int llm170_detokenize(const llm170_model *m, const int32_t *ids, size_t n_ids, bool special,
                                 char **text, size_t *len);
/* Whether id ends a generation (eos, eot, turn-end tokens). */
LLM170_API bool llm170_token_is_eog(const llm170_model *m, int32_t id);

/* Streaming detokenizer: push one generated token at a time; each push yields the bytes that became whole
 * UTF-8 characters (a character split across tokens is held until complete). *out stays valid until the
 * next call on the same stream. A stream must be freed before its model. */
typedef struct llm170_detok llm170_detok;
LLM170_API int llm170_detok_new(const llm170_model *m, bool special, llm170_detok **out);
LLM170_API void llm170_detok_free(llm170_detok *d);
LLM170_API int llm170_detok_push(llm170_detok *d, int32_t id, const char **out, size_t *len);
/* Ends the stream: an incomplete held character comes out as U+FFFD. */
LLM170_API int llm170_detok_flush(llm170_detok *d, const char **out, size_t *len);

/* Renders a conversation with the model's chat template (tokenizer.chat_template), as transformers'
 * apply_chat_template does. messages_json: an OpenAI-style messages array; tools_json: an array or NULL;
 * enable_thinking: -1 = the template's default, 0 / 1. template_override: NULL, or a template text, or
 * the name of a built-in ("chatml", "llama3", "gemma") used when the file has none. */
LLM170_API int llm170_chat_render(const llm170_model *m, const char *messages_json, const char *tools_json,
                                  bool add_generation_prompt, int enable_thinking,
                                  const char *template_override, char **out, size_t *len);

/* Element type of the KV cache (llama.cpp's --cache-type-k / -v names: "f32", "f16", "bf16", "q8_0"). */
enum llm170_cache_type {
    LLM170_CACHE_DEFAULT = 0, /* the device's: f32 on the CPU (faster there), f16 on GPUs */
    LLM170_CACHE_F32,
    LLM170_CACHE_F16,
    LLM170_CACHE_BF16,
    LLM170_CACHE_Q8_0,
};
/* The type named `name`, or -1 (the error lists the names). */
LLM170_API int llm170_cache_type_from_name(const char *name);

typedef struct llm170_context_params {
    int n_seq;    /* parallel sequences (>= 1) */
    int n_ctx;    /* tokens per sequence (>= 1) */
    int n_batch;  /* most tokens per forward pass; longer batches are split (chunked prefill) */
    int cache_type_k, cache_type_v; /* enum llm170_cache_type of the K and V caches; 0 = the device's default */
} llm170_context_params;

LLM170_API llm170_context_params llm170_context_default_params(void);

LLM170_API int llm170_context_new(llm170_model *m, const llm170_context_params *params, llm170_context **out);
LLM170_API void llm170_context_free(llm170_context *c);

/* One sequence's share of a batch: n_tokens tokens appended to sequence `seq`. */
typedef struct llm170_seq_batch {
    int seq;
    int n_tokens;
    const int32_t *tokens;
    bool all_logits;  /* logits for every token (else only for the last) */
} llm170_seq_batch;

/* Decodes a batch (each sequence at most once). On success the logits of the batch are readable with
 * llm170_logits until the next decode; on failure no sequence has advanced. */
LLM170_API int llm170_decode(llm170_context *c, const llm170_seq_batch *seqs, int n_seqs);

/* Row i of the last decode's logits (rows in batch order: for each sequence, n_tokens rows if
 * all_logits else one); NULL if i is out of range. n_vocab floats. */
LLM170_API const float *llm170_logits(const llm170_context *c, int i);

/* Row i of the last decode's final-normed hidden states (n_embd floats), as the MTP block reads them. */
LLM170_API const float *llm170_hidden(const llm170_context *c, int i);

/* The model's MTP (multi-token prediction) block, for speculative decoding: for n rows, hidden[t]
 * (n_embd floats: the final-normed hidden state at some position p, from llm170_hidden) and next[t] (the
 * token at p+1) give, in logits[t] (n_vocab floats, caller-allocated), the block's logits for p+2.
 * Rows append to the sequence's MTP cache in order. Fails if the model has no MTP block. */
LLM170_API int llm170_mtp_decode(llm170_context *c, int seq, const float *hidden, const int32_t *next, int n,
                                 float *logits);

/* Tokens in sequence seq so far (the next token's position). */
LLM170_API int llm170_seq_len(const llm170_context *c, int seq);
/* Forgets a sequence (its KV cache and recurrent state). */
LLM170_API void llm170_seq_reset(llm170_context *c, int seq);

/* Prefix reuse. llm170_seq_truncate keeps the first n tokens of a sequence (0 <= n <= its length). Models
 * with recurrent (GDN) blocks cannot roll their state back, so for them only n == length (a no-op) or
 * n == 0 succeed; they reuse a prefix through a state checkpoint instead:
 * llm170_seq_state_size gives the bytes of one checkpoint; llm170_seq_save_state writes the sequence's
 * recurrent state and length into buf (caller-owned, at least that many bytes); llm170_seq_restore_state
 * puts them back and cuts the sequence to the saved length, which must not exceed its current length.
 * The caller promises the sequence still holds the tokens it held when saved (it was not reset since):
 * the KV cache below the saved length is then still exact. */
LLM170_API int llm170_seq_truncate(llm170_context *c, int seq, int n);
LLM170_API size_t llm170_seq_state_size(const llm170_context *c);
LLM170_API int llm170_seq_save_state(const llm170_context *c, int seq, void *buf, size_t cap);
LLM170_API int llm170_seq_restore_state(llm170_context *c, int seq, const void *buf, size_t size);

typedef struct llm170_sampler_params {
    float temperature;       /* <= 0: greedy */
    int top_k;               /* <= 0: off */
    float top_p;             /* 1: off */
    float min_p;             /* 0: off */
    float repeat_penalty;    /* 1: off */
    float presence_penalty;  /* 0: off */
    float frequency_penalty; /* 0: off */
    int penalty_last_n;
    uint64_t seed;
} llm170_sampler_params;

LLM170_API llm170_sampler_params llm170_sampler_default_params(void); /* greedy */

LLM170_API int llm170_sampler_new(const llm170_model *m, const llm170_sampler_params *p,
                                 llm170_sampler **out);
LLM170_API void llm170_sampler_free(llm170_sampler *s);
/* Records a token (prompt or generated) for the penalties. */
LLM170_API void llm170_sampler_accept(llm170_sampler *s, int32_t token);
/* Picks a token from a row of logits. */
LLM170_API int32_t llm170_sample(llm170_sampler *s, const float *logits);

/* ---- speculative decoding ----
 * A drafter proposes up to k tokens after the sequence; the target verifies them in one forward pass of
 * k+1 tokens (logits for every position); the sampler then picks each position's token from the
 * target's own logits, and drafts are kept while they agree with what it picked (at temperature 0 the
 * argmax; above, its draw: with deterministic drafts this is Leviathan et al.'s acceptance rule, and the
 * sampler's stream is the one plain decoding gives for the same seed). So the output equals plain
 * decoding token for token; the caches (and recurrent state) are cut back to the kept tokens.
 * k follows the running acceptance rate against the measured cost of drafting and verifying, and
 * speculation switches itself off (re-probed now and then) where it does not pay. */
enum llm170_spec_type {
    LLM170_SPEC_NONE = 0, /* plain decoding through the same calls */
    LLM170_SPEC_NGRAM,    /* the continuation of an earlier occurrence of the last tokens (prompt + output) */
    LLM170_SPEC_DRAFT,    /* a smaller model of the same vocabulary (draft_model), greedy */
    LLM170_SPEC_MTP,      /* the target's own MTP block (qwen35), chained */
};
/* The type named "none", "ngram", "draft" or "mtp", or -1 (the error lists the names). */
LLM170_API int llm170_spec_type_from_name(const char *name);

typedef struct llm170_spec_params {
    int type;               /* enum llm170_spec_type */
    int draft_max;          /* most draft tokens per round (1..32) */
    int draft_min;          /* fewest draft tokens worth verifying; a shorter draft is dropped (>= 1) */
    int ngram_min, ngram_max; /* n-gram drafter: lengths of the matched suffix, longest tried first */
    bool adaptive;          /* k from acceptance and measured costs, off where it does not pay; false: always
                               draft_max (tests, measurements) */
    llm170_model *draft_model; /* LLM170_SPEC_DRAFT: not owned; same vocabulary as the target */
} llm170_spec_params;

LLM170_API llm170_spec_params llm170_spec_default_params(void);

typedef struct llm170_spec llm170_spec;
/* A speculative generator on sequence seq of c (c, and the draft model, must outlive it). Fails with a
 * clear message if the drafter cannot serve this model (no MTP block, a draft model of another
 * vocabulary). */
LLM170_API int llm170_spec_new(llm170_context *c, int seq, const llm170_spec_params *p, llm170_spec **out);
LLM170_API void llm170_spec_free(llm170_spec *s);
/* Starts a generation: decodes the prompt (n >= 1 tokens) into the sequence, reusing the longest prefix
 * of it that the sequence still holds from this generator's previous generation (a chat's earlier turns;
 * not with LLM170_SPEC_MTP, whose drafter needs every position's hidden state; not on recurrent models,
 * which restart). The caller must not have changed the sequence since. The caller records the prompt in
 * its sampler (llm170_sampler_accept) for penalties, as for plain decoding. */
LLM170_API int llm170_spec_prompt(llm170_spec *s, const int32_t *prompt, int n);
/* Generates the next 1..cap tokens into out and returns how many (negative on error). Each is recorded
 * in smp (llm170_sampler_accept) by this call. The tokens of one call end at the first end-of-generation
 * token. The last returned token is not yet in the sequence's cache (as after plain sampling). */
LLM170_API int llm170_spec_next(llm170_spec *s, llm170_sampler *smp, int32_t *out, int cap);

typedef struct llm170_spec_stats {
    int64_t tokens;        /* generated */
    int64_t rounds;        /* verification passes (k >= 1) */
    int64_t plain_steps;   /* one-token passes */
    int64_t drafted;       /* draft tokens verified */
    int64_t accepted;      /* of them, kept */
    double t_draft, t_verify, t_plain, t_rollback; /* seconds in each part */
} llm170_spec_stats;
LLM170_API void llm170_spec_get_stats(const llm170_spec *s, llm170_spec_stats *out);

/* ---- speculation inside the caller's own batches ----
 * llm170_spec_next makes its own passes over one sequence. A caller that decodes many sequences in one
 * llm170_decode (llm170 serve: continuous batching) and picks tokens its own way (constraints, stop
 * strings) drives one generator per sequence through the same drafters, acceptance rule, rollback and
 * adaptive k, one round per pass of its own:
 *   1. llm170_spec_begin(s, prompt, n): the generation's prompt. The sequence holds fewer than n of its
 *      tokens (the caller's prefix reuse); the caller decodes the rest but the last (its prefill), which is
 *      the first round's pending token.
 *   2. n_span = llm170_spec_propose(s, kmax, costs, span, &n_draft): the tokens to decode next into the
 *      sequence: those it owes (the pending token; after a rollback on a recurrent model also the kept
 *      tokens, which then come without drafts), then n_draft <= kmax drafts. span holds LLM170_SPEC_MAX_SPAN
 *      tokens. costs: NULL (k from the pass times reported to commit, as llm170_spec_next measures its own),
 *      or costs[0..min(kmax, 32)]: what a round with k drafts costs the caller, costs[0] that of a plain
 *      token (a batching caller: its step's time per token, plus what k more rows add to the step); the
 *      generator adds its drafting and rollback times. On a recurrent model it checkpoints the state:
 *      decode the span next, nothing else into this sequence.
 *   3. the caller decodes the span (logits for every row when n_draft > 0) and picks x_0 from the row of
 *      span[n_span - n_draft - 1] (the pending token), then x_(j+1) from the next row while x_j equals
 *      draft j (span[n_span - n_draft + j]); it may stop earlier (its generation ended).
 *   4. llm170_spec_commit(s, picked, n_picked, seconds): the picked tokens in order (1 <= n_picked <=
 *      n_draft + 1, all but the last equal to the drafts; the last is the new pending token, whether it
 *      matched or not) and the pass's wall time (<= 0: not measured, e.g. a pass that also carried prompt
 *      pieces). The sequence is cut back to the kept tokens (recurrent: to the checkpoint, the kept tokens
 *      owed to the next span). Emitting exactly the picked tokens gives what plain decoding gives.
 * Not with LLM170_SPEC_MTP (its drafter needs every position's hidden state). */
#define LLM170_SPEC_MAX_SPAN 33
LLM170_API int llm170_spec_begin(llm170_spec *s, const int32_t *prompt, int n);
LLM170_API int llm170_spec_propose(llm170_spec *s, int kmax, const double *costs, int32_t *span, int *n_draft);
LLM170_API int llm170_spec_commit(llm170_spec *s, const int32_t *picked, int n_picked, double seconds);

#ifdef __cplusplus
}
#endif

#endif
