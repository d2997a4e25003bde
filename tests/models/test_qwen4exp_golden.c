/* Golden test of qwen4exp against transformers: tiny random Qwen4ExpForCausalLM models (hyper-connections
 * S = 2 or 3, QSA with an indexer budget of 2-4 blocks of 4 against a 128-token stream, PLE with EOS resets
 * inside the prompt, 2-16 experts) written as F32 GGUFs with gguf-py's qwen4exp names by
 * scripts/fixtures/make_qwen4exp_fixtures.py; reference = transformers' float32 logits at every position of
 * a 96-token prompt and its 32-token greedy continuation, and of two other prompts (tests/models/README.md).
 *
 * Per config, on the exact path (f32 activations) and the fast path:
 *  1. logits of prompt + stream in one pass: max_i |ours - ref| / max_i |ref| per row <= 1e-4;
 *  2. greedy: prefill the prompt, then decode one token at a time (QSA's decode path: one query, block keys
 *     finalised as blocks complete) following the reference stream: our argmax equals it at every step and
 *     each step's logits are within 1e-4;
 *  3. chunked prefill (chunks of 1, 7, 16 and 64 tokens) against the reference, within 1e-4;
 *  4. the two other prompts decoded as one batch of two sequences, within 1e-4 (batch = alone);
 *  5. state save / restore: a checkpoint after 50 tokens, 30 more tokens, restore, the same 30 again: the
 *     logits equal the first run's (the block-key, indexer and PLE states survive the cut). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"
#include "models/refio.h"

#define TOL 1e-4f

static const char *configs[] = {"qwen4exp-dense", "qwen4exp-moe", "qwen4exp-long"};

static llm170_context *new_ctx(llm170_model *m, int n_batch, int n_seq) {
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = n_seq, .n_ctx = 160, .n_batch = n_batch, .cache_type_k = LLM170_CACHE_F32,
                                .cache_type_v = LLM170_CACHE_F32};
    CHECKF(llm170_context_new(m, &cp, &c) == 0, "context: %s", llm170_last_error());
    return c;
}

/* worst row error of rows [0, n) of c against ref rows [r0, r0 + n) */
static float rows_err(llm170_context *c, int n, const float *ref, int V, float worst) {
    for (int t = 0; t < n; t++) {
        float e = ref_row_err(llm170_logits(c, t), ref + (size_t)t * V, V);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static float chunked(llm170_model *m, const ref_file *r, int chunk) {
    const int N = (int)(r->n_prompt + r->n_gen), V = (int)r->n_vocab;
    llm170_context *c = new_ctx(m, chunk, 1);
    float worst = 0;
    for (int t0 = 0; c && t0 < N; t0 += chunk) {
        int n = N - t0 < chunk ? N - t0 : chunk;
        llm170_seq_batch b = {.seq = 0, .n_tokens = n, .tokens = r->tokens + t0, .all_logits = true};
        if (llm170_decode(c, &b, 1)) {
            CHECKF(0, "chunk %d at %d: %s", chunk, t0, llm170_last_error());
            break;
        }
        worst = rows_err(c, n, r->logits + (size_t)t0 * V, V, worst);
    }
    llm170_context_free(c);
    return worst;
}

static void run(const char *name, const ref_file *r, bool exact) {
    char path[256];
    snprintf(path, sizeof path, "tests/models/fixtures/%s-f32.gguf", name);
    llm170_model *m = NULL;
    llm170_model_params mp = {.n_threads = 2, .exact = exact};
    if (llm170_model_load(path, &mp, &m)) {
        CHECKF(0, "%s: %s", path, llm170_last_error());
        return;
    }
    const int V = (int)r->n_vocab, P = (int)r->n_prompt, G = (int)r->n_gen, N = P + G;
    CHECK(llm170_model_n_vocab(m) == V);
    /* 1. one pass */
    llm170_context *c = new_ctx(m, 512, 2);
    if (!c) {
        llm170_model_free(m);
        return;
    }
    llm170_seq_batch all = {.seq = 0, .n_tokens = N, .tokens = r->tokens, .all_logits = true};
    CHECK(llm170_decode(c, &all, 1) == 0);
    float pass = rows_err(c, N, r->logits, V, 0);
    /* 2. greedy decode following the reference stream */
    llm170_seq_reset(c, 0);
    llm170_seq_batch b = {.seq = 0, .n_tokens = P, .tokens = r->tokens};
    int first_diff = -1;
    float dec = 0;
    for (int i = 0; i < G; i++) {
        CHECK(llm170_decode(c, &b, 1) == 0);
        const float *lg = llm170_logits(c, 0);
        int best = 0;
        for (int v = 1; v < V; v++) best = lg[v] > lg[best] ? v : best;
        if (best != r->tokens[P + i] && first_diff < 0) first_diff = i;
        float e = ref_row_err(lg, r->logits + (size_t)(P - 1 + i) * V, V);
        if (!(e <= dec)) dec = e;
        b = (llm170_seq_batch){.seq = 0, .n_tokens = 1, .tokens = r->tokens + P + i};
    }
    /* 4. two prompts as one batch */
    float batch = 0;
    CHECKF(ref_batch_err(c, r, &batch) == 0, "%s: batch records missing or the batch failed", name);
    /* 5. checkpoint after 50 tokens, restore, replay 30 */
    llm170_seq_reset(c, 0);
    size_t sz = llm170_seq_state_size(c);
    void *ck = malloc(sz);
    float *first = malloc(sizeof(float) * (size_t)V * 30);
    b = (llm170_seq_batch){.seq = 0, .n_tokens = 50, .tokens = r->tokens};
    CHECK(llm170_decode(c, &b, 1) == 0);
    CHECK(llm170_seq_save_state(c, 0, ck, sz) == 0);
    b = (llm170_seq_batch){.seq = 0, .n_tokens = 30, .tokens = r->tokens + 50, .all_logits = true};
    CHECK(llm170_decode(c, &b, 1) == 0);
    for (int t = 0; t < 30; t++) memcpy(first + (size_t)t * V, llm170_logits(c, t), sizeof(float) * V);
    CHECKF(llm170_seq_restore_state(c, 0, ck, sz) == 0, "restore: %s", llm170_last_error());
    CHECK(llm170_seq_len(c, 0) == 50);
    CHECK(llm170_decode(c, &b, 1) == 0);
    float restore = rows_err(c, 30, first, V, 0);
    free(ck), free(first);
    llm170_context_free(c);
    /* 3. chunked prefill */
    float chunk_worst = 0;
    const int chunks[] = {1, 7, 16, 64};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        float e = chunked(m, r, chunks[i]);
        if (!(e <= chunk_worst)) chunk_worst = e;
    }
    printf("%-15s %-5s pass %.2e | decode %.2e, greedy %s | chunks 1/7/16/64 %.2e | batch %.2e | restore %.2e\n",
           name, exact ? "exact" : "fast", pass, dec, first_diff < 0 ? "identical" : "DIFFERS", chunk_worst, batch,
           restore);
    CHECKF(pass <= TOL, "%s: one-pass logits error %g > %g", name, pass, TOL);
    CHECKF(dec <= TOL, "%s: decode logits error %g > %g", name, dec, TOL);
    CHECKF(first_diff < 0, "%s: greedy stream differs at step %d", name, first_diff);
    CHECKF(chunk_worst <= TOL, "%s: chunked prefill error %g > %g", name, chunk_worst, TOL);
    CHECKF(batch <= TOL, "%s: batch error %g > %g", name, batch, TOL);
    CHECKF(restore <= 1e-6f, "%s: logits after a state restore differ by %g", name, restore);
    llm170_model_free(m);
}

int main(void) {
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/models/fixtures/%s.ref", configs[i]);
        ref_file r;
        if (ref_read(&r, path)) {
            CHECKF(0, "cannot read %s", path);
            continue;
        }
        run(configs[i], &r, true);
        run(configs[i], &r, false);
        ref_free(&r);
    }
    return check_report("test_qwen4exp_golden");
}
