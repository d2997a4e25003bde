/* Golden test against an outside reference for the mainstream archs llama, qwen2, qwen3 and gemma3:
 * tiny random models built with HF transformers, converted to GGUF F16 by llama.cpp's own
 * convert_hf_to_gguf.py; reference = transformers' float32 logits at every position of a 64-token prompt
 * and its 32-token greedy continuation, and two other prompts decoded as one batch of two sequences.
 * What each model exercises (llama3 rope_freqs + NORM RoPE, qwen2 biases, qwen3 q/k norms, gemma3's
 * interleaved sliding-window/global layers with a window of 16 < the prompt) and how to regenerate the
 * fixtures: scripts/fixtures/make_mainstream_fixtures.py. Its JSON sidecars also record that llama.cpp
 * loads each file and produces the same greedy streams.
 *
 * Error measure: per position, max_i |ours_i - ref_i| / max_i |ref_i|; the worst position is reported.
 * Tolerances: the exact f32 path 1e-4; the fast path (activations rounded to f16 for the F16 dot
 * product) 1e-2. On both paths the greedy stream (prefill, then one token at a time through the KV
 * cache) must equal the reference token for token.
 * KV cache types: the cases above run with an f32 cache (their tolerances assume f32 keys and values).
 * The fast path also runs with an f16 cache under its 1e-2: f16 keys / values are rounded by 2^-11, the
 * rounding the fast path's F16 dot products already apply to every activation. (A q8_0 cache needs a
 * head dim that is a multiple of 32; these fixtures' is 16: test_qwen35_golden runs it.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llm170.h"
#include "models/refio.h"

typedef struct golden_case {
    const char *arch;
    bool exact;
    float tol;
    int cache; /* enum llm170_cache_type of K and V */
} golden_case;

#define F32 LLM170_CACHE_F32
#define F16 LLM170_CACHE_F16
static const golden_case cases[] = {
    {"llama", true, 1e-4f, F32},   {"llama", false, 1e-2f, F32},  {"qwen2", true, 1e-4f, F32},
    {"qwen2", false, 1e-2f, F32},  {"qwen3", true, 1e-4f, F32},   {"qwen3", false, 1e-2f, F32},
    {"gemma3", true, 1e-4f, F32},  {"gemma3", false, 1e-2f, F32}, {"llama", false, 1e-2f, F16},
    {"qwen2", false, 1e-2f, F16},  {"qwen3", false, 1e-2f, F16},  {"gemma3", false, 1e-2f, F16},
};

static void run_case(const golden_case *gc, const ref_file *r) {
    char path[256];
    snprintf(path, sizeof path, "tests/models/fixtures/%s-f16.gguf", gc->arch);
    llm170_model *m = NULL;
    llm170_model_params mp = {.n_threads = 2, .exact = gc->exact};
    if (llm170_model_load(path, &mp, &m)) {
        CHECKF(0, "%s: %s", path, llm170_last_error());
        return;
    }
    CHECKF(!strcmp(llm170_model_arch(m), gc->arch), "arch %s, expected %s", llm170_model_arch(m), gc->arch);
    int V = (int)r->n_vocab, P = (int)r->n_prompt, G = (int)r->n_gen, N = P + G;
    CHECK(llm170_model_n_vocab(m) == V);
    llm170_context *c = NULL;
    llm170_context_params cp = {.n_seq = 2, .n_ctx = 128, .n_batch = 512, .cache_type_k = gc->cache,
                                .cache_type_v = gc->cache};
    CHECK(llm170_context_new(m, &cp, &c) == 0);

    /* 1. logits at every position of prompt + reference stream, one pass */
    llm170_seq_batch all = {.seq = 0, .n_tokens = N, .tokens = r->tokens, .all_logits = true};
    CHECKF(llm170_decode(c, &all, 1) == 0, "%s", llm170_last_error());
    float worst = 0;
    int worst_at = 0;
    for (int t = 0; t < N; t++) {
        float e = ref_row_err(llm170_logits(c, t), r->logits + (size_t)t * V, V);
        if (!(e <= worst)) worst = e, worst_at = t;
    }
    /* 2. greedy: prefill the prompt, then 32 greedy steps through the cache */
    llm170_seq_reset(c, 0);
    llm170_sampler *s = NULL;
    CHECK(llm170_sampler_new(m, NULL, &s) == 0);
    llm170_seq_batch b = {.seq = 0, .n_tokens = P, .tokens = r->tokens};
    int first_diff = -1;
    int32_t tok = 0;
    float step_worst = 0;
    for (int i = 0; i < G; i++) {
        CHECK(llm170_decode(c, &b, 1) == 0);
        float e = ref_row_err(llm170_logits(c, 0), r->logits + (size_t)(P - 1 + i) * V, V);
        if (!(e <= step_worst)) step_worst = e;
        tok = llm170_sample(s, llm170_logits(c, 0));
        if (tok != r->tokens[P + i] && first_diff < 0) first_diff = i;
        tok = r->tokens[P + i]; /* keep following the reference stream */
        b = (llm170_seq_batch){.seq = 0, .n_tokens = 1, .tokens = &tok};
    }
    /* 3. two other prompts as one batch of two sequences */
    float batch_worst = 0;
    CHECKF(ref_batch_err(c, r, &batch_worst) == 0, "%s: batch records missing or the batch failed", gc->arch);
    printf("%-6s %-5s logits max rel err %.2e (pos %d) | decode steps %.2e | batch %.2e | greedy %s", gc->arch,
           gc->exact ? "exact" : "fast", worst, worst_at, step_worst, batch_worst,
           first_diff < 0 ? "identical" : "DIFFERS");
    if (first_diff >= 0) printf(" at step %d", first_diff);
    printf(" | cache %s | tol %.0e\n", gc->cache == LLM170_CACHE_F32 ? "f32" : gc->cache == LLM170_CACHE_F16 ? "f16" : "q8_0", gc->tol);
    CHECKF(worst <= gc->tol, "%s: logits error %g > %g", gc->arch, worst, gc->tol);
    CHECKF(step_worst <= gc->tol, "%s: decode-step logits error %g > %g", gc->arch, step_worst, gc->tol);
    CHECKF(batch_worst <= gc->tol, "%s: batch error %g > %g", gc->arch, batch_worst, gc->tol);
    CHECKF(first_diff < 0, "%s: greedy stream differs at step %d", gc->arch, first_diff);
    llm170_sampler_free(s);
    llm170_context_free(c);
    llm170_model_free(m);
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "tests/models/fixtures/%s.ref", cases[i].arch);
        ref_file r;
        if (ref_read(&r, path)) {
            CHECKF(0, "cannot read %s (regenerate with scripts/fixtures/make_mainstream_fixtures.py)", path);
            continue;
        }
        CHECKF(!strcmp(r.arch, cases[i].arch), "%s holds arch %s", path, r.arch);
        run_case(&cases[i], &r);
        ref_free(&r);
    }
    return check_report("test_mainstream_golden");
}
